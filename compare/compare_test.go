package compare

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/internal/fleettest"
	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/measure/scrape"
	"fakelet.dev/fakelet/report"
)

// cumulativeSource is an apiserver whose request counter has counted for a long time before the
// test (1e9) and grows 1000 a second, whichever mode runs: one cluster's counters, never reset.
type cumulativeSource struct{ t0 time.Time }

func (cumulativeSource) Component() string { return load.APIServer }

func (s cumulativeSource) Scrape(context.Context) (map[string]*scrape.Family, error) {
	v := 1e9 + 1000*time.Since(s.t0).Seconds()
	return map[string]*scrape.Family{"apiserver_request_total": {Type: scrape.Counter,
		Labels: []string{"verb", "resource", "subresource", "code"},
		Series: map[string]*scrape.Series{"GET|pods||200": {Labels: []string{"GET", "pods", "", "200"}, Value: v}}}}, nil
}

// TestCompareOnOneClusterRunsTheModesOneAfterTheOther runs both modes on one fake cluster: the status
// fleet registers only after every lease Node is deleted, under names of its own, and each mode's
// request rate is its own window's, not the cluster's cumulative count.
func TestCompareOnOneClusterRunsTheModesOneAfterTheOther(t *testing.T) {
	client := fake.NewClientset()
	fleettest.APIServerLike(client)
	var mu sync.Mutex
	var writes []string // "create compare-lease-00000", "delete ..."
	for _, verb := range []string{"create", "delete"} {
		client.PrependReactor(verb, "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
			name := ""
			switch a := a.(type) {
			case k8stesting.CreateAction:
				name = a.GetObject().(*corev1.Node).Name
			case k8stesting.DeleteAction:
				name = a.GetName()
			}
			mu.Lock()
			writes = append(writes, verb+" "+name)
			mu.Unlock()
			return false, nil, nil
		})
	}
	cl := &Cluster{
		Client: client,
		NewFleet: func(r fleet.Resolved) (*fleet.Fleet, error) {
			// A kubelet creates its Lease one renew interval after its Node (10 s): sooner here.
			cfg := r.Config()
			cfg.Heartbeat.RenewInterval = 100 * time.Millisecond
			r, err := cfg.Resolve()
			if err != nil {
				return nil, err
			}
			return fleet.NewWithClients(r, client, []agent.Clients{{Core: client.CoreV1(), Coordination: client.CoordinationV1()}})
		},
		Sources: []scrape.Source{cumulativeSource{t0: time.Now()}},
		Target:  record.Target{Server: "https://fake", Description: "a fake cluster"},
	}
	dir := t.TempDir()
	o := Options{Nodes: 3, Duration: 500 * time.Millisecond, Settle: 100 * time.Millisecond,
		ScrapeInterval: time.Hour, Images: 3, Dir: dir, Log: testWriter{t},
		Parameters: func(r fleet.Resolved) record.Parameters {
			return record.Parameters{Nodes: r.Config().Nodes, Mode: string(r.Config().Heartbeat.Mode)}
		}}
	released := 0
	reports, notes, err := measureModes(context.Background(), o, true, func(heartbeat.Mode) (*Cluster, func(), error) {
		return cl, func() { released++ }, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 2 || len(notes) != 0 || released != 2 {
		t.Fatalf("%d reports, notes %q, %d releases; want 2, none, 2", len(reports), notes, released)
	}

	mu.Lock()
	defer mu.Unlock()
	firstStatus, lastLease := -1, -1
	created := map[string]bool{}
	for i, w := range writes {
		verb, name, _ := strings.Cut(w, " ")
		switch {
		case strings.HasPrefix(name, "compare-status-") && firstStatus < 0:
			firstStatus = i
		case strings.HasPrefix(name, "compare-lease-"):
			lastLease = i
		case !strings.HasPrefix(name, "compare-status-"):
			t.Errorf("%s: a node of neither fleet", w)
		}
		if verb == "create" {
			created[name] = true
		}
	}
	if len(created) != 6 || firstStatus < 0 || lastLease > firstStatus {
		t.Errorf("node writes %q: want 3 lease nodes created and deleted, then 3 status nodes", writes)
	}
	if nodes, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); err != nil || len(nodes.Items) != 0 {
		t.Errorf("%d nodes left after the compare (%v), want none", len(nodes.Items), err)
	}

	for i, r := range reports {
		if _, err := report.ReadFile(filepath.Join(dir, string(Modes[i]), report.JSONFile)); err != nil {
			t.Errorf("%s report: %v", Modes[i], err)
		}
		if r.Parameters.Mode != string(Modes[i]) || len(r.Load.Phases) != 1 || r.Load.Phases[0].Name != "steady" {
			t.Fatalf("report %d: mode %s, phases %+v", i, r.Parameters.Mode, r.Load.Phases)
		}
		p := r.Load.Phases[0]
		var rate float64
		for _, rq := range p.Requests {
			rate += rq.Rate
		}
		// The window's own increase: 1000/s, whatever the counter held before it.
		if rate < 700 || rate > 1300 || p.Seconds < 0.3 {
			t.Errorf("%s mode: %.0f requests/s over %.2f s, want about 1000/s", Modes[i], rate, p.Seconds)
		}
	}
}

// TestCompareRefusesLeftoverFleets: Nodes of a compare fleet already in the cluster stop the compare
// before it writes anything, naming the fleet and how to delete them.
func TestCompareRefusesLeftoverFleets(t *testing.T) {
	left := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "compare-status-00007",
		Labels: map[string]string{fleetname.Label: "compare-status"}}}
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "compare-lease-00000",
		Labels: map[string]string{fleetname.Label: "someone-else"}}}
	client := fake.NewClientset(left, other)
	err := NoFleetsLeft(context.Background(), client, Modes)
	if err == nil || !strings.Contains(err.Error(), "1 Node(s) of fleet compare-status") ||
		!strings.Contains(err.Error(), "fakelet cleanup --fleet compare-status") {
		t.Fatalf("err = %v, want the leftover fleet named with its cleanup", err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "list" {
			t.Errorf("%s %s: the check must only read", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if err := NoFleetsLeft(context.Background(), fake.NewClientset(other), Modes); err != nil {
		t.Errorf("another fleet's node under a compare name: %v, want no objection (the fleet's own check refuses it)", err)
	}
}

// testWriter logs each line written to it, with the time.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s %s", time.Now().Format("15:04:05.000"), strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
