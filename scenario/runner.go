// Package scenario runs a resolved profile against a running fleet: it waits for the fleet's nodes
// to be Ready, then walks the profile's phases on the fleet's clock, applies each scheduled op to its
// node's agent at its time, logs each phase and action as it starts, and records when every op took
// effect for measurement.
//
// The whole run is one task on the fleet's scheduler that sleeps until the next event is due, plus a
// few workers for the ops that call the apiserver (deleteLease and remove), so a profile over
// 100,000 nodes costs no goroutine per node or per event. Events are computed phase by phase from
// profiles.Schedule, never all held at once.
package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/internal/headtail"
	"fakelet.dev/fakelet/internal/scheduler"
	"fakelet.dev/fakelet/profiles"
)

// readyPoll is how often the runner looks at the fleet's Ready count while it waits for its nodes.
const readyPoll = time.Second

// readyMargin is how much longer than the registration itself (nodes / register QPS) the runner waits
// for every node to be Ready by default: a node is Ready about a second after it starts.
const readyMargin = time.Minute

// DefaultReadyTimeout is how long a run waits for nodes Ready nodes, started at registerQPS per
// second, before its first phase begins anyway.
func DefaultReadyTimeout(nodes int, registerQPS float64) time.Duration {
	if registerQPS <= 0 {
		return readyMargin
	}
	return time.Duration(float64(nodes)/registerQPS*float64(time.Second)) + readyMargin
}

// Config is what a Runner runs.
type Config struct {
	Plan  *profiles.Plan
	Fleet *fleet.Fleet
	// Log receives one line for the wait for Ready nodes, one per phase and per action as each starts,
	// one per phase as it ends and one at the end; nil discards them.
	Log io.Writer
	// ReadyTimeout bounds the wait for every node to be Ready before the first phase; 0 means
	// DefaultReadyTimeout for the fleet.
	ReadyTimeout time.Duration
	// OnPhase, if set, is called as each phase begins; OnApplied after each op is applied. They run on
	// the runner's tasks and must not block.
	OnPhase   func(profile string, phase PhaseRecord)
	OnApplied func(Applied)
	// Shard, if it splits the fleet, says which of the plan's nodes this fleet runs (see CheckShard):
	// the runner applies an op only to the nodes its shard owns. The zero Shard is the whole fleet.
	Shard fleetname.Shard
	// StartAt, if set, is when the first phase begins, on the fleet's clock: shards of one fleet given
	// the same StartAt run their phases in lockstep. If this fleet's nodes are not all Ready by then,
	// the run fails (see ReadyTimeout, which StartAt replaces).
	StartAt time.Time
	// Client creates and deletes the profile's workloads (spec.workloads); required when it has
	// some. Of a fleet split into shards, shard 0 alone creates them.
	Client kubernetes.Interface
}

// Runner runs one profile on one fleet, once.
type Runner struct {
	cfg      Config
	plan     *profiles.Plan
	fleet    *fleet.Fleet
	sched    *scheduler.Scheduler
	schedule *profiles.Schedule
	windows  []profiles.PhaseWindow
	log      io.Writer
	name     string
	nodes    int   // the nodes this fleet starts with: the plan's, or its shard's slice of them
	err      error // why the run failed, once done is closed

	ctx  context.Context
	done chan struct{}
	once sync.Once

	mu      sync.Mutex // the run's progress, changed by its task
	started bool       // Run was called
	waitFor time.Time  // when the wait for Ready nodes began
	phase   int        // the current phase; -1 while waiting for Ready nodes
	next    func() (profiles.Event, bool)
	stop    func()
	pending profiles.Event
	has     bool
	begun   []bool // per action of the current phase: logged already
	ended   bool   // the last phase ended
	aborted bool

	admin adminQueue
	// workloads creates and removes the profile's workloads; nil without them (or in a shard other
	// than the first).
	workloads *workloadSet

	recMu   sync.Mutex
	rec     Record                   // its Applied is filled from applied when read
	applied headtail.Sample[Applied] // the first and the last AppliedKept
	counts  []phaseCounts            // by phase
}

// phaseCounts counts the ops of one phase for its closing line.
type phaseCounts struct {
	applied, failed int
	firstErr        string
}

// New checks that the plan can run on the fleet (see Check) and returns a Runner for it.
func New(cfg Config) (*Runner, error) {
	plan, f := cfg.Plan, cfg.Fleet
	if plan == nil || f == nil {
		return nil, errors.New("a profile run needs a resolved profile and a fleet")
	}
	fc := f.Config()
	if err := CheckShard(plan, fc, cfg.Shard); err != nil {
		return nil, err
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout(fc.Nodes, fc.RegisterQPS)
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	s := plan.Schedule()
	r := &Runner{
		cfg: cfg, plan: plan, fleet: f, sched: f.Scheduler(), schedule: s, windows: s.Phases(),
		log: cfg.Log, name: plan.Profile.Metadata.Name, done: make(chan struct{}), phase: -1, nodes: fc.Nodes,
	}
	r.admin.r = r
	r.rec = Record{Profile: r.name, Nodes: r.nodes}
	if ws := plan.Profile.Spec.Workloads; ws != nil && cfg.Shard.Index == 0 {
		if cfg.Client == nil {
			return nil, fmt.Errorf("profile %s has workloads, and the runner was given no client to create them", r.name)
		}
		objs := workloadObjects{fleet: fc.Fleet, run: fc.RunID, namespace: WorkloadNamespace(fc.Fleet, fc.RunID)}
		r.workloads = &workloadSet{client: cfg.Client, sched: r.sched, objects: objs, list: workloadList(plan, objs.namespace),
			rate: *ws.Rate, logf: r.logf}
	}
	r.applied.Keep = AppliedKept
	r.counts = make([]phaseCounts, len(r.windows))
	return r, nil
}

// Check says whether a plan can run on a fleet configured as fc, before anything touches a cluster.
// The fleet must be the plan's: the same number of nodes, numbered from 0, in the profile's zones, with
// the profile's pods (spec.podsPerNode and spec.podTolerationSeconds); a profile that uses denyAuth
// needs the node identity (revoking it is what denyAuth does).
func Check(plan *profiles.Plan, fc fleet.Config) error {
	return CheckShard(plan, fc, fleetname.Shard{})
}

// CheckShard is Check for shard s of the plan's fleet: the fleet must be the shard's slice of the
// plan's nodes (fleetname.Shard.Slice).
func CheckShard(plan *profiles.Plan, fc fleet.Config, s fleetname.Shard) error {
	p := plan.Profile
	if fc.PodsPerNode != p.Spec.PodsPerNode || !equalPtr(fc.PodTolerationSeconds, p.Spec.PodTolerationSeconds) {
		return fmt.Errorf("profile %s has %d pod(s) per node (toleration %s), and the fleet runs %d (toleration %s)",
			p.Metadata.Name, p.Spec.PodsPerNode, seconds(p.Spec.PodTolerationSeconds), fc.PodsPerNode, seconds(fc.PodTolerationSeconds))
	}
	if err := s.Validate(plan.Nodes); err != nil {
		return fmt.Errorf("profile %s: %w", p.Metadata.Name, err)
	}
	if first, n := s.Slice(plan.Nodes); fc.FirstIndex != first || fc.Nodes != n {
		return fmt.Errorf("profile %s was resolved for %d nodes, and the fleet has %d numbered from %d: "+
			"the runner needs shard %v's slice of the plan's fleet, %d numbered from %d",
			p.Metadata.Name, plan.Nodes, fc.Nodes, fc.FirstIndex, s, n, first)
	}
	if zones := max(p.Spec.Zones, 1); fc.Zones != zones {
		return fmt.Errorf("profile %s has %d zone(s), and the fleet labels %d", p.Metadata.Name, zones, fc.Zones)
	}
	if uses(p, profiles.VerbDenyAuth) && fc.Identity != fleet.IdentityNode {
		return fmt.Errorf("profile %s uses denyAuth, which revokes the node's own identity: it needs identity %q, and the fleet uses %q",
			p.Metadata.Name, fleet.IdentityNode, fc.Identity)
	}
	return nil
}

func equalPtr(a, b *int64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

func seconds(s *int64) string {
	if s == nil {
		return "default"
	}
	return fmt.Sprintf("%ds", *s)
}

func uses(p *profiles.Profile, v profiles.Verb) bool {
	for _, ph := range p.Spec.Phases {
		for _, a := range ph.Actions {
			if a.Do == v {
				return true
			}
		}
	}
	return false
}

// Duration is how long the phases last, from the first one's start.
func (r *Runner) Duration() time.Duration { return r.schedule.Duration() }

// Run waits until the fleet runs and its nodes are Ready (or ReadyTimeout passed), runs every phase
// on the fleet's clock, and returns once the last phase ended and the ops it started took effect.
// The fleet must be running (fleet.Run) meanwhile, and keeps running after: stopping it is the
// caller's. If ctx ends first, the run stops where it is, the record says so, and Run returns
// ctx.Err().
func (r *Runner) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return errors.New("a profile runner runs once")
	}
	r.started = true
	r.ctx = ctx
	r.mu.Unlock()
	r.startAtDeadline()
	select {
	case <-r.fleet.Running():
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.Lock()
	r.waitFor = r.sched.Clock().Now()
	r.mu.Unlock()
	r.logf("profile %s: waiting for %d nodes to be Ready before the first phase (at most %v)",
		r.name, r.nodes, r.cfg.ReadyTimeout.Round(time.Second))
	r.sched.After(0, runTask{r})
	var err error
	select {
	case <-r.done:
		r.mu.Lock()
		err = r.err
		r.mu.Unlock()
	case <-ctx.Done():
		r.abort()
		err = ctx.Err()
	}
	if r.workloads != nil {
		// After a signal too: the run's workloads go with it.
		if rmErr := r.workloads.remove(context.WithoutCancel(ctx)); rmErr != nil {
			r.logf("workloads: %v", rmErr)
			err = errors.Join(err, rmErr)
		}
	}
	return err
}

// Record returns a copy of what the run did so far.
func (r *Runner) Record() Record {
	r.recMu.Lock()
	defer r.recMu.Unlock()
	rec := r.rec
	rec.Phases = append([]PhaseRecord(nil), r.rec.Phases...)
	rec.Applied = r.applied.Items()
	if r.workloads != nil {
		w := r.workloads.record()
		rec.Workloads = &w
	}
	return rec
}

// runTask is the run's one scheduler task: each time it runs it does what is due and schedules
// itself again for what comes next.
type runTask struct{ r *Runner }

func (t runTask) Run() { t.r.step() }

func (r *Runner) step() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended || r.aborted || r.ctx.Err() != nil {
		return
	}
	now := r.sched.Clock().Now()
	if r.phase < 0 {
		if next, hold := r.holdForStart(now); hold {
			r.sched.At(next, runTask{r})
			return
		}
		if !r.readyOrTimedOut(now) {
			r.sched.After(readyPoll, runTask{r})
			return
		}
		if r.failAtStart() {
			return
		}
		r.beginPhase(0, now)
	}
	start := r.startTime()
	for {
		for r.has && !start.Add(r.pending.At).After(now) {
			r.apply(r.pending)
			r.pending, r.has = r.next()
		}
		if r.has {
			r.sched.At(start.Add(r.pending.At), runTask{r})
			return
		}
		end := start.Add(r.windows[r.phase].End)
		if now.Before(end) {
			r.sched.At(end, runTask{r})
			return
		}
		r.endPhase(now)
		if r.phase+1 == len(r.windows) {
			r.finish(now)
			return
		}
		r.beginPhase(r.phase+1, now)
	}
}

// readyOrTimedOut says whether the phases may begin: every initial node that has not failed for good
// is Ready and, in lease mode, has renewed its Lease once (a kubelet creates its Lease one renew
// interval after it registers: its first try finds no Node to own it), and their pods are Ready (or
// could not be created), or the wait timed out. With workloads to create, every node must also have
// lost the not-ready taint it registered with: the scheduler would otherwise put the workloads' pods
// on the few nodes the node lifecycle controller untainted first (at 100 nodes, 20 pods on one node
// and none on most).
func (r *Runner) readyOrTimedOut(now time.Time) bool {
	p := r.fleet.Progress()
	waited := now.Sub(r.waitFor).Round(100 * time.Millisecond)
	pods := (r.nodes - p.Failed) * r.plan.Profile.Spec.PodsPerNode
	allReady := p.Ready+p.Failed >= r.nodes && p.PodsReady+p.PodsFailed >= pods
	tainted := 0
	if r.workloads != nil {
		tainted = max(r.nodes-p.Failed-p.Schedulable, 0)
	}
	leaseless := 0
	if allReady || waited >= r.cfg.ReadyTimeout {
		leaseless = r.leaseless()
	}
	podsLine := ""
	if pods > 0 {
		podsLine = fmt.Sprintf(", %d of %d pods Ready", p.PodsReady, pods)
		if p.PodsFailed > 0 {
			podsLine += fmt.Sprintf(" (%d could not be created)", p.PodsFailed)
		}
	}
	taintLine := ""
	if tainted > 0 {
		taintLine = fmt.Sprintf(", %d still tainted not-ready or unreachable by the node lifecycle controller (no pod is scheduled there)", tainted)
	}
	switch {
	case allReady && leaseless == 0 && tainted == 0:
		r.logf("profile %s: %d of %d nodes Ready, with their Leases%s, after %v: the phases begin (%v in all)",
			r.name, p.Ready, r.nodes, podsLine, waited, r.schedule.Duration())
	case waited >= r.cfg.ReadyTimeout:
		r.logf("profile %s: only %d of %d nodes Ready (%d in lease mode without a Lease)%s%s after %v, the ready timeout: "+
			"the phases begin anyway (%v in all)", r.name, p.Ready, r.nodes, leaseless, podsLine, taintLine, waited, r.schedule.Duration())
	default:
		return false
	}
	r.recMu.Lock()
	r.rec.Start = now
	r.rec.Ready = p.Ready
	r.rec.ReadyTimedOut = !allReady || leaseless > 0
	r.recMu.Unlock()
	return true
}

// leaseless counts the running agents in lease mode that have not renewed a Lease yet.
func (r *Runner) leaseless() int {
	n := 0
	for _, a := range r.fleet.Agents() {
		if a.Running() && a.Mode() == heartbeat.ModeLease && a.Stats().LastLeaseRenewal.IsZero() {
			n++
		}
	}
	return n
}

func (r *Runner) startTime() time.Time {
	r.recMu.Lock()
	defer r.recMu.Unlock()
	return r.rec.Start
}

func (r *Runner) beginPhase(i int, now time.Time) {
	r.phase = i
	r.next, r.stop = pull(r.schedule, i)
	r.pending, r.has = r.next()
	ph := &r.plan.Profile.Spec.Phases[i]
	r.begun = make([]bool, len(ph.Actions))
	pr := PhaseRecord{Name: ph.Name, Start: now}
	r.recMu.Lock()
	r.rec.Phases = append(r.rec.Phases, pr)
	r.recMu.Unlock()
	w := r.windows[i]
	r.logf("%s phase %d/%d %s begins: %v, %s", offset(w.Start), i+1, len(r.windows), ph.Name, w.End-w.Start, plural(len(ph.Actions), "action"))
	if r.cfg.OnPhase != nil {
		r.cfg.OnPhase(r.name, pr)
	}
	if i == 0 && r.workloads != nil {
		r.workloads.begin(r.ctx, now)
	}
}

func (r *Runner) endPhase(now time.Time) {
	if r.stop != nil {
		r.stop()
		r.next, r.stop = nil, nil
	}
	r.recMu.Lock()
	r.rec.Phases[r.phase].End = now
	c := r.counts[r.phase]
	r.recMu.Unlock()
	w := r.windows[r.phase]
	line := fmt.Sprintf("%s phase %d/%d %s ends: %s applied", offset(w.End), r.phase+1, len(r.windows), w.Name, plural(c.applied, "op"))
	if c.failed > 0 {
		line += fmt.Sprintf(", %d failed (first: %s)", c.failed, c.firstErr)
	}
	r.logf("%s", line)
}

// finish marks the last phase over; the run is done once the apiserver ops it queued are.
func (r *Runner) finish(now time.Time) {
	r.ended = true
	r.logf("%s profile %s: the last phase ended", offset(r.schedule.Duration()), r.name)
	if r.admin.idle() {
		r.once.Do(func() { close(r.done) })
	}
}

// abort stops the run where it is, once ctx ended.
func (r *Runner) abort() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	r.aborted = true
	if r.stop != nil {
		r.stop()
		r.next, r.stop = nil, nil
	}
	now := r.sched.Clock().Now()
	r.recMu.Lock()
	defer r.recMu.Unlock()
	r.rec.CutShort = true
	if n := len(r.rec.Phases); n > 0 && r.rec.Phases[n-1].End.IsZero() {
		r.rec.Phases[n-1].End = now
	}
}

// record adds one applied op to the record and to its phase's counts, timed now, when it took effect:
// ops due at one moment are applied in turn, and a renewal an agent sent before its own stop must
// count as before it.
func (r *Runner) record(ev profiles.Event, err error) {
	a := Applied{Phase: ev.Phase, Action: ev.Action, Node: ev.Node, Op: ev.Op, At: r.sched.Clock().Now(),
		Group: r.plan.Profile.Spec.Phases[ev.Phase].Actions[ev.Action].Group}
	if err != nil {
		a.Err = err.Error()
	}
	r.recMu.Lock()
	r.applied.Add(a)
	c := &r.counts[ev.Phase]
	if err != nil {
		r.rec.AppliedFailed++
		c.failed++
		if c.firstErr == "" {
			c.firstErr = fmt.Sprintf("node %d %s: %v", ev.Node, ev.Op, err)
		}
	} else {
		r.rec.AppliedOK++
		c.applied++
	}
	r.recMu.Unlock()
	if r.cfg.OnApplied != nil {
		r.cfg.OnApplied(a)
	}
}

func (r *Runner) logf(format string, args ...any) {
	fmt.Fprintf(r.log, format+"\n", args...)
}

func plural(n int, word string) string {
	switch n {
	case 0:
		return "no " + word + "s"
	case 1:
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// offset is a time into the run as log lines start with it: "+1m30s", padded so that lines align.
func offset(d time.Duration) string {
	return fmt.Sprintf("%-7s", "+"+d.String())
}
