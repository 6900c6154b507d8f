package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fidelity"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/conditions"
	"fakelet.dev/fakelet/internal/pause"
	"fakelet.dev/fakelet/internal/run"
)

// The kubemark reference (issue 15, docs/fidelity.md): hollow kubelets and fakelet agents side by
// side on one fresh local control plane whose apiserver audits node requests, through four windows;
// then each node's requests are counted from the audit log, per window and class.

// Reference is the only reference there is: kubemark's hollow kubelet.
const Reference = "kubemark"

// Window names, in the order a reference run goes through them.
const (
	WindowStartup = "startup" // each node's first Windows.Startup, from its first request
	WindowSteady  = "steady"  // every node registered and past its startup window
	WindowPods    = "pods"    // pods the scheduler places evenly on every node, then deleted
	WindowRestart = "restart" // every kubelet killed and started again at the window's start
)

// WindowNames lists the windows in order.
var WindowNames = []string{WindowStartup, WindowSteady, WindowPods, WindowRestart}

// Name prefixes of the two kinds of node.
const (
	HollowPrefix   = "hollow"
	FakeletPrefix  = "fakelet"
	referenceFleet = "reference"
	// referenceLabel marks the pods the reference creates, on both kinds of node.
	referenceLabel = "fakelet.dev/reference"
)

// Windows are the lengths of a reference run's windows.
type Windows struct {
	Startup, Steady, Pods, Restart time.Duration
}

// DefaultWindows are docs/fidelity.md's: the startup window the issue measured, a steady window
// long enough for the kubelets' 5-minute status reports and 5-10 minute watch timeouts.
var DefaultWindows = Windows{Startup: time.Minute, Steady: 10 * time.Minute, Pods: 2 * time.Minute, Restart: 2 * time.Minute}

// DefaultReferencePodsPerNode is the pods window's pods for each node unless told otherwise.
const DefaultReferencePodsPerNode = 3

// ReferenceOptions configure a reference run.
type ReferenceOptions struct {
	Nodes       int // of each kind
	PodsPerNode int // created for every node at the pods window's start, placed by the scheduler
	Windows     Windows
	Dir         string // the control plane and the hollow nodes' work directories go under it
	BinDir      string // control plane binaries and kubemark; see FindKubemark
	Log         io.Writer
}

// Validate refuses options a run cannot use, before anything starts.
func (o ReferenceOptions) Validate() error {
	w := o.Windows
	switch {
	case o.Nodes < 1 || o.Nodes > 100:
		return fmt.Errorf("nodes must be between 1 and 100 of each kind (one kubemark process each), got %d", o.Nodes)
	case ValidatePodsPerNode(o.PodsPerNode) != nil:
		return ValidatePodsPerNode(o.PodsPerNode)
	case w.Startup <= 0 || w.Steady <= 0 || w.Pods <= 0 || w.Restart <= 0:
		return fmt.Errorf("every window must be longer than 0 (startup %v, steady %v, pods %v, restart %v)", w.Startup, w.Steady, w.Pods, w.Restart)
	}
	return nil
}

// ReferenceResult is what a reference run measured.
type ReferenceResult struct {
	Windows  []fidelity.Window
	Hollow   []string // node names of each kind
	Fakelet  []string
	Requests []fidelity.Request
	AuditLog string
	Began    time.Time
}

// Compare compares the run's windows within fidelity.DefaultBound, with known differences.
func (r ReferenceResult) Compare(known []fidelity.Known) []fidelity.Row {
	return fidelity.Compare(fidelity.Count(r.Requests, r.Windows), r.Windows, r.Hollow, r.Fakelet, known, fidelity.DefaultBound)
}

// sharedNode stands for the fleet in counts of its shared requests.
const sharedNode = "(fleet)"

// Shared counts, per window, the requests the fakelet fleet sends for all its agents at once (its
// preflight, its watch of its Nodes, its cleanup): the fleet's own client, impersonating no node.
// They are no node's, so Compare leaves them out.
func (r ReferenceResult) Shared() map[string]map[fidelity.Class]int {
	var reqs []fidelity.Request
	for _, q := range r.Requests {
		if q.Node == "" && q.UserAgent == fleet.AdminUserAgent {
			q.Node = sharedNode
			reqs = append(reqs, q)
		}
	}
	out := map[string]map[fidelity.Class]int{}
	for w, byNode := range fidelity.Count(reqs, r.Windows) {
		out[w] = byNode[sharedNode]
	}
	return out
}

// KnownDifferences is agent.FootprintDifferences for Compare.
func KnownDifferences() []fidelity.Known {
	var out []fidelity.Known
	for _, d := range agent.FootprintDifferences {
		out = append(out, fidelity.Known{Verb: d.Verb, Resource: d.Resource, Subresource: d.Subresource, Windows: d.Windows, Reason: d.Reason})
	}
	return out
}

// FindKubemark returns the kubemark binary `make controlplane` builds beside kube-apiserver.
func FindKubemark(binDir string) (string, error) {
	bins, err := controlplane.FindBinaries(binDir)
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(bins.APIServer), "kubemark")
	if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("no kubemark beside %s: run `make controlplane` (it builds kubemark too)", bins.APIServer)
	}
	return p, nil
}

// RunReference runs the reference: a fresh control plane in DIR/controlplane with an audit log,
// o.Nodes hollow kubelets and o.Nodes fakelet agents started together, then the windows one after
// the other. It stops everything it started before it returns.
func RunReference(ctx context.Context, o ReferenceOptions) (ReferenceResult, error) {
	var res ReferenceResult
	if err := o.Validate(); err != nil {
		return res, err
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	kubemark, err := FindKubemark(o.BinDir)
	if err != nil {
		return res, err
	}
	cpDir := filepath.Join(o.Dir, "controlplane")
	// A fresh control plane and fresh work directories: one left by an interrupted run holds its
	// Nodes and its audit log, which would count in this one. Both are the reference's own.
	if err := controlplane.Down(ctx, cpDir); err != nil {
		return res, fmt.Errorf("stop the control plane a reference run left in %s: %w", cpDir, err)
	}
	if err := os.RemoveAll(filepath.Join(o.Dir, "hollow")); err != nil {
		return res, err
	}
	fmt.Fprintf(o.Log, "== reference: starting a control plane with an audit log in %s\n", cpDir)
	cp, err := controlplane.Up(ctx, controlplane.Options{Dir: cpDir, BinDir: o.BinDir, AuditNodes: true})
	if err != nil {
		return res, err
	}
	defer func() {
		if err := cp.Down(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(o.Log, "stop control plane: %v\n", err)
		}
	}()
	res.AuditLog = controlplane.AuditLogPath(cp.Dir)
	adminConfig := cp.AdminConfig()
	// Apart from the fleet's own user agent, so that the reference's requests are not counted as
	// the fleet's.
	adminConfig.UserAgent = "fakelet-reference"
	admin, err := kubernetes.NewForConfig(adminConfig)
	if err != nil {
		return res, err
	}

	var hollow []*hollowNode
	defer func() {
		for _, h := range hollow {
			if err := h.kill(); err != nil {
				fmt.Fprintln(o.Log, err)
			}
		}
	}()
	for i := range o.Nodes {
		name := fleetname.NodeName(HollowPrefix, i)
		dir := filepath.Join(o.Dir, "hollow", name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return res, err
		}
		kubeconfig := filepath.Join(dir, "kubeconfig")
		if err := cp.WriteNodeKubeconfig(kubeconfig, name); err != nil {
			return res, err
		}
		h, err := newHollowNode(kubemark, dir, name, kubeconfig)
		if err != nil {
			return res, err
		}
		hollow = append(hollow, h)
		res.Hollow = append(res.Hollow, name)
		res.Fakelet = append(res.Fakelet, fleetname.NodeName(FakeletPrefix, i))
	}
	// The fleet fakelet run would start, with its defaults: the agents share its connections.
	cfg, err := fleet.Config{Nodes: o.Nodes, NamePrefix: FakeletPrefix, Fleet: referenceFleet, Footprint: agent.FootprintKubelet}.Resolve()
	if err != nil {
		return res, err
	}
	f, err := fleet.New(cfg, cp.AdminConfig())
	if err != nil {
		return res, err
	}
	// Created now, so that its default ServiceAccount, which the pods' admission needs, exists by the
	// pods window.
	if err := fleet.EnsurePodNamespace(ctx, admin, referenceFleet, ""); err != nil {
		return res, err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	fleetDone, err := run.Launch(runCtx, f, nil) // no session: the audit log is the measurement
	if err != nil {
		return res, err
	}
	res.Began = time.Now()
	defer func() {
		cancel()
		if err := <-fleetDone; err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(o.Log, "fakelet fleet: %v\n", err)
		}
	}()
	for _, h := range hollow {
		if err := h.start(); err != nil {
			return res, err
		}
	}
	all := append(append([]string(nil), res.Hollow...), res.Fakelet...)
	fmt.Fprintf(o.Log, "   started %d hollow kubelets (%s) and %d fakelet agents; waiting for every node to be Ready\n",
		len(hollow), filepath.Join(o.Dir, "hollow"), o.Nodes)
	if err := waitReady(ctx, admin, all, hollow, 3*time.Minute); err != nil {
		return res, err
	}
	// Each node's startup window began with its first request, before it registered: it is over
	// Windows.Startup from now at the latest.
	res.Windows = append(res.Windows, fidelity.Window{Name: WindowStartup, FromFirst: o.Windows.Startup})
	steady := time.Now().Add(o.Windows.Startup)
	fmt.Fprintf(o.Log, "   every node Ready after %v; steady window from %s for %v\n",
		time.Since(res.Began).Round(time.Second), steady.Format(time.TimeOnly), o.Windows.Steady)
	if err := pause.For(ctx, time.Until(steady)+o.Windows.Steady); err != nil {
		return res, err
	}
	res.Windows = append(res.Windows, fidelity.Window{Name: WindowSteady, From: steady, To: steady.Add(o.Windows.Steady)})

	from := time.Now()
	fmt.Fprintf(o.Log, "   pods window: %d pods for each node placed by the scheduler, deleted halfway through %v\n", o.PodsPerNode, o.Windows.Pods)
	placed, err := runPods(ctx, admin, all, o.PodsPerNode, o.Windows.Pods, o.Log)
	if err != nil {
		return res, err
	}
	res.Windows = append(res.Windows, fidelity.Window{Name: WindowPods, From: from, To: from.Add(o.Windows.Pods), Pods: placed})
	if err := pause.For(ctx, time.Until(from.Add(o.Windows.Pods))); err != nil {
		return res, err
	}

	from = time.Now()
	fmt.Fprintf(o.Log, "   restart window: every kubelet killed and started again, then %v\n", o.Windows.Restart)
	for _, h := range hollow {
		if err := h.kill(); err != nil {
			return res, err
		}
		if err := h.start(); err != nil {
			return res, err
		}
	}
	if err := restartAgents(f); err != nil {
		return res, err
	}
	if err := pause.For(ctx, time.Until(from.Add(o.Windows.Restart))); err != nil {
		return res, err
	}
	res.Windows = append(res.Windows, fidelity.Window{Name: WindowRestart, From: from, To: from.Add(o.Windows.Restart)})
	// The Nodes stayed Ready through a restart shorter than the grace period: what tells that the
	// kubelets came back is that they still run, and the table, which shows their requests.
	for _, h := range hollow {
		if gone, how := h.exited(); gone {
			return res, fmt.Errorf("hollow node %s exited (%s) after its restart; see %s", h.name, how, filepath.Join(h.dir, "kubemark.log"))
		}
	}

	log, err := os.Open(res.AuditLog)
	if err != nil {
		return res, err
	}
	defer log.Close()
	res.Requests, err = fidelity.ReadAudit(log)
	return res, err
}

// restartAgents restarts every agent of f at once, as the restart window restarts the hollow
// kubelets' processes: each as the restart profile op does (Fleet.RestartNode), a new process that
// knows nothing of the old one's watches, Node or pods.
func restartAgents(f *fleet.Fleet) error {
	for _, a := range f.Agents() {
		if err := f.RestartNode(a.Index(), 0); err != nil {
			return err
		}
	}
	return nil
}

// waitReady waits until every node in names exists and is Ready, and fails early if a hollow kubelet
// exits.
func waitReady(ctx context.Context, c kubernetes.Interface, names []string, hollow []*hollowNode, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		for _, h := range hollow {
			if gone, how := h.exited(); gone {
				return fmt.Errorf("hollow node %s exited (%s); see %s", h.name, how, filepath.Join(h.dir, "kubemark.log"))
			}
		}
		var notReady []string
		for _, n := range names {
			node, err := c.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil || !conditions.NodeReady(node) {
				notReady = append(notReady, n)
			}
		}
		if len(notReady) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not Ready within %v: %v", timeout, notReady)
		}
		if err := pause.For(ctx, time.Second); err != nil {
			return err
		}
	}
}
