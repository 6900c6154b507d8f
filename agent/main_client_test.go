package agent

import (
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestRequestsGoOnTheKubeletsClients: a kubelet registers, publishes its CSINode and writes its
// Events on its main and event clients, which have no timeout, and renews its Lease and reports its
// status on its heartbeat client, which has one (pkg/kubelet/kubelet_node_status.go,
// cmd/kubelet/app/server.go).
func TestRequestsGoOnTheKubeletsClients(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Footprint = FootprintKubelet })
	// The main client reaches the same fake apiserver, and says which requests it carried.
	main := fake.NewClientset()
	main.Fake.ReactionChain = h.client.Fake.ReactionChain
	var mu sync.Mutex
	onMain := map[string]int{}
	main.PrependReactor("*", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		res := action.GetResource().Resource
		if sub := action.GetSubresource(); sub != "" {
			res += "/" + sub
		}
		onMain[action.GetVerb()+" "+res]++
		return false, nil, nil
	})
	a := New(h.cfg, Clients{Core: h.client.CoreV1(), Coordination: h.client.CoordinationV1(), Main: main.CoreV1(),
		Storage: main.StorageV1()}, "fakelet-00007", 7, "")
	a.Start(h.ctx)
	h.advance(time.Minute)

	all := map[string]int{}
	for _, c := range h.take() {
		all[c.verb+" "+c.res]++
	}
	mu.Lock()
	defer mu.Unlock()
	for _, req := range []string{"create nodes", "create events", "get csinodes", "create csinodes"} {
		if onMain[req] == 0 || onMain[req] != all[req] {
			t.Errorf("%s: %d on the main client of %d, want all of them and at least one", req, onMain[req], all[req])
		}
	}
	if onMain["get nodes"] == 0 {
		t.Errorf("the CSINode's GET of its Node did not go on the main client")
	}
	for _, req := range []string{"get leases", "create leases", "update leases", "patch nodes/status"} {
		if all[req] == 0 || onMain[req] != 0 {
			t.Errorf("%s: %d on the main client of %d, want none of them and at least one in all", req, onMain[req], all[req])
		}
	}
	if t.Failed() {
		t.Logf("on the main client: %v\nall: %v", onMain, all)
	}
}
