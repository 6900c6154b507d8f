package capacity

import (
	"context"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/fleettest"
	"fakelet.dev/fakelet/internal/lockstep"
	"fakelet.dev/fakelet/measure/load"
)

// simClock is the clock the shards of a test share: a shard that waits on a timer waits until every
// other shard waits (or has ended) too, and then time moves on to the earliest wake-up. So the
// shards run in step on one fake time, as processes on one wall clock would, with no real time
// passing. Of a clock.Clock it has what the step logic uses: Now and NewTimer.
type simClock struct {
	clock.Clock
	mu       sync.Mutex
	now      time.Time
	running  int // shards neither asleep nor ended
	sleepers []*sleeper
}

type sleeper struct {
	until time.Time
	wake  chan time.Time
}

func (s *sleeper) C() <-chan time.Time    { return s.wake }
func (*sleeper) Stop() bool               { return false }
func (*sleeper) Reset(time.Duration) bool { panic("simClock's timers are not reset") }

func newSimClock(shards int) *simClock { return &simClock{now: t0, running: shards} }

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer is a shard beginning to wait: it runs again once the timer fires.
func (c *simClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &sleeper{until: c.now.Add(max(d, 0)), wake: make(chan time.Time, 1)}
	c.sleepers = append(c.sleepers, s)
	c.running--
	c.advance()
	return s
}

// ended says a shard's run returned.
func (c *simClock) ended() {
	c.mu.Lock()
	c.running--
	c.advance()
	c.mu.Unlock()
}

// advance moves time to the earliest wake-up once no shard runs, and wakes every sleeper due. c.mu
// must be held.
func (c *simClock) advance() {
	if c.running > 0 || len(c.sleepers) == 0 {
		return
	}
	slices.SortFunc(c.sleepers, func(a, b *sleeper) int { return a.until.Compare(b.until) })
	if c.sleepers[0].until.After(c.now) {
		c.now = c.sleepers[0].until
	}
	for len(c.sleepers) > 0 && !c.sleepers[0].until.After(c.now) {
		c.sleepers[0].wake <- c.now
		c.sleepers = c.sleepers[1:]
		c.running++
	}
}

// shardFleet is one shard's fleet on the shared clock: its levels are a mutating p99 of p99, and
// from the step of alarmsFrom nodes on a false alarm and failedFrom a failed heartbeat.
type shardFleet struct {
	clock                  *simClock
	l                      Lockstep
	p99                    float64
	alarmsFrom, failedFrom int
	nodes                  []int       // this shard's nodes at each step
	holds                  []time.Time // when each hold began
}

func (f *shardFleet) Grow(_ context.Context, n int) error {
	f.nodes = append(f.nodes, f.l.Nodes(n))
	return nil
}
func (f *shardFleet) Hold(_ int, at time.Time) { f.holds = append(f.holds, at) }
func (f *shardFleet) Measure(_ context.Context, from, to time.Time) (Measured, []load.Process, error) {
	n := f.nodes[len(f.nodes)-1]
	m := Measured{MutatingP99: f.p99, RenewalP99: 10.2}
	if f.alarmsFrom > 0 && n >= f.alarmsFrom {
		m.FalseAlarms = 1
	}
	if f.failedFrom > 0 && n >= f.failedFrom {
		m.FailedHeartbeats = 1
	}
	return m, nil, nil
}

// board opens shard i of n's verdict board on the fake cluster.
func board(t *testing.T, client *fake.Clientset, i, n int) *lockstep.Board {
	t.Helper()
	b, err := lockstep.OpenBoard(context.Background(), lockstep.BoardOptions{
		Client: client, Namespace: "fakelet", Fleet: "big", Shard: fleetname.Shard{Index: i, Count: n}, Holder: "test",
		Run: lockstep.Run{What: "capacity", Nodes: 4000, Shards: n, Hash: "0123456789abcdef"}, Start: t0, Log: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fakeCluster() *fake.Clientset {
	client := fake.NewClientset()
	fleettest.APIServerLike(client)
	fleettest.GrantAll(client)
	return client
}

type shardRun struct {
	res   Result
	err   error
	fleet *shardFleet
	board *lockstep.Board
}

// runShards runs the fleets as shards of one run on one clock and fake cluster, each with its own
// verdict board; a nil fleet is a shard that never starts.
func runShards(t *testing.T, c Config, client *fake.Clientset, fleets []*shardFleet) []shardRun {
	t.Helper()
	started := 0
	for _, f := range fleets {
		if f != nil {
			started++
		}
	}
	clock := newSimClock(started)
	out := make([]shardRun, len(fleets))
	var wg sync.WaitGroup
	for i, f := range fleets {
		if f == nil {
			continue
		}
		b := board(t, client, i, len(fleets))
		f.clock = clock
		f.l = Lockstep{Shard: fleetname.Shard{Index: i, Count: len(fleets)}, Start: t0.Add(time.Minute), VerdictTimeout: 30 * time.Second,
			RegisterQPS: 100, Verdicts: BoardVerdicts{Board: b}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer clock.ended()
			res, err := RunInLockstep(context.Background(), c, f.l, f, clock)
			out[i] = shardRun{res: res, err: err, fleet: f, board: b}
		}()
	}
	wg.Wait()
	return out
}

// TestShardsStopTogetherAtTheFirstStepAnyOfThemSawBroken: shard 1 alone sees a false alarm at the
// second step; both shards stop after it, with the same answer, each step's hold having begun at the
// same time in both, and each shard's own measure in its steps.
func TestShardsStopTogetherAtTheFirstStepAnyOfThemSawBroken(t *testing.T) {
	client := fakeCluster()
	c := config(1000, 1000, 4000)
	runs := runShards(t, c, client, []*shardFleet{{p99: 0.3}, {p99: 0.2, alarmsFrom: 1000}})
	for i, r := range runs {
		if r.err != nil {
			t.Fatalf("shard %d: %v", i, r.err)
		}
		if !reflect.DeepEqual(r.fleet.nodes, []int{500, 1000}) {
			t.Errorf("shard %d ran %v nodes, want its half of 1000 and 2000", i, r.fleet.nodes)
		}
		if len(r.res.Steps) != 2 || r.res.Held != 1000 || r.res.Broke == nil {
			t.Fatalf("shard %d: %d steps, held %d, broke %+v: want two, 1000 held", i, len(r.res.Steps), r.res.Held, r.res.Broke)
		}
	}
	if !reflect.DeepEqual(runs[0].res.Broke, runs[1].res.Broke) || runs[0].res.Broke.Level != LevelFalseAlarms || runs[0].res.Broke.Value != 1 {
		t.Errorf("the shards' answers: %+v and %+v, want both the false alarm", runs[0].res.Broke, runs[1].res.Broke)
	}
	if a := runs[0].res.Steps[1].Measured.FalseAlarms; a != 0 {
		t.Errorf("shard 0's own step says %d false alarms, want its own 0", a)
	}
	// The schedule: the first step's settle from the start, a minute in; its hold then; 30 s for the
	// verdicts; the second step's 500 new nodes per shard take 5 s at 100/s before its settle.
	start := t0.Add(time.Minute)
	want := []time.Time{start.Add(time.Minute), start.Add(time.Minute + 2*time.Minute + 30*time.Second + 5*time.Second + time.Minute)}
	for i, r := range runs {
		if !reflect.DeepEqual(r.fleet.holds, want) {
			t.Errorf("shard %d's holds began at %v, want %v", i, r.fleet.holds, want)
		}
	}
	posts, err := client.CoordinationV1().Leases("fakelet").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(posts.Items) != 4 {
		t.Fatalf("%d posts (%v), want a verdict of each shard on each step", len(posts.Items), err)
	}
	for _, r := range runs {
		if err := r.board.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if posts, _ := client.CoordinationV1().Leases("fakelet").List(context.Background(), metav1.ListOptions{}); len(posts.Items) != 0 {
		t.Errorf("%d posts left after every shard closed its board", len(posts.Items))
	}
}

// TestTheFleetsCountsAreTheShardsSummed: one failed heartbeat in each shard holds a limit of one in
// each, but the fleet had two: both stop at the first step. The mutating p99 is the worst shard's.
func TestTheFleetsCountsAreTheShardsSummed(t *testing.T) {
	c := config(1000, 1000, 4000)
	c.Levels.FailedHeartbeats = 1
	runs := runShards(t, c, fakeCluster(), []*shardFleet{{p99: 0.3, failedFrom: 1}, {p99: 0.7, failedFrom: 1}})
	for i, r := range runs {
		if r.err != nil {
			t.Fatalf("shard %d: %v", i, r.err)
		}
		if b := r.res.Broke; len(r.res.Steps) != 1 || b == nil || b.Level != LevelFailedHeartbeats || b.Value != 2 || r.res.Held != 0 {
			t.Errorf("shard %d: %d steps, broke %+v: want the first step broken by the fleet's 2 failed heartbeats", i, len(r.res.Steps), b)
		}
	}
}

// TestAShardWithoutAVerdictStopsTheOthers: shard 1 never starts; shard 0 waits for its verdict on the
// first step until it is due, then stops saying which shard it lacked.
func TestAShardWithoutAVerdictStopsTheOthers(t *testing.T) {
	runs := runShards(t, config(1000, 1000, 4000), fakeCluster(), []*shardFleet{{p99: 0.3}, nil})
	r := runs[0]
	if r.err == nil || !strings.Contains(r.err.Error(), "the step of 1000 nodes: shard 1/2 posted no verdict by 2026-03-01T12:04:30Z (--verdict-timeout 30s after the hold)") {
		t.Fatalf("error %v, want shard 1/2 named as missing at the first step's due time", r.err)
	}
	if len(r.res.Steps) != 0 || len(r.fleet.nodes) != 1 {
		t.Errorf("steps %d, grown %v: want no step, the first grown", len(r.res.Steps), r.fleet.nodes)
	}
	if got := r.fleet.clock.Now(); !got.Equal(t0.Add(4*time.Minute + 30*time.Second)) {
		t.Errorf("gave up at %v, want at the due time", got)
	}
}

func TestLockstepValidation(t *testing.T) {
	for _, tc := range []struct {
		c       Config
		shards  int
		timeout time.Duration
		want    string
	}{
		{config(2, 10, 100), 3, time.Second, "--start 2: shard 0/3: 2 nodes cannot be split into 3 shards of at least one node"},
		// 7 nodes in 5 shards are 1, 1, 2, 1, 2; 8 are 1, 2, 1, 2, 2.
		{config(5, 1, 8), 5, time.Second, "--step 1: with 5 shards, shard 2/5 would run 2 nodes at the step of 7 and 1 at the step of 8"},
		{config(5, 5, 12), 5, time.Second, ""}, // steps of at least the shard count only grow each slice
		{config(3, 3, 9), 3, 0, "--verdict-timeout must be positive"},
	} {
		l := Lockstep{Shard: fleetname.Shard{Index: 0, Count: tc.shards}, Start: t0, VerdictTimeout: tc.timeout, RegisterQPS: 10}
		err := l.Validate(tc.c)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v in %d shards: %v, want %q", tc.c, tc.shards, err, tc.want)
		}
	}
}
