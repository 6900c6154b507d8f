// Package measure records one run for its report: it observes the fleet's nodes (package observe),
// scrapes the control plane and the fleet (package scrape) at an interval and at every phase
// boundary, and collects the actions a profile applied with each node's last heartbeats. Its Record
// (package record) is the input of report.Build.
package measure

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/internal/headtail"
	"fakelet.dev/fakelet/measure/falsealarm"
	"fakelet.dev/fakelet/measure/observe"
	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/measure/scrape"
	"fakelet.dev/fakelet/measure/storm"
	"fakelet.dev/fakelet/measure/workload"
	"fakelet.dev/fakelet/profiles"
)

// Options configure a Session.
type Options struct {
	// Sources are the control plane's metrics endpoints; the fleet's own view is always scraped.
	Sources []scrape.Source
	// ScrapeInterval is the time between scrapes; 0 means scrape.DefaultInterval.
	ScrapeInterval time.Duration
	// Client, if set, reads the server's version and, with WatchLeases, watches the fleet's Leases.
	Client kubernetes.Interface
	// WatchLeases adds a watch of kube-node-lease, for lease renewals seen and deleteLease's
	// recreation. It is one more watcher of every Lease write: leave it off to measure watch load.
	WatchLeases bool
	// OnReaction, if set, is called as each reaction arrives, live (the report's reactions are computed
	// afterwards, with their phases): the first of each event after the node's latest action, with the
	// latency from the action and, for ops that silence a node, from its last heartbeat (else -1).
	// It runs on a watch's goroutine and must be cheap.
	OnReaction func(event, group string, fromAction, fromLastRenewal time.Duration)
	// Clock is the session's: its start and end, the arrival of what its watches see, the scrapes'
	// interval and timestamps; nil: the real clock.
	Clock clock.WithTicker
	// GracePeriod is the node lifecycle controller's --node-monitor-grace-period: the window before
	// a false alarm whose requests say what caused it (package falsealarm); 0 is its default, 50 s.
	GracePeriod time.Duration
	// OnPodStartup, if set, is called with each workload pod's startup as it is first seen Running
	// (see ObserveWorkloads). It runs on a watch's goroutine and must be cheap.
	OnPodStartup func(workload.Startup)
}

// actionsKept is how many of the first and of the last actions a session keeps as samples
// (Session.Actions); every action counts in the reactions' summaries, which are kept as they close.
const actionsKept = 1000

// Session records one run.
type Session struct {
	opts     Options
	recorder *observe.Recorder
	fleetSrc *scrape.FleetSource
	scraper  *scrape.Scraper
	alarms   *falsealarm.Detector
	storms   *storm.Recorder
	// workloads follows the profile's workloads in namespace workloadNS; nil without them.
	workloads   *workload.Recorder
	workloadNS  string
	workloadEnd time.Time // when the runner's last phase ended (EndWorkloads); zero until then

	mu      sync.Mutex
	start   time.Time
	end     time.Time
	phases  []reaction.Phase
	tracker *reaction.Tracker // pairs actions with reactions as they come, in bounded memory
	actions headtail.Sample[*reaction.Action]
	server  string
	cancel  context.CancelFunc
	ctx     context.Context // the record's, once started
	done    chan struct{}
	pending sync.WaitGroup              // boundary scrapes in flight
	live    map[string]*liveAction      // node -> its latest action, for OnReaction
	latest  map[string]*reaction.Action // node -> its latest action, as kept in actions if it is
}

// liveAction is a node's latest action and the events already reported after it.
type liveAction struct {
	action reaction.Action
	seen   map[string]bool
}

// New returns a session that has not started.
func New(opts Options) *Session {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	s := &Session{opts: opts, recorder: observe.NewRecorder(opts.Clock), fleetSrc: &scrape.FleetSource{},
		tracker: reaction.NewTracker(), actions: headtail.Sample[*reaction.Action]{Keep: actionsKept}, latest: map[string]*reaction.Action{},
		alarms: falsealarm.New(opts.GracePeriod), storms: storm.NewRecorder()}
	s.recorder.OnRenewal(s.renewed)
	sources := append([]scrape.Source{s.fleetSrc}, opts.Sources...)
	s.scraper = scrape.NewScraper(sources, opts.ScrapeInterval, opts.Clock)
	if opts.OnReaction != nil {
		s.live = map[string]*liveAction{}
	}
	s.recorder.Notify(s.observed)
	return s
}

// observed pairs t with the actions before it, and reports it to OnReaction if it is the first of its
// event after its node's latest action.
func (s *Session) observed(t observe.Transition) {
	s.alarms.Observe(t)
	s.mu.Lock()
	s.tracker.Observe(t)
	ev := reaction.EventOf(t)
	if ev == "" || s.live == nil {
		s.mu.Unlock()
		return
	}
	la := s.live[t.Node]
	if la == nil || t.At.Before(la.action.At) || la.seen[ev] {
		s.mu.Unlock()
		return
	}
	la.seen[ev] = true
	a := la.action
	s.mu.Unlock()
	fromRenewal := time.Duration(-1)
	if last := a.LastHeartbeat(); reaction.Silencing(a.Op) && !last.IsZero() {
		fromRenewal = t.At.Sub(last)
	}
	s.opts.OnReaction(ev, a.Group, t.At.Sub(a.At), fromRenewal)
}

// Observe records every change the fleet's watches see to its Nodes and (if it runs pods) its pods,
// reads the fleet's requests from its tally at every scrape, and keeps each node's last requests for
// the false alarms. Call it before the fleet runs.
func (s *Session) Observe(f *fleet.Fleet) {
	f.OnNode(s.recorder.NodeHandler())
	f.OnPod(s.recorder.PodHandler())
	s.fleetSrc.Add(f.Tally())
	f.Record(s.alarms)
	f.Record(s.storms)
}

// ObserveWorkloads adds the watches of the workloads in namespace (their pods, EndpointSlices and
// Deployments) to the record, from Start on; it needs Options.Client. Called after Start, it starts
// them at once, without waiting for their first lists.
func (s *Session) ObserveWorkloads(namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.workloadNS = namespace
	s.workloads = workload.NewRecorder(s.opts.Clock, s.opts.Clock.Now())
	if s.opts.OnPodStartup != nil {
		s.workloads.OnStartup(s.opts.OnPodStartup)
	}
	if s.ctx != nil && s.opts.Client != nil {
		w, ctx, c := s.workloads, s.ctx, s.opts.Client
		go func() { _ = w.Watch(ctx, c, namespace) }()
	}
}

// EndWorkloads says when the profile's last phase ended, on the runner's record: the workloads'
// reactions end there, since the runner deletes the workloads after it, and a deletion is no
// eviction. Without it they end with the session's last phase.
func (s *Session) EndWorkloads(at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.workloadEnd = at
}

// Start begins the run's record: a first scrape, then scrapes every interval until Stop, and the
// Lease watch if asked for. ours tells the fleet's nodes from others by name (for the Lease watch).
func (s *Session) Start(ctx context.Context, ours func(name string) bool) error {
	ctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.start, s.cancel, s.done, s.ctx = s.opts.Clock.Now(), cancel, make(chan struct{}), ctx
	s.mu.Unlock()
	if c := s.opts.Client; c != nil {
		if v, err := c.Discovery().ServerVersion(); err == nil {
			s.server = v.GitVersion
		}
		if s.opts.WatchLeases {
			if err := s.recorder.WatchLeases(ctx, c, ours); err != nil {
				cancel()
				return err
			}
		}
		if s.workloads != nil {
			if err := s.workloads.Watch(ctx, c, s.workloadNS); err != nil {
				cancel()
				return err
			}
		}
	} else if s.workloads != nil {
		cancel()
		return fmt.Errorf("watch the workloads in namespace %s: the session has no client", s.workloadNS)
	}
	go func() { defer close(s.done); s.scraper.Run(ctx) }()
	return nil
}

// PhaseBegan records that phase name began at, and scrapes now (in the background: it returns at once).
func (s *Session) PhaseBegan(name string, at time.Time) {
	s.mu.Lock()
	s.endPhase(at)
	s.phases = append(s.phases, reaction.Phase{Name: name, Start: at})
	s.mu.Unlock()
	s.alarms.PhaseBegan(name, at)
	s.scrapeSoon()
}

// PhaseEnded records that the current phase ended at, and scrapes now (in the background).
func (s *Session) PhaseEnded(at time.Time) {
	s.mu.Lock()
	s.endPhase(at)
	s.mu.Unlock()
	s.scrapeSoon()
}

// endPhase ends the current phase at at, if it has not ended. s.mu must be held.
func (s *Session) endPhase(at time.Time) {
	if n := len(s.phases); n > 0 && s.phases[n-1].End.IsZero() {
		s.phases[n-1].End = at
		s.tracker.PhaseEnded(s.phases[n-1].Name, at)
	}
}

func (s *Session) scrapeSoon() {
	s.pending.Add(1)
	go func() {
		defer s.pending.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.scraper.Scrape(ctx)
	}()
}

// Applied records an op applied to a node. It must be called when the op took effect, so that the
// agent's last heartbeats are those before it: Action fills them in.
func (s *Session) Applied(a reaction.Action) {
	if s.workloads != nil {
		s.workloads.Applied(a.Phase, a.Group, a.Op, a.Node, a.At)
	}
	switch profiles.Op(a.Op) {
	case profiles.OpCrashPods, profiles.OpUnreadyPods, profiles.OpHealPods:
		// A pod fault leaves the node healthy: the node's reactions and false alarms still count
		// from its latest node op.
		return
	}
	s.alarms.Applied(a)
	if a.Op == string(profiles.OpRemove) {
		s.storms.Forget(a.Node, a.At)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Read under s.mu: a renewal the watch records after this is passed to renewed after it too.
	takeRenewal(&a, s.recorder.LastRenewTime(a.Node))
	s.tracker.Applied(a)
	kept := &a
	s.actions.Add(kept)
	s.latest[a.Node] = kept
	if s.live != nil {
		s.live[a.Node] = &liveAction{action: a, seen: map[string]bool{}}
	}
}

// renewed takes a renewal the Lease watch saw as the last one before a silencing action when its
// renewTime is before the action and later than the last renewal the agent saw answered: a renewal
// in flight when the node stopped is cancelled on the agent's side, but the server may have committed
// it, and the node lifecycle controller's grace period runs from that one. Applied takes one the watch
// saw before the action was recorded.
func (s *Session) renewed(node string, renewTime time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.latest[node]
	if a == nil || !takeRenewal(a, renewTime) {
		return
	}
	if open := s.tracker.Open(node); open != nil {
		open.LastRenewal = renewTime
	}
	if la := s.live[node]; la != nil {
		la.action.LastRenewal = renewTime
	}
}

// takeRenewal makes renewTime a's last renewal if a silenced the node after it and the agent saw no
// later one answered.
func takeRenewal(a *reaction.Action, renewTime time.Time) bool {
	if !reaction.Silencing(a.Op) || !renewTime.Before(a.At) || !renewTime.After(a.LastRenewal) {
		return false
	}
	a.LastRenewal = renewTime
	return true
}

// TaintedNodes counts the fleet's nodes that carry a taint now, as the watch saw them: a fleet that
// just registered is not steady until the node lifecycle controller removed their not-ready taints.
func (s *Session) TaintedNodes() int { return s.recorder.TaintedNodes() }

// Action describes op applied to the node of ag at at, with the agent's last successful lease renewal
// and status patch as they are now.
func Action(ag *agent.Agent, phase, group, op string, at time.Time) reaction.Action {
	st := ag.Stats()
	return reaction.Action{Phase: phase, Group: group, Op: op, Node: ag.Name(), At: at,
		LastRenewal: st.LastLeaseRenewal, LastStatusPatch: st.LastStatusPatch}
}

// UsePhases replaces the phases recorded by PhaseBegan and PhaseEnded with phases, such as a profile
// runner's record (ScenarioPhases), whose ends are exact. A phase without an end ends with the record.
func (s *Session) UsePhases(phases []reaction.Phase) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.phases = append([]reaction.Phase(nil), phases...)
	s.alarms.UsePhases(phases)
	for _, p := range phases {
		if !p.End.IsZero() {
			s.tracker.PhaseEnded(p.Name, p.End)
		}
	}
}

// Stop ends the record: a last scrape, then no more. Call it as the run ends, before the fleet
// deletes its nodes, so that the cleanup is not counted as the run's load.
func (s *Session) Stop() {
	s.mu.Lock()
	if s.cancel == nil || !s.end.IsZero() {
		s.mu.Unlock()
		return
	}
	s.end = s.opts.Clock.Now()
	if n := len(s.phases); n > 0 && s.phases[n-1].End.IsZero() {
		s.phases[n-1].End = s.end
	}
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	cancel()
	<-done
	s.pending.Wait()
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	s.scraper.Scrape(ctx)
}

// Record returns what the session recorded, with the run's description.
func (s *Session) Record(profile string, params record.Parameters, versions record.Versions, target record.Target) record.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	if versions.Server == "" {
		versions.Server = s.server
	}
	end := s.end
	if end.IsZero() {
		end = s.opts.Clock.Now()
	}
	phases := append([]reaction.Phase(nil), s.phases...)
	for i := range phases {
		if phases[i].End.IsZero() {
			phases[i].End = end
		}
	}
	recorded, stormsDropped := s.storms.Storms()
	var reactions []reaction.Summary
	if s.tracker.Actions() > 0 {
		reactions = s.tracker.Summaries(phases)
	}
	var workloads *workload.Summary
	if s.workloads != nil {
		// The reactions end with the last phase: after it the runner deletes the workloads, which
		// are no evictions.
		until := end
		if n := len(phases); n > 0 {
			until = phases[n-1].End
		}
		if !s.workloadEnd.IsZero() && s.workloadEnd.Before(until) {
			until = s.workloadEnd
		}
		workloads = s.workloads.Summary(s.workloadNS, phases, until)
	}
	// The reactions and workloads above count in the profile's phases alone; the load and storms in
	// the record's, which are one phase, "run", for a run without a profile.
	shown := record.RunPhases(phases, s.start, end)
	snaps := s.scraper.Snapshots()
	return record.Record{
		Profile: profile, Parameters: params, Versions: versions, Target: target,
		Start: s.start, End: end, Phases: shown,
		Nodes: record.Nodes{
			Timeline:          s.recorder.ReadyTimeline().Sample(s.start, end, record.TimelineStep(s.start, end)),
			Transitions:       s.recorder.TransitionCount(),
			LeaseRenewalsSeen: s.recorder.LeaseRenewals(),
		},
		Reactions:     reactions,
		FalseAlarms:   s.falseAlarms(),
		Storms:        record.Storms(recorded, shown, snaps),
		StormsDropped: stormsDropped,
		Workloads:     workloads,
		Load:          record.LoadOf(snaps, shown, s.start, end),
	}
}

// Actions returns the first and the last actions the session recorded (actionsKept of each), with
// their nodes' last heartbeats: samples for a test to read, which the record sums up as Reactions.
func (s *Session) Actions() []reaction.Action {
	s.mu.Lock()
	defer s.mu.Unlock()
	var actions []reaction.Action
	for _, a := range s.actions.Items() {
		actions = append(actions, *a)
	}
	return actions
}

// falseAlarms are the detector's counts; a run without phases has one, "run", as its report does.
// s.mu must be held.
func (s *Session) falseAlarms() []falsealarm.Count {
	counts := s.alarms.Counts()
	if len(s.phases) == 0 {
		for i := range counts {
			counts[i].Phase = "run"
		}
	}
	return counts
}
