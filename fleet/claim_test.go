package fleet

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/fleettest"
)

// TestTwoRunsStartedAtOnceOneHoldsTheWholeFleet: a run of fleet race kept its 20 nodes; two runs of
// the same fleet start at once and both read its released claim before either takes it. Exactly one
// takes the claim and runs all 20 nodes; the other refuses naming it, before any write (its one
// attempt, the claim's conditional update, is refused by the server), starts no agent, and its
// cleanup deletes nothing. Before, both preflights saw the kept run's expired Leases and adopted what
// they could: they split the fleet (one 12 nodes, the other 8, each refusing the rest as held by a
// live run), and the loser's cleanup deleted the Nodes it had adopted by UID, the winner's too.
func TestTwoRunsStartedAtOnceOneHoldsTheWholeFleet(t *testing.T) {
	client := fake.NewClientset()
	fleettest.APIServerLike(client)
	fleettest.ResourceVersions(client)
	clk := testingclock.NewFakeClock(t0)
	kept := runOn(t, client, clk, Config{Nodes: 20, Fleet: "race", Keep: true, RunID: "kept"})
	go func() { kept.done <- kept.Run(kept.ctx) }()
	kept.advance(t, 30*time.Second)
	client.ClearActions()
	kept.pollAdvancing(t, "the kept run's 20 leases", func() bool { return leaseCount(t, kept.testFleet) == 20 })
	if err := kept.stop(); err != nil {
		t.Fatal(err)
	}
	clk.Step(50 * time.Second)

	// Both read the claim before either takes it: the race the server settles.
	both := &barrier{n: 2, timeout: 5 * time.Second}
	a := runOn(t, racingClient{Interface: client, claimRead: both, wrote: new(atomic.Int32)}, clk, Config{Nodes: 20, Fleet: "race", RunID: "run-a"})
	b := runOn(t, racingClient{Interface: client, claimRead: both, wrote: new(atomic.Int32)}, clk, Config{Nodes: 20, Fleet: "race", RunID: "run-b"})
	client.ClearActions()
	go func() { a.done <- a.Run(a.ctx) }()
	go func() { b.done <- b.Run(b.ctx) }()
	var winner, loser *raceRun
	select {
	case err := <-a.done:
		winner, loser = b, a
		loser.err = err
	case err := <-b.done:
		winner, loser = a, b
		loser.err = err
	case <-time.After(10 * time.Second):
		t.Fatalf("neither run refused: %+v, %+v", a.Progress(), b.Progress())
	}
	var held *ClaimHeldError
	if !errors.As(loser.err, &held) || held.Run != winner.Config().RunID || !strings.Contains(loser.err.Error(), "held by run "+winner.Config().RunID) {
		t.Fatalf("the loser %s: %v, want a refusal naming %s", loser.Config().RunID, loser.err, winner.Config().RunID)
	}
	if p := loser.Progress(); p.Started != 0 {
		t.Errorf("the loser started %d agents, want none", p.Started)
	}
	if w := loser.admin.(racingClient).wrote.Load(); w != 0 {
		t.Errorf("the loser's own client wrote %d times, want none", w)
	}
	winner.advanceBy(t, 30*time.Second)
	winner.pollAdvancing(t, "the winner adopted all 20 nodes and leases", func() bool {
		for _, ag := range winner.Agents() {
			if node, lease := ag.Owned(); node == "" || lease == "" {
				return false
			}
		}
		return true
	})
	nodes, _ := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	leases, _ := client.CoordinationV1().Leases(agent.LeaseNamespace).List(context.Background(), metav1.ListOptions{})
	for _, n := range nodes.Items {
		if agent.HeldBy(&n) != winner.Config().RunID {
			t.Errorf("node %s held by %q, want the winner %s", n.Name, agent.HeldBy(&n), winner.Config().RunID)
		}
	}
	for _, l := range leases.Items {
		if agent.HeldBy(&l) != winner.Config().RunID {
			t.Errorf("lease %s held by %q, want the winner %s", l.Name, agent.HeldBy(&l), winner.Config().RunID)
		}
	}
	if len(nodes.Items) != 20 {
		t.Errorf("%d nodes, want the 20 kept ones", len(nodes.Items))
	}
	if err := loser.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, act := range client.Actions() {
		if act.GetVerb() == "delete" {
			t.Errorf("the loser's cleanup sent %s %s", act.GetVerb(), act.GetResource().Resource)
		}
	}
	if err := winner.stop(); err != nil {
		t.Fatal(err)
	}
	if n, _ := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); len(n.Items) != 0 {
		t.Errorf("%d nodes left after the winner's end, want its 20 deleted", len(n.Items))
	}
	if l, _ := client.CoordinationV1().Leases(agent.LeaseNamespace).List(context.Background(), metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("%d leases left after the winner's end (its claim among them?), want none", len(l.Items))
	}
}

// raceRun is a fleet run on a shared fake cluster.
type raceRun struct {
	*testFleet
	ctx context.Context
	err error
}

// runOn builds a run of cfg on client and clk, not started.
func runOn(t *testing.T, client kubernetes.Interface, clk *testingclock.FakeClock, cfg Config) *raceRun {
	t.Helper()
	cfg.Clock = clk
	cfg.Template.Images = 3
	agents := client
	if r, ok := client.(racingClient); ok {
		agents = r.Interface
	}
	f, err := NewWithClients(fleettest.Resolve(t, cfg), client, []agent.Clients{{Core: agents.CoreV1(), Coordination: agents.CoordinationV1()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	fc, _ := agents.(*fake.Clientset)
	return &raceRun{testFleet: &testFleet{Fleet: f, client: fc, clock: clk, cancel: cancel, done: make(chan error, 1)}, ctx: ctx}
}

// barrier holds each of n callers until all n have come, or timeout.
type barrier struct {
	n       int
	timeout time.Duration
	mu      sync.Mutex
	came    int
	all     chan struct{}
}

func (b *barrier) wait() {
	b.mu.Lock()
	if b.all == nil {
		b.all = make(chan struct{})
	}
	b.came++
	if b.came == b.n {
		close(b.all)
	}
	all := b.all
	b.mu.Unlock()
	select {
	case <-all:
	case <-time.After(b.timeout):
	}
}

// racingClient holds each answer to a read of a claim Lease at claimRead, outside the fake clientset, which
// answers one request at a time.
type racingClient struct {
	kubernetes.Interface
	claimRead *barrier
	wrote     *atomic.Int32 // Leases created, updated or deleted through it
}

// IsWatchListSemanticsUnSupported is the fake clientset's: the fleet's watch lists without streaming.
func (r racingClient) IsWatchListSemanticsUnSupported() bool { return true }

func (r racingClient) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return racingCoordination{r.Interface.CoordinationV1(), r}
}

type racingCoordination struct {
	coordinationv1client.CoordinationV1Interface
	r racingClient
}

func (r racingCoordination) Leases(ns string) coordinationv1client.LeaseInterface {
	return racingLeases{r.CoordinationV1Interface.Leases(ns), r.r.claimRead, r.r.wrote}
}

type racingLeases struct {
	coordinationv1client.LeaseInterface
	claimRead *barrier
	wrote     *atomic.Int32
}

func (r racingLeases) Create(ctx context.Context, l *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	got, err := r.LeaseInterface.Create(ctx, l, opts)
	if err == nil {
		r.wrote.Add(1)
	}
	return got, err
}

func (r racingLeases) Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	got, err := r.LeaseInterface.Update(ctx, l, opts)
	if err == nil {
		r.wrote.Add(1)
	}
	return got, err
}

func (r racingLeases) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	err := r.LeaseInterface.Delete(ctx, name, opts)
	if err == nil {
		r.wrote.Add(1)
	}
	return err
}

func (r racingLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	l, err := r.LeaseInterface.Get(ctx, name, opts)
	if strings.HasPrefix(name, "fakelet-claim.") {
		r.claimRead.wait()
	}
	return l, err
}

// TestClaimRenewalWrittenWithoutItsAnswerIsNoTakeOver: under overload a renewal of the claim can be
// written while its answer never reaches the run (the renewer's timeout); the next renewal, from the
// older copy, conflicts with the run's own write. The claim is still this run's and is renewed; a
// claim another run holds is still lost, and one that cannot be read after the conflict is tried
// again at the next renewal. Before, the run ended at once, deleting nothing: a 1000-node
// run on a loaded local control plane stopped after 33 s with "the claim was taken over by another
// run (run 20261202-050410-afa07b)", its own run ID.
func TestClaimRenewalWrittenWithoutItsAnswerIsNoTakeOver(t *testing.T) {
	client := fake.NewClientset()
	fleettest.ResourceVersions(client)
	ctx := context.Background()
	c := newClaim(client, Config{NamePrefix: "p", Fleet: "f", RunID: "mine"}.withDefaults())
	if err := c.take(ctx, nil, t0); err != nil {
		t.Fatal(err)
	}
	lost := c.latest.DeepCopy() // the renewal whose answer was lost
	c.stamp(lost, t0.Add(10*time.Second))
	if _, err := client.CoordinationV1().Leases(agent.LeaseNamespace).Update(ctx, lost, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.renew(ctx, t0.Add(20*time.Second)); err != nil {
		t.Fatalf("renew after its own lost answer: %v, want the claim renewed", err)
	}
	stale := c.latest.DeepCopy()
	c.stamp(stale, t0.Add(25*time.Second))
	if _, err := client.CoordinationV1().Leases(agent.LeaseNamespace).Update(ctx, stale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	client.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewTimeoutError("overloaded", 1)
	})
	if err := c.renew(ctx, t0.Add(26*time.Second)); err == nil || errors.Is(err, errClaimLost) {
		t.Fatalf("renew after a conflict, the claim unreadable: %v, want an error to try again, not a loss", err)
	}
	client.ReactionChain = client.ReactionChain[1:]
	if err := c.renew(ctx, t0.Add(27*time.Second)); err != nil {
		t.Fatalf("renew once the claim reads again: %v", err)
	}
	other := c.latest.DeepCopy()
	other.Spec.HolderIdentity = new(string)
	*other.Spec.HolderIdentity = "theirs"
	if _, err := client.CoordinationV1().Leases(agent.LeaseNamespace).Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.renew(ctx, t0.Add(30*time.Second)); !errors.Is(err, errClaimLost) || !strings.Contains(err.Error(), "run theirs") {
		t.Fatalf("renew of a claim run theirs took: %v, want it lost to run theirs", err)
	}
}
