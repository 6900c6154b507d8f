// Package agent is one fake kubelet: it registers a Node, renews its Lease and patches its NodeStatus
// with the request sequence and timing of a v1.37 kubelet, and can be stopped, restarted, made
// unhealthy or cut off by a profile.
//
// Where the kubelet sleeps in a goroutine, an agent schedules itself on a shared scheduler.Scheduler,
// so that ten thousand idle agents cost memory for their state only; every wait is on the injected
// clock. The request paths mirror their upstream sources call by call:
//   - lease.go: k8s.io/component-helpers/apimachinery/lease controller (Run, never Start/Stop) with the
//     kubelet's node-owner post-process function;
//   - register.go: registerWithAPIServer and tryRegisterWithAPIServer;
//   - status.go: syncNodeStatus, updateNodeStatus and tryUpdateNodeStatus, patching with
//     k8s.io/component-helpers/node/util.PatchNodeStatus, or, for a report that moves heartbeat times
//     only, with the same patch written directly (status_patch.go); its loop sleeps between reports
//     while nothing can change the status, and resumes on its tick grid (status_sleep.go);
//   - pods.go, pod_admit.go, pod_runtime.go, pod_status.go, pod_sync.go: the kubelet for every pod bound
//     to the node, whoever created it: HandlePodAdditions' admission, a fake container runtime (init
//     containers, restarts with CrashLoopBackOff, containers that end), and the status manager's GET
//     and PatchPodStatus, and the final DELETE of a pod someone deleted (docs/workloads.md).
//
// The rest of a kubelet's requests are made in the kubelet footprint (FootprintKubelet, the
// default; FootprintHeartbeat leaves them out):
//   - watches.go and reflector.go: the watches of the kubelet's reflectors (client-go v0.37's
//     Reflector: streaming lists, bookmarks, jittered timeouts, resume, relist after 410 Gone, its
//     backoff), opened through a Watcher that decodes of each event only what a reflector needs to
//     resume;
//   - object_watches.go and pod_refs.go: the configmap and secret managers' watch of each ConfigMap
//     and Secret the node's pods reference (kube-root-ca.crt for a pod with a service account
//     token volume), from the pod's first sync until the last pod referencing it is finished;
//   - tokens.go: the token manager's TokenRequest for each service account token projection of a
//     pod's volumes, at the pod's first sync and at the resync that finds the token due for refresh;
//   - csinode.go: the CSI plugin's CSINode at start;
//   - events.go: the kubelet's Events through the event recorder's spam filter and correlator;
//   - pod_watch.go: the pod watch's events, decoded into pods, are the node's pods (the heartbeat
//     footprint's come from the fleet's watch of bound pods instead);
//   - pod_sync.go: the status manager's GET before each patch, the stopping report before a deleted
//     pod's terminal one, and the GET before its DELETE.
//
// Deliberate differences from a kubelet, each for cost: the agent's view of its own Node and pods
// comes from the responses to its requests and from the watch the fleet shares, not from its own
// watches, which are read only for their resource versions (a kubelet keeps a store per informer),
// except the pod watch, whose pods it keeps as far as their status needs; its containers are a fake
// runtime's, timed by PodTiming and the pods' annotations (volumes are not attached, no probes run,
// no kubelet server answers exec or logs); and it does not close idle connections after repeated
// heartbeat failures (connections are shared by the fleet).
//
// Differences not reproduced yet in the kubelet footprint, each known: a streaming list that fails
// other than by 410 or a refused connection is retried as a streaming list after a backoff, where
// client-go falls back to a LIST; a failed first token request is retried at the pod loop's
// next sync, where the kubelet's volume manager retries the mount with its own backoff; the
// configmap and secret managers neither stop the watch of an immutable object after reading it nor
// resume a watch they stopped for idleness from its last resource version (the agent reads no
// object, and lists the newest state again); the discovery GET a hollow kubelet sends at start is not sent, its source in the kubelet not being
// identified; the registration goes straight to Ready, without the first NotReady report and the
// fast update a kubelet sends before its runtime is up; only the Ready condition's changes are
// recorded as Events after start, not the pressure conditions'; the event correlator's aggregation of
// more than 10 similar events in 10 minutes is not reproduced (an agent never sends that many about
// one object).
//
// Deliberate differences for ownership, so that fakelet never takes over or writes what it did not
// create: the Node it registers and the Lease it creates carry the fleet label and the run's ID
// (RunAnnotation; the first renewal of an adopted Lease sets it), and an agent never renews a Lease
// that another Node owns or that has no owner, which a kubelet would, nor adopts a Node or renews a
// Lease that another run of its fleet holds unless its fleet knows that run to have stopped, judged
// by what the server shows and never by comparing that run's timestamps with its own clock
// (held.go); an agent that gives up gives up its Node and Lease too, for its fleet not to delete them. Its status patches carry the
// UID of the Node it registered or adopted as metadata.uid, which the apiserver refuses (422, the UID
// is immutable) on any other Node of that name, so a Node replaced mid-run is never written to; the
// request is otherwise the kubelet's (status_patch.go, withUID). In the kubelet footprint, an existing
// CSINode is left as it is, where a kubelet would update its annotation or delete it when another Node
// owns it; the CSINode an agent creates is owned by its Node and goes with it (the garbage collector
// deletes it after the fleet's cleanup deletes the Node); its Events are left to expire with the
// apiserver's event TTL, as a kubelet leaves them.
//
// Where the requests go: an agent sends every request through the Clients it is given, after its
// faults apply (request.go, caller), and knows nothing of what is behind them. Its timing is a
// resolved heartbeat.Config (Config.Heartbeat). In a fleet, Clients.Coordination is the transport's
// leanCoordination (transport/lease_writer.go, handed out by transport/clients.go): a lease renewal's
// Update is not client-go's but the transport's leaseWriter, which encodes the Lease as
// protobuf and PUTs it over the fleet's own HTTP/2 client (package wire), impersonating the node
// unless the fleet runs as its own identity, and, being a LeaseRenewer, takes the lease loop's common
// tick without a worker's wait (lease_inline.go); the status PATCH goes the same way; everything
// else, the Lease's GET and POST included, goes through client-go. Tests give an agent client-go's
// fake clientset instead.
package agent

import (
	"context"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	storagev1client "k8s.io/client-go/kubernetes/typed/storage/v1"

	"fakelet.dev/fakelet/heartbeat"
)

// Clients are the API clients an agent calls. Agents of a fleet share them: whose identity a request
// carries travels in its context (see IdentityFrom).
type Clients struct {
	// Core and Coordination are the kubelet's heartbeat client, with its 10 s timeout
	// (RequestTimeout): the Lease, and the node status loop's GET and PATCH of the Node.
	Core         corev1client.CoreV1Interface
	Coordination coordinationv1client.CoordinationV1Interface
	// Main is the kubelet's main client and its event client, which have no timeout: registration,
	// the CSINode's GET of the Node, Events and pods. Under load the difference is what the
	// apiserver does with a request: one without a timeout may wait 15 s in API Priority and
	// Fairness's queues, one with the heartbeat client's 10 s only 2.5 s before its 429. Nil: Core
	// sends these too.
	Main corev1client.CoreV1Interface
	// Storage creates the node's CSINode in the kubelet footprint, on the main client (no timeout);
	// nil creates none.
	Storage storagev1client.StorageV1Interface
	// Watches carries the watches of the kubelet footprint; nil opens none.
	Watches Watcher
}

// Agent is one fake kubelet.
type Agent struct {
	cfg       *Config
	api       Clients
	name      string
	user      string // system:node:<name>
	index     int
	zone      string
	shape     *shape // the fleet's or its group's, shared
	addresses []corev1.NodeAddress
	ids       [3]string // machine ID, system UUID, boot ID

	denied atomic.Bool // the node's credential is revoked (denyAuth)

	mu          sync.Mutex
	run         *run // nil while stopped
	health      Health
	mode        heartbeat.Mode
	latency     time.Duration
	partitioned bool
	server      *keptNode            // the newest Node the server returned or the fleet saw (kept_node.go)
	pods        map[podKey]*podState // the pods bound to the node (pods.go); they outlive a run, as containers outlive a kubelet
	deleted     map[podKey]types.UID // pods whose final DELETE the agent sent, until the watch sees them gone
	podList     uint32               // the pod list being read (ReplacePods)
	podIPs      uint32               // the pod IPs handed out
	podFault    PodFault
	fatal       error
	// nodeUID and leaseUID are the Node and Lease this agent last created or adopted: what its fleet
	// deletes at the end of the run, and nothing else.
	nodeUID, leaseUID types.UID

	stats stats
}

// New returns a stopped agent for node name, the fleet's node number index, in zone (may be empty).
func New(cfg *Config, api Clients, name string, index int, zone string) *Agent {
	a := &Agent{
		cfg:   cfg,
		api:   api,
		name:  name,
		user:  NodeUserPrefix + name,
		index: index,
		zone:  zone,
		shape: cfg.Template.shapeOf(index),
		ids:   machineIDs(name),
		mode:  cfg.Heartbeat.Mode,
	}
	a.addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: cfg.Template.ipFor(index)},
		{Type: corev1.NodeHostName, Address: name},
	}
	return a
}

// main is the kubelet's main client (Clients.Main).
func (a *Agent) main() corev1client.CoreV1Interface {
	if a.api.Main != nil {
		return a.api.Main
	}
	return a.api.Core
}

// kubelet says whether the agent makes a kubelet's whole footprint.
func (a *Agent) kubelet() bool { return a.cfg.Footprint.Kubelet() }

// Name is the agent's node name.
func (a *Agent) Name() string { return a.name }

// Index is the agent's node number in its fleet.
func (a *Agent) Index() int { return a.index }

// InternalIP is the address the agent's Node reports.
func (a *Agent) InternalIP() netip.Addr { return netip.MustParseAddr(a.addresses[0].Address) }

// Start starts the kubelet, or restarts it after Stop: it registers (adopting its existing Node),
// patches its status at once and renews its lease. It does nothing if the agent runs or has failed.
// The agent stops for good when ctx ends.
func (a *Agent) Start(ctx context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.run != nil || a.fatal != nil {
		return
	}
	r := newRun(a, ctx)
	a.run = r
	a.cfg.Scheduler.After(0, &r.status)
	if a.mode == heartbeat.ModeLease {
		r.lease.active = true
		a.cfg.Scheduler.After(0, &r.lease)
	}
	if a.kubelet() {
		r.events.nodeEventOf(a.nodeUID, reasonStarting, messageStartingKubelet)
		if a.api.Storage != nil {
			a.cfg.Scheduler.After(0, &r.csiNode)
		}
		if a.api.Watches != nil {
			r.watches = a.kubeletReflectors(r)
			r.recovery.unsynced = len(r.watches)
			for _, f := range r.watches {
				a.cfg.Scheduler.After(0, f)
			}
		}
	}
}

// Stop kills the kubelet: its requests in flight are cancelled and it sends nothing more.
func (a *Agent) Stop() {
	a.mu.Lock()
	r := a.detachRunLocked()
	a.mu.Unlock()
	a.endRun(r)
}

// detachRunLocked takes the running run off the agent. A sleeping status loop ends at its next
// tick, as a ticking one does, rather than keeping the stopped run until its report was due.
func (a *Agent) detachRunLocked() *run {
	r := a.run
	a.statusMayChangeLocked()
	a.run = nil
	return r
}

// endRun cancels a run detached from the agent, if there was one.
func (a *Agent) endRun(r *run) {
	if r == nil {
		return
	}
	// The fleet stops its agents after its own context ended: that is the end of the run, not a
	// kubelet falling behind. (The context Start was given, not the run's own: a parent's
	// cancellation reaches its children a moment after its Done channel closes.)
	fleetEnded := r.parent.Err() != nil
	r.rc.cancel(context.Canceled)
	a.ended(r.caughtUp() && !fleetEnded)
}

// Forget drops what a stopped agent keeps of its Node and its pods. A fleet keeps the agent of a node
// it removed, for its statistics and the UIDs its cleanup deletes; without Forget, a churn that
// removes many nodes would keep a Node and its pods for each of them for the rest of the run.
func (a *Agent) Forget() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.server, a.pods, a.deleted = nil, nil, nil
}

// Running reports whether the kubelet runs.
func (a *Agent) Running() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.run != nil
}

// Err returns why the agent gave up for good, or nil.
func (a *Agent) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fatal
}

// SetHealth changes what the kubelet reports; the next status sync (within the update frequency)
// patches the change, as a kubelet would.
func (a *Agent) SetHealth(change func(*Health)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	change(&a.health)
	a.statusMayChangeLocked()
}

// Health returns what the kubelet currently reports.
func (a *Agent) Health() Health {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.health
}

// SetPartitioned cuts the node off the network, or heals it: while cut, each request hangs until the
// client timeout and fails.
func (a *Agent) SetPartitioned(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.partitioned = on
}

// SetLatency delays each of the node's requests by d before it is sent; 0 removes the delay.
func (a *Agent) SetLatency(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.latency = d
}

// SetAuthDenied revokes the node's credential, or restores it: while revoked every request is
// rejected by the apiserver.
func (a *Agent) SetAuthDenied(on bool) { a.denied.Store(on) }

// SetMode switches the heartbeat mode; a switch to lease starts the lease loop at once.
func (a *Agent) SetMode(m heartbeat.Mode) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mode = m
	a.statusMayChangeLocked()
	if r := a.run; r != nil && m == heartbeat.ModeLease && !r.lease.active {
		r.lease.active = true
		a.cfg.Scheduler.After(0, &r.lease)
	}
}

// Mode returns the agent's heartbeat mode.
func (a *Agent) Mode() heartbeat.Mode {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mode
}

// ObserveNode gives the agent a newer view of its Node, from a watch. The agent keeps what it needs
// of n (keep), perhaps n itself: neither the caller nor anyone else may write to n afterwards. n of
// the version the agent keeps is the watch's decoding of the agent's own write, whose answer came
// first: it is dropped, and the status loop is not woken for a Node that has not changed.
func (a *Agent) ObserveNode(n *corev1.Node) {
	if n != nil && !a.knows(n) {
		a.keepNewer(a.keep(a.cfg.Template.Compact(n)))
	}
}

// knows reports whether n is the version of the Node the agent keeps. A Node without a
// resourceVersion (the fake clientset's) is no version.
func (a *Agent) knows(n *corev1.Node) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.server != nil && n.ResourceVersion != "" && n.ResourceVersion == a.server.rv
}

// remember keeps n, an answer of the agent's own request compacted (Template.Compact), as the
// server's view of the Node if it is newer than the one kept. The one kept stays when n is its
// version again (the watch's copy, seen before this answer came), so that the status loop, which
// knows the kept Node by its pointer, is not woken for nothing.
func (a *Agent) remember(n *corev1.Node) {
	if n != nil && !a.knows(n) {
		a.keepNewer(a.keep(n))
	}
}

// keepNewer keeps k if it is newer than the Node kept.
func (a *Agent) keepNewer(k *keptNode) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.server == nil || newer(k.rv, a.server.rv) {
		a.server = k
		a.statusMayChangeLocked()
	}
}

// KeepsNodeWhole reports whether the Node the agent keeps is not the template's shape, so that it is
// kept whole (kept_node.go), at several times the memory; false before the agent keeps one.
func (a *Agent) KeepsNodeWhole() bool {
	k := a.serverKept()
	return k != nil && k.whole != nil
}

// serverKept is the Node the agent keeps, nil for none yet.
func (a *Agent) serverKept() *keptNode {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.server
}

// serverNode is the Node the agent keeps as a Node (see node), nil for none yet.
func (a *Agent) serverNode() *corev1.Node {
	if k := a.serverKept(); k != nil {
		return a.node(k)
	}
	return nil
}

// Owned returns the UIDs of the Node and Lease the agent last created or adopted ("" for none yet).
func (a *Agent) Owned() (node, lease types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nodeUID, a.leaseUID
}

func (a *Agent) ownNode(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.nodeUID = uid
}

func (a *Agent) ownLease(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.leaseUID = uid
}

// fail stops the agent for good, and gives up its Node and Lease: an agent fails when they turn out
// to be another's (another fleet's Node, another run's Lease), and what it adopted may be the very
// objects the other run holds, so its fleet must not delete them at the end.
func (a *Agent) fail(err error) {
	a.mu.Lock()
	first := a.fatal == nil
	if first {
		a.fatal = err
	}
	a.nodeUID, a.leaseUID = "", ""
	r := a.detachRunLocked()
	a.mu.Unlock()
	a.endRun(r)
	if first && a.cfg.OnFatal != nil {
		a.cfg.OnFatal(a, err)
	}
}

// newer compares resource versions as etcd revisions; an unparsable one counts as newer, since the
// server's word is the last one.
func newer(rv, than string) bool {
	x, err1 := strconv.ParseUint(rv, 10, 64)
	y, err2 := strconv.ParseUint(than, 10, 64)
	if err1 != nil || err2 != nil {
		return true
	}
	return x >= y
}

// run is one life of the kubelet process, from Start to Stop: a restart is a new run with fresh state,
// so a request still finishing from the old one cannot disturb it.
type run struct {
	a      *Agent
	parent context.Context // the one Start was given
	ctx    context.Context // &rc
	rc     runContext
	lease  leaseLoop
	status statusLoop
	pods   podLoop
	// The kubelet footprint's loops, nil in the heartbeat footprint: every node keeps its run for
	// as long as it runs, and the heartbeat footprint's fleets are the largest.
	*kubeletLoops
	// nodeEventsSent: the Node's first conditions were recorded as Events in this run.
	nodeEventsSent bool
	recovery       recovery // guarded by Agent.mu (recovery.go)
}

// kubeletLoops are a run's loops of the kubelet footprint: the kubelet's reflectors (watches.go),
// its CSINode (csinode.go) and its Events (events.go).
type kubeletLoops struct {
	watches []*reflector
	objects objectWatches // the configmap and secret managers' (object_watches.go)
	tokens  podTokens     // the token manager's (tokens.go)
	csiNode csiNodeLoop
	events  eventRecorder
}

// newRun returns a run of a within ctx, its loops not scheduled yet.
func newRun(a *Agent, ctx context.Context) *run {
	r := &run{a: a, parent: ctx}
	r.rc.init(ctx, a)
	r.ctx = &r.rc
	r.lease.r, r.status.r, r.pods.r = r, r, r
	r.status.wake.s = &r.status
	r.lease.c.init(r)
	r.status.c.init(r)
	r.pods.c.init(r)
	if a.kubelet() {
		r.kubeletLoops = &kubeletLoops{}
		r.csiNode.r, r.events.r, r.objects.r, r.tokens.r = r, r, r, r
		r.objects.start = a.cfg.Scheduler.Clock().Now()
		r.csiNode.c.init(r)
		r.events.c.init(r)
		r.tokens.c.init(r)
	}
	return r
}

// caller sends one loop's requests: in the run's context, with the loop's own Meter, since the two
// loops of a run may have requests in flight at the same time.
type caller struct {
	r     *run
	ctx   context.Context // &cc
	cc    callContext
	meter Meter
	// due is when the loop's current tick was due on the scheduler, until its first request takes it
	// (call): the send lag is fakelet's own delay in sending a heartbeat. Zero for a tick run at once.
	due time.Time
}

func (c *caller) init(r *run) {
	c.r = r
	c.cc = callContext{run: &r.rc, meter: &c.meter}
	c.ctx = &c.cc
}
