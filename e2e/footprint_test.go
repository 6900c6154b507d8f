package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
)

// kubeletWatches are the resources every kubelet watches (agent/watches.go).
var kubeletWatches = []string{"nodes", "services", "pods", "runtimeclasses", "csidrivers", "podcertificaterequests"}

// TestKubeletFootprintHoldsWatches: in the kubelet footprint every node holds a watch of
// each of a kubelet's reflectors at the apiserver, opened as the node (the Node authorizer lets a
// kubelet watch only with its selectors, so a watch without them would be refused), and creates its
// CSINode, owned by its Node, and its startup Events; in the heartbeat footprint a fleet holds none.
// With pods, a node watches the kube-root-ca.crt their service account token volumes read, once per
// node whatever its pods, and the watch closes with the node's kubelet; and it requests each pod's
// token.
func TestKubeletFootprintHoldsWatches(t *testing.T) {
	cp := controlPlane(t)
	const nodes = 5
	before := longrunningWatches(t, cp)
	rf := startFleet(t, fleet.Config{Nodes: nodes, Fleet: "footprint", NamePrefix: "footprint", RegisterQPS: 50,
		Footprint: agent.FootprintKubelet})
	eventually(t, 60*time.Second, "every node holding its watches", func() (bool, error) {
		now := longrunningWatches(t, cp)
		for _, r := range kubeletWatches {
			if now[r]-before[r] < nodes {
				return false, nil
			}
		}
		return true, nil
	})
	// The startup requests as the node: the Node authorizer and NodeRestriction let a kubelet create
	// its own CSINode and Events.
	c := admin(t, cp)
	eventually(t, 30*time.Second, "each node's CSINode and startup Events", func() (bool, error) {
		for i := range nodes {
			name := fleetname.NodeName("footprint", i)
			n, err := c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			cn, err := c.StorageV1().CSINodes().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			if len(cn.OwnerReferences) != 1 || cn.OwnerReferences[0].UID != n.UID {
				return false, fmt.Errorf("CSINode %s owned by %+v, want its Node %s", name, cn.OwnerReferences, n.UID)
			}
			evs, err := c.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
			if err != nil {
				return false, err
			}
			reasons := map[string]bool{}
			for _, e := range evs.Items {
				reasons[e.Reason] = true
			}
			for _, r := range []string{"Starting", "NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID", "NodeAllocatableEnforced", "NodeReady"} {
				if !reasons[r] {
					return false, nil
				}
			}
		}
		return true, nil
	})
	for _, c := range rf.Tally().Requests() {
		if c.Failed > 0 && (c.Verb == "watch" || c.Resource == "csinodes" || c.Resource == "events") {
			t.Errorf("%d %s %s refused", c.Failed, c.Verb, c.Resource)
		}
	}
	if err := rf.stop(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the watches closed with the fleet", func() (bool, error) {
		now := longrunningWatches(t, cp)
		for _, r := range kubeletWatches {
			if now[r] > before[r] {
				return false, nil
			}
		}
		return true, nil
	})

	rf = startFleet(t, fleet.Config{Nodes: nodes, Fleet: "footprint-hb", NamePrefix: "footprint-hb", RegisterQPS: 50,
		Footprint: agent.FootprintHeartbeat})
	eventually(t, 60*time.Second, "5 registered nodes", func() (bool, error) { return rf.Progress().Ready == nodes, nil })
	for _, c := range rf.Tally().Requests() {
		if c.Verb == "watch" {
			t.Errorf("the heartbeat footprint opened %d watches of %s", c.OK+c.Failed, c.Resource)
		}
	}
	if err := rf.stop(); err != nil {
		t.Fatal(err)
	}

	// A fleet of its own for the pods: with them in the first fleet, the apiserver once counted one
	// Node watch more after the fleet stopped than before it started. It was not the fleet's: on a
	// fresh control plane with every Node watch in the audit log, the count went from 1 to 2 within
	// 5 s of controlplane.Up, the second one no user of the fleet's, and a fleet of 5 nodes with 2
	// pods each left no watch open after it stopped (2 before, 8 running, 2 after). The first
	// fleet's before is read right after the shared control plane starts, when this test runs first.
	before = longrunningWatches(t, cp)
	rf = startFleet(t, fleet.Config{Nodes: nodes, Fleet: "footprint-pods", NamePrefix: "footprint-pods", RegisterQPS: 50,
		Footprint: agent.FootprintKubelet, PodsPerNode: 2})
	// The apiserver's count has the control plane's own watches of ConfigMaps too; the fleet's
	// tells the agents' apart.
	eventually(t, 60*time.Second, "every node watching kube-root-ca.crt", func() (bool, error) {
		for _, ws := range rf.Tally().Watches() {
			if ws.Resource == "configmaps" && ws.Held >= nodes {
				return longrunningWatches(t, cp)["configmaps"]-before["configmaps"] >= nodes, nil
			}
		}
		return false, nil
	})
	for _, ws := range rf.Tally().Watches() {
		if ws.Resource == "configmaps" && ws.Held != nodes {
			t.Errorf("the agents hold %d configmaps watches, want %d: one per node", ws.Held, nodes)
		}
	}
	// Each pod's token, requested as its node when the volume is mounted: the Node authorizer and
	// NodeRestriction admit a token bound to a pod on the node. A request made before the
	// apiserver's admission saw the pod fails with 404 and is made again at the next sync.
	eventually(t, 30*time.Second, "a token for every pod", func() (bool, error) {
		for _, c := range rf.Tally().Requests() {
			if c.Verb == "create" && c.Resource == "serviceaccounts" {
				return c.OK >= nodes*2, nil
			}
		}
		return false, nil
	})
	held := longrunningWatches(t, cp)["configmaps"]
	if err := rf.stop(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the kube-root-ca.crt watches closed with the fleet", func() (bool, error) {
		return longrunningWatches(t, cp)["configmaps"] <= held-nodes, nil
	})
}

// longrunningWatches reads apiserver_longrunning_requests{verb="WATCH"} by resource.
func longrunningWatches(t *testing.T, cp *controlplane.ControlPlane) map[string]float64 {
	t.Helper()
	families := apiserverMetrics(t, cp)
	out := map[string]float64{}
	for _, m := range families["apiserver_longrunning_requests"].GetMetric() {
		var verb, resource string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "verb":
				verb = l.GetValue()
			case "resource":
				resource = l.GetValue()
			}
		}
		if strings.EqualFold(verb, "watch") {
			out[resource] += m.GetGauge().GetValue()
		}
	}
	return out
}
