package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	nodeutil "k8s.io/component-helpers/node/util"
)

// ErrPartitioned is what a request of a partitioned node fails with, after the client timeout.
var ErrPartitioned = errors.New("partitioned: no response before the client timeout")

// Every API call an agent makes is one of the methods below or of pod_request.go, csinode.go and
// events.go, and each goes through call; request_kinds.go lists their kinds and its watches', for
// the permissions they need.

// kubeletClient is which of the kubelet's clients sends a request of the Node (Clients).
type kubeletClient bool

const (
	heartbeatClient kubeletClient = false // the Lease and the node status loop: a 10 s timeout
	mainClient      kubeletClient = true  // registration and the CSINode: no timeout
)

func (c *caller) core(cl kubeletClient) corev1client.CoreV1Interface {
	if cl == mainClient {
		return c.r.a.main()
	}
	return c.r.a.api.Core
}

// createNode is registration's, on the kubelet's main client.
func (c *caller) createNode(n *corev1.Node) (out *corev1.Node, err error) {
	err = c.call("create", "nodes", func(ctx context.Context) error {
		out, err = c.r.a.main().Nodes().Create(ctx, n, metav1.CreateOptions{})
		return err
	})
	return out, err
}

func (c *caller) getNode(cl kubeletClient) (out *corev1.Node, err error) {
	err = c.call("get", "nodes", func(ctx context.Context) error {
		out, err = c.core(cl).Nodes().Get(ctx, c.r.a.name, metav1.GetOptions{})
		return err
	})
	return out, err
}

// patchNodeStatus is the kubelet's PatchNodeStatus of new against old, on the Node uid (withUID).
func (c *caller) patchNodeStatus(cl kubeletClient, old, new *corev1.Node, uid types.UID) (out *corev1.Node, err error) {
	old, new = withUID(old, new, uid)
	err = c.call("patch", "nodes", func(ctx context.Context) error {
		out, _, err = nodeutil.PatchNodeStatus(contextCore{c.core(cl), ctx}, types.NodeName(c.r.a.name), old, new)
		return err
	})
	return out, err
}

func (c *caller) getLease() (out *coordinationv1.Lease, err error) {
	err = c.call("get", "leases", func(ctx context.Context) error {
		out, err = c.r.a.api.Coordination.Leases(LeaseNamespace).Get(ctx, c.r.a.name, metav1.GetOptions{})
		return err
	})
	return out, err
}

func (c *caller) createLease(l *coordinationv1.Lease) (out *coordinationv1.Lease, err error) {
	err = c.call("create", "leases", func(ctx context.Context) error {
		out, err = c.r.a.api.Coordination.Leases(LeaseNamespace).Create(ctx, l, metav1.CreateOptions{})
		return err
	})
	return out, err
}

func (c *caller) updateLease(l *coordinationv1.Lease) (out *coordinationv1.Lease, err error) {
	err = c.call("update", "leases", func(ctx context.Context) error {
		out, err = c.r.a.api.Coordination.Leases(LeaseNamespace).Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	return out, err
}

// call sends one request as the network and the node's faults allow, and records it.
func (c *caller) call(verb, resource string, send func(context.Context) error) error {
	r, a := c.r, c.r.a
	due := c.due
	c.due = time.Time{}
	if err := r.ctx.Err(); err != nil {
		return err
	}
	sched := a.cfg.Scheduler
	var ready time.Time // when a tick's first request was ready to go: no clock read for the others
	if !due.IsZero() {
		ready = sched.Clock().Now()
	}
	a.mu.Lock()
	latency, partitioned := a.latency, a.partitioned
	a.mu.Unlock()
	if latency > 0 {
		if err := sched.Sleep(r.ctx, latency); err != nil {
			return err
		}
	}
	c.meter.take() // bytes of an earlier request cut short by its run's end
	start := sched.Clock().Now()
	var err error
	if partitioned {
		if err = sched.Sleep(r.ctx, RequestTimeout); err != nil {
			return err
		}
		err = fmt.Errorf("%s %s %s: %w", verb, resource, a.name, ErrPartitioned)
	} else {
		err = send(c.ctx)
	}
	if r.ctx.Err() != nil {
		return r.ctx.Err() // the kubelet died mid-request: nothing to record
	}
	c.record(verb, resource, err, start, due, ready)
	return err
}

// record records a request sent at start that ended with err: due is when its tick was due (zero
// but for a tick's first request), ready when the loop was ready to send it.
func (c *caller) record(verb, resource string, err error, start, due, ready time.Time) {
	a := c.r.a
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) {
		a.stats.reqFails.Add(1) // not found and already exists are answers the kubelet expects
	}
	if rec := a.cfg.Recorder; rec != nil {
		sent, received := c.meter.take()
		req := Request{Verb: verb, Resource: resource, Err: err, Latency: a.cfg.Scheduler.Clock().Since(start),
			RequestBytes: sent, ResponseBytes: received, Node: a.name, Sent: start, Due: due}
		if !due.IsZero() {
			req.SendLag = max(ready.Sub(due), 0)
		}
		rec.Request(req)
	}
}

// contextCore hands PatchNodeStatus, which sends with context.TODO(), a client that uses the run's
// context instead: it carries the node's identity and is cancelled when the kubelet stops.
type contextCore struct {
	corev1client.CoreV1Interface
	ctx context.Context
}

func (c contextCore) Nodes() corev1client.NodeInterface {
	return contextNodes{c.CoreV1Interface.Nodes(), c.ctx}
}

type contextNodes struct {
	corev1client.NodeInterface
	ctx context.Context
}

func (n contextNodes) Patch(_ context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Node, error) {
	return n.NodeInterface.Patch(n.ctx, name, pt, data, opts, subresources...)
}
