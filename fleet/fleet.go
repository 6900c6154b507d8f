package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/scheduler"
	"fakelet.dev/fakelet/transport"
)

// Fleet is many fake kubelets sharing clients, a scheduler and a watch.
type Fleet struct {
	cfg       Config
	admin     kubernetes.Interface
	heartbeat []agent.Clients
	conns     *fleetConns // nil for a fleet on given clients
	acfg      *agent.Config
	sched     *scheduler.Scheduler
	tally     *Tally
	nodes     *nodeWatch
	pods      *podSet        // nil without pods
	boundPods *boundPodWatch // the heartbeat footprint's pod source; nil in the kubelet footprint
	// checkPermissions makes Preflight ask the apiserver whether the fleet's credential may do what
	// the run will do. New sets it; fleets on given clients (fakes in tests) check names only.
	checkPermissions bool
	checked          atomic.Bool // Preflight passed: Run does not check again
	claim            *claim      // the run's claim on its shard, taken by Preflight

	running chan struct{} // closed once agents start
	pace    *pacer        // the initial agents' registration rate

	mu sync.Mutex
	// agents holds every agent the fleet has had, by position (index - FirstIndex): the initial ones,
	// then those AddNodes appended. Entries are never replaced, so a snapshot of the slice stays valid.
	agents  []*agent.Agent
	byName  map[string]*agent.Agent // every name the fleet has held, for cleanup
	removed map[*agent.Agent]bool   // removed by RemoveNodes: stopped for good, Node deleted
	runCtx  context.Context         // the agents' context; nil until running
	closed  bool                    // shutting down: no more starts or additions
	started int
	added   int
	failed  []error // agents that gave up for good
	// registration is how the initial agents registered (Registration).
	registration Registration
}

// New builds a fleet of r against the cluster of restConfig.
func New(r Resolved, restConfig *rest.Config) (*Fleet, error) {
	if r.c == nil {
		return nil, errNotResolved
	}
	cfg := *r.c
	admin, err := adminClient(restConfig)
	if err != nil {
		return nil, fmt.Errorf("build the fleet's client: %w", err)
	}
	tally := NewTally(cfg.Heartbeat.RenewInterval)
	conns := &fleetConns{counter: &transport.Counter{}, info: Connections{Mode: cfg.ConnectionMode, Identity: IdentityOf(cfg)}}
	var clients []agent.Clients
	if cfg.ConnectionMode == ConnectionsPerNode {
		if u, _, err := rest.DefaultServerUrlFor(restConfig); err != nil || u.Scheme != "https" {
			return nil, fmt.Errorf("per-node connections are a kubelet's TLS connections, and the apiserver at %s is reached without TLS", restConfig.Host)
		}
		var creds transport.NodeCredentials
		if cfg.Identity == IdentityNode {
			creds = cfg.NodeCredentials
		}
		var c agent.Clients
		if c, conns.perNode, err = transport.PerNodeClients(restConfig, cfg.Identity == IdentityNode, creds, tally.throttledCounter(), cfg.Clock, conns.counter); err != nil {
			return nil, err
		}
		clients = []agent.Clients{c}
	} else if clients, err = transport.SharedClients(restConfig, cfg.Connections, cfg.Identity == IdentityNode, tally.throttledCounter(), transport.Path{Legacy: cfg.LegacyWire, FlushWindow: cfg.FlushWindow, Clock: cfg.Clock}, conns.counter); err != nil {
		return nil, err
	}
	f, err := newFleet(cfg, admin, clients, tally)
	if err != nil {
		return nil, err
	}
	f.conns = conns
	f.checkPermissions = true
	return f, nil
}

// fleetConns are the connections of the agents' clients.
type fleetConns struct {
	info    Connections        // without the counts
	counter *transport.Counter // counts them
	perNode *transport.PerNode // per-node connections' router, or nil
}

// Connections says how the agents reach the apiserver and how many connections they hold. A fleet
// on given clients (NewWithClients) counts none.
func (f *Fleet) Connections() Connections {
	if f.conns == nil {
		return Connections{Mode: f.cfg.ConnectionMode, Identity: IdentityOf(f.cfg)}
	}
	c := f.conns.info
	c.Open = f.conns.counter.Open()
	c.Dialed, c.DialedBy = f.conns.counter.Dials()
	return c
}

// NewWithClients builds a fleet on given clients: admin for the fleet's own requests, heartbeat for
// the agents, spread round-robin.
func NewWithClients(r Resolved, admin kubernetes.Interface, heartbeat []agent.Clients) (*Fleet, error) {
	if r.c == nil {
		return nil, errNotResolved
	}
	return newFleet(*r.c, admin, heartbeat, NewTally(r.c.Heartbeat.RenewInterval))
}

// errNotResolved refuses the zero Resolved, which no Config.Resolve made.
var errNotResolved = errors.New("the fleet's configuration is not resolved: make it with Config.Resolve")

// newFleet builds a fleet of a resolved cfg (Config.Resolve).
func newFleet(cfg Config, admin kubernetes.Interface, heartbeat []agent.Clients, tally *Tally) (*Fleet, error) {
	if len(heartbeat) == 0 {
		return nil, errors.New("no heartbeat clients")
	}
	tmpl, err := agent.NewTemplate(cfg.Template)
	if err != nil {
		return nil, err
	}
	sched := scheduler.New(cfg.Clock)
	sched.Coalesce(cfg.Coalesce)
	heartbeat = slices.Clone(heartbeat)
	for i := range heartbeat {
		if w := heartbeat[i].Watches; w != nil {
			heartbeat[i].Watches = tally.CountWatches(w)
		}
	}
	f := &Fleet{
		cfg:       cfg,
		admin:     admin,
		heartbeat: heartbeat,
		sched:     sched,
		agents:    make([]*agent.Agent, cfg.Nodes),
		byName:    make(map[string]*agent.Agent, cfg.Nodes),
		removed:   map[*agent.Agent]bool{},
		tally:     tally,
		running:   make(chan struct{}),
	}
	f.pace = newPacer(cfg.RegisterQPS, tally.Throttled)
	rec := agent.JoinRecorders(f.tally, f.pace, cfg.Recorder)
	f.acfg = &agent.Config{
		Template:  tmpl,
		Heartbeat: cfg.Heartbeat,
		Footprint: cfg.Footprint,
		Pods:      cfg.PodTiming,
		Scheduler: f.sched,
		Recorder:  rec,
		OnFatal:   f.agentFailed,
	}
	for i := range f.agents {
		index := cfg.FirstIndex + i
		name := fleetname.NodeName(cfg.NamePrefix, index)
		a := agent.New(f.acfg, heartbeat[i%len(heartbeat)], name, index, cfg.zone(index))
		f.agents[i] = a
		f.byName[name] = a
	}
	if f.nodes, err = newNodeWatch(admin, tmpl, f.liveAgent); err != nil {
		return nil, fmt.Errorf("build the fleet's node watch: %w", err)
	}
	if ownPodSource := cfg.Footprint.Kubelet() && heartbeat[0].Watches != nil; !ownPodSource {
		// Agents without a pod watch of their own (the heartbeat footprint; a fleet given clients
		// without a Watcher) learn of their pods from the fleet's one watch of bound pods.
		f.boundPods = newBoundPodWatch(admin, f.liveAgent, f.Agents)
	}
	if cfg.PodsPerNode > 0 {
		f.pods = newPodSet(f)
		f.nodes.OnNode(func(old, n *corev1.Node) {
			if old == nil {
				f.pods.nodeSeen(n.Name)
			}
		})
	}
	return f, nil
}

// Running is closed once the cluster passed the checks and agents begin to start.
func (f *Fleet) Running() <-chan struct{} { return f.running }

// OnNode adds a handler for every change the fleet's watch sees to one of its Nodes. old is nil when
// a Node first appears, and otherwise holds what the watch keeps of the Node before: its name, its
// conditions' types and statuses, and its taints. Handlers run on the watch's goroutine and must not
// modify the Nodes.
func (f *Fleet) OnNode(h func(old, new *corev1.Node)) { f.nodes.OnNode(h) }

// Agents returns every agent the fleet has had by position (node index - FirstIndex), those added
// by AddNodes included. Agents removed by RemoveNodes stay in the list, stopped for good.
func (f *Fleet) Agents() []*agent.Agent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.agents[:len(f.agents):len(f.agents)]
}

// Agent returns the agent of node number index, or nil if the fleet has no such node or removed it.
func (f *Fleet) Agent(index int) *agent.Agent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.agentLocked(index)
}

func (f *Fleet) agentLocked(index int) *agent.Agent {
	i := index - f.cfg.FirstIndex
	if i < 0 || i >= len(f.agents) || f.removed[f.agents[i]] {
		return nil
	}
	return f.agents[i]
}

// liveAgent returns the agent named name, or nil if the fleet has none or removed it.
func (f *Fleet) liveAgent(name string) *agent.Agent {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a := f.byName[name]; a != nil && !f.removed[a] {
		return a
	}
	return nil
}

// holds reports whether the fleet has ever had a node named name.
func (f *Fleet) holds(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byName[name] != nil
}

// Config returns the fleet's configuration with defaults applied.
func (f *Fleet) Config() Config { return f.cfg }

// Scheduler is the fleet's scheduler, whose clock drives every agent.
func (f *Fleet) Scheduler() *scheduler.Scheduler { return f.sched }

// Tally returns the fleet's request and heartbeat counts.
func (f *Fleet) Tally() *Tally { return f.tally }

// Record makes rec receive every agent's requests and heartbeats too, besides the tally and
// Config.Recorder. Call it before the fleet runs.
func (f *Fleet) Record(rec agent.Recorder) {
	f.acfg.Recorder = agent.JoinRecorders(f.acfg.Recorder, rec)
}

// Run checks the cluster (Preflight, unless it passed already), starts the agents at the register
// rate and heartbeats until ctx ends; then it stops every agent and, unless Keep, deletes the Nodes,
// Leases and pods it created or adopted (Cleanup). Nothing is written if the check fails. While it
// runs it renews its claim on the shard; if another run takes the claim over (this one could not
// renew it for a lease duration), the run ends at once and deletes nothing, since that run may hold
// its Nodes now.
func (f *Fleet) Run(ctx context.Context) error {
	if !f.checked.Load() {
		if err := f.Preflight(ctx); err != nil {
			return err
		}
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Renewed before any agent starts: a claim lost since Preflight (a slow start beside a run waiting
	// to take it over) stops the run before it adopts anything.
	if err := f.claim.renew(ctx, f.cfg.Clock.Now()); err != nil && errors.Is(err, errClaimLost) {
		return err
	}
	schedDone := make(chan struct{})
	go func() { f.sched.Run(runCtx); close(schedDone) }()
	f.sched.After(f.claim.duration/4, &claimRenewer{f: f, ctx: runCtx, lost: cancel})
	watchErr := f.nodes.start(runCtx)
	if watchErr == nil && f.boundPods != nil {
		watchErr = f.boundPods.start(runCtx, f.nodes.syncTimeout)
	}
	if watchErr == nil && f.pods != nil {
		watchErr = EnsurePodNamespace(runCtx, f.admin, f.cfg.Fleet, f.cfg.RunID)
	}
	if watchErr == nil && f.pods != nil {
		watchErr = f.pods.start(runCtx, f.nodes.syncTimeout)
	}
	if watchErr == nil {
		f.mu.Lock()
		f.runCtx = runCtx
		initial := f.agents[:len(f.agents):len(f.agents)]
		f.mu.Unlock()
		f.sched.After(0, f.newStarter(runCtx, initial))
		if f.pods != nil {
			f.pods.resume() // for the nodes the watch's first list showed before the fleet ran
		}
		close(f.running)
		<-runCtx.Done()
	}
	f.stopAll()
	lost := context.Cause(runCtx)
	cancel(nil)
	<-schedDone
	transport.CloseWire(f.heartbeat)
	if f.conns != nil && f.conns.perNode != nil {
		f.conns.perNode.Close()
	}
	if errors.Is(lost, errClaimLost) {
		return fmt.Errorf("fleet %s: %w; stopped, and deleted nothing", f.cfg.Fleet, lost)
	}
	end := context.WithoutCancel(ctx)
	if watchErr != nil {
		_ = f.claim.release(end, true) // no agent started
		return fmt.Errorf("watch the fleet's nodes and pods: %w", watchErr)
	}
	if f.cfg.Keep {
		return f.claim.release(end, false)
	}
	err := f.Cleanup(end)
	if rerr := f.claim.release(end, err == nil); err == nil {
		err = rerr
	}
	return err
}

// claimRenewer renews the run's claim every quarter of its duration, as a kubelet renews its Lease,
// and ends the run if another run took the claim over.
type claimRenewer struct {
	f    *Fleet
	ctx  context.Context
	lost context.CancelCauseFunc
}

func (r *claimRenewer) Run() {
	if r.ctx.Err() != nil {
		return
	}
	c := r.f.claim
	rctx, cancel := context.WithTimeout(r.ctx, c.duration/4)
	err := c.renew(rctx, r.f.cfg.Clock.Now())
	cancel()
	if errors.Is(err, errClaimLost) {
		r.lost(err)
		return
	}
	// Another failure is tried again at the next renewal, as a kubelet's lease controller does: the
	// claim lasts a whole duration.
	r.f.sched.After(c.duration/4, r)
}

func (f *Fleet) stopAll() {
	f.mu.Lock()
	f.closed = true
	all := f.agents
	f.mu.Unlock()
	for _, a := range all {
		a.Stop()
	}
}

func (f *Fleet) agentFailed(a *agent.Agent, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = append(f.failed, err)
}

// Failures returns why agents gave up for good.
func (f *Fleet) Failures() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.failed...)
}

// Progress is how far the fleet has come. Nodes counts every node the fleet has had: the initial
// ones and those AddNodes added (Added); Removed of them were removed by RemoveNodes. Pods counts the
// pods the fleet created that its watch saw and not deleted since, PodsReady those of them Ready, and
// PodsFailed the pods it gave up creating.
type Progress struct {
	Nodes, Started, Registered, Ready, Failed int
	// Schedulable counts the Ready Nodes without the node lifecycle controller's not-ready or
	// unreachable taint: those the scheduler places pods on.
	Schedulable                 int
	Added, Removed              int
	Pods, PodsReady, PodsFailed int
	Errors                      int64
	// PodAnnotationErrors counts the pods on the fleet's nodes whose fakelet.dev/ annotations did
	// not parse (agent.Stats).
	PodAnnotationErrors int64
	Elapsed             time.Duration
}

// Progress returns how many agents started, how many Nodes the watch has seen and how many are Ready.
func (f *Fleet) Progress() Progress {
	f.mu.Lock()
	p := Progress{Nodes: len(f.agents), Started: f.started, Failed: len(f.failed), Added: f.added, Removed: len(f.removed)}
	agents := f.agents[:len(f.agents):len(f.agents)]
	f.mu.Unlock()
	for _, a := range agents {
		p.PodAnnotationErrors += a.Stats().PodAnnotationErrors
	}
	p.Registered, p.Ready, p.Schedulable = f.nodes.counts()
	if f.pods != nil {
		p.Pods, p.PodsReady, p.PodsFailed = f.pods.counts()
	}
	p.Errors = f.tally.Errors()
	return p
}
