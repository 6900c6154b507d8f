package scenario

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/internal/fleettest"
	"fakelet.dev/fakelet/profiles"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// harness runs a profile on a fleet of agents against client-go's fake clientset, on a fake clock.
type harness struct {
	t      *testing.T
	client *fake.Clientset
	clock  *testingclock.FakeClock
	fleet  *fleet.Fleet
	runner *Runner
	log    *syncBuffer

	cancel   context.CancelFunc
	fleetErr chan error
	runErr   chan error
}

type harnessOption func(*fleet.Config, *Config, *fake.Clientset)

// resolvePlan parses profile and resolves it for its spec.nodes.
func resolvePlan(t *testing.T, profile string) *profiles.Plan {
	t.Helper()
	p, err := profiles.Parse("test.yaml", []byte(profile))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Resolve(p.Fleet())
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// newHarness resolves profile and starts the fleet and the runner.
func newHarness(t *testing.T, profile string, opts ...harnessOption) *harness {
	t.Helper()
	plan := resolvePlan(t, profile)
	p := plan.Profile
	client := fake.NewClientset()
	fleettest.APIServerLike(client)
	fc := testingclock.NewFakeClock(t0)
	fcfg := fleet.Config{
		Nodes: plan.Nodes, Zones: max(p.Spec.Zones, 1), ZoneOf: profiles.ZoneOf, Clock: fc, RegisterQPS: 1000,
		Template: agent.TemplateOptions{Images: 3},
		// These tests check when a profile's ops take effect, which the footprint does not change;
		// the kubelet footprint's Events, CSINodes and pod GETs on the fake clientset multiply the
		// package's time (past go test's 10 minutes with the default footprint on a shared machine).
		Footprint: agent.FootprintHeartbeat,
	}
	log := &syncBuffer{}
	rcfg := Config{Plan: plan, Log: log}
	for _, o := range opts {
		o(&fcfg, &rcfg, client)
	}
	// Heartbeat requests go through a check of the node's identity, as the apiserver's authorizer
	// would: a revoked credential (denyAuth) is refused with 403.
	f, err := fleet.NewWithClients(fleettest.Resolve(t, fcfg), client, []agent.Clients{{
		Core:         authCore{client.CoreV1()},
		Coordination: authCoordination{client.CoordinationV1()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	rcfg.Fleet = f
	r, err := New(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, client: client, clock: fc, fleet: f, runner: r, log: log, cancel: cancel,
		fleetErr: make(chan error, 1), runErr: make(chan error, 1)}
	go func() { h.fleetErr <- f.Run(ctx) }()
	go func() { h.runErr <- r.Run(ctx) }()
	t.Cleanup(func() {
		if err := h.stop(); err != nil {
			t.Errorf("fleet run: %v", err)
		}
	})
	return h
}

// stop ends the fleet (and the run, if it still goes on) and returns the fleet's error.
func (h *harness) stop() error {
	if h.fleetErr == nil {
		return nil
	}
	h.cancel()
	<-h.runErr
	err := <-h.fleetErr
	h.fleetErr = nil
	return err
}

// waitForPhases registers the fleet, waits until the fleet's watch saw every node Ready and steps
// the clock until the first phase began; it returns when that was.
func (h *harness) waitForPhases() time.Time {
	h.t.Helper()
	<-h.fleet.Running()
	h.fleet.Scheduler().Advance(h.clock, t0.Add(5*time.Second))
	n := h.runner.plan.Nodes
	// Registration is paced on the fleet's clock (fleet/pace.go: 10 a second, doubling each second),
	// and each agent registers a moment after it starts, so a large fleet needs the clock to move on
	// until every node is Ready: a second of it each time the nodes stop getting Ready.
	for limit := t0.Add(time.Minute); ; {
		last := -1
		_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true,
			func(context.Context) (bool, error) {
				ready := h.fleet.Progress().Ready
				stalled := ready == last
				last = ready
				return ready >= n || stalled, nil
			})
		if p := h.fleet.Progress(); p.Ready >= n {
			break
		} else if !h.clock.Now().Before(limit) {
			h.t.Fatalf("%d of %d nodes Ready (%+v)", p.Ready, n, p)
		}
		h.fleet.Scheduler().Advance(h.clock, h.clock.Now().Add(time.Second))
	}
	return h.stepUntilStarted(time.Minute)
}

// stepUntilStarted moves the clock a second at a time, at most limit, until the first phase began.
func (h *harness) stepUntilStarted(limit time.Duration) time.Time {
	h.t.Helper()
	for end := h.clock.Now().Add(limit); h.clock.Now().Before(end); {
		if start := h.runner.Record().Start; !start.IsZero() {
			return start
		}
		h.fleet.Scheduler().Advance(h.clock, h.clock.Now().Add(time.Second))
	}
	h.t.Fatalf("no phase began within %v; log:\n%s", limit, h.log)
	return time.Time{}
}

// advanceTo runs the clock to start+d.
func (h *harness) advanceTo(start time.Time, d time.Duration) {
	h.fleet.Scheduler().Advance(h.clock, start.Add(d))
}

// applied is the ops the runner applied, as op@offset from start.
func (h *harness) applied(start time.Time) string {
	var ops []string
	for _, ap := range h.runner.Record().Applied {
		ops = append(ops, fmt.Sprintf("%s@%v", ap.Op, ap.At.Sub(start)))
	}
	return strings.Join(ops, " ")
}

// finished waits for Run to return after the last phase.
func (h *harness) finished() {
	h.t.Helper()
	select {
	case err := <-h.runErr:
		h.runErr <- err // for the cleanup
		if err != nil {
			h.t.Fatalf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		h.t.Fatalf("the run did not end after its last phase; log:\n%s", h.log)
	}
}

func (h *harness) node(name string) *corev1.Node {
	h.t.Helper()
	n, err := h.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("get node %s: %v", name, err)
	}
	return n
}

func (h *harness) lease(name string) (*coordinationv1.Lease, error) {
	return h.client.CoordinationV1().Leases(agent.LeaseNamespace).Get(context.Background(), name, metav1.GetOptions{})
}

func condition(n *corev1.Node, t corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.NodeCondition{}
}

// applied returns the record's entries for op, by node.
func applied(rec Record, op profiles.Op) map[int]Applied {
	out := map[int]Applied{}
	for _, a := range rec.Applied {
		if a.Op == op {
			out[a.Node] = a
		}
	}
	return out
}

// refuseRevoked is the apiserver's answer to a node whose credential no longer carries system:nodes.
func refuseRevoked(ctx context.Context, resource string) error {
	if user, groups, ok := agent.IdentityFrom(ctx); ok && len(groups) == 0 {
		return apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", fmt.Errorf("user %q cannot act as a node", user))
	}
	return nil
}

type authCore struct{ corev1client.CoreV1Interface }

func (c authCore) Nodes() corev1client.NodeInterface { return authNodes{c.CoreV1Interface.Nodes()} }

type authNodes struct{ corev1client.NodeInterface }

func (n authNodes) Create(ctx context.Context, node *corev1.Node, o metav1.CreateOptions) (*corev1.Node, error) {
	if err := refuseRevoked(ctx, "nodes"); err != nil {
		return nil, err
	}
	return n.NodeInterface.Create(ctx, node, o)
}

func (n authNodes) Get(ctx context.Context, name string, o metav1.GetOptions) (*corev1.Node, error) {
	if err := refuseRevoked(ctx, "nodes"); err != nil {
		return nil, err
	}
	return n.NodeInterface.Get(ctx, name, o)
}

func (n authNodes) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*corev1.Node, error) {
	if err := refuseRevoked(ctx, "nodes"); err != nil {
		return nil, err
	}
	return n.NodeInterface.Patch(ctx, name, pt, data, o, sub...)
}

type authCoordination struct {
	coordinationv1client.CoordinationV1Interface
}

func (c authCoordination) Leases(ns string) coordinationv1client.LeaseInterface {
	return authLeases{c.CoordinationV1Interface.Leases(ns)}
}

type authLeases struct {
	coordinationv1client.LeaseInterface
}

func (l authLeases) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	if err := refuseRevoked(ctx, "leases"); err != nil {
		return nil, err
	}
	return l.LeaseInterface.Get(ctx, name, o)
}

func (l authLeases) Create(ctx context.Context, lease *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if err := refuseRevoked(ctx, "leases"); err != nil {
		return nil, err
	}
	return l.LeaseInterface.Create(ctx, lease, o)
}

func (l authLeases) Update(ctx context.Context, lease *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if err := refuseRevoked(ctx, "leases"); err != nil {
		return nil, err
	}
	return l.LeaseInterface.Update(ctx, lease, o)
}

// syncBuffer is a log the runner's tasks write while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// timedLines returns the log lines that carry an offset into the run ("+1m0s ...").
func (b *syncBuffer) timedLines() []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "+") {
			out = append(out, l)
		}
	}
	return out
}
