package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/internal/scheduler"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// call is one request the fake apiserver saw, and when.
type call struct {
	at     time.Duration // since t0
	verb   string        // as client-go names it: get, create, update, patch
	res    string        // resource[/subresource]
	object runtime.Object
	patch  []byte
	err    error
}

func (c call) String() string { return fmt.Sprintf("%v %s %s", c.at, c.verb, c.res) }

// harness runs agents on a fake clock against client-go's fake clientset and records every request.
type harness struct {
	t      *testing.T
	clock  *testingclock.FakeClock
	sched  *scheduler.Scheduler
	client *fake.Clientset
	cfg    *Config
	ctx    context.Context

	inline *atomic.Int32 // renewals sent through a LeaseRenewer (renewInline); nil: none

	mu     sync.Mutex
	calls  []call
	faults []fault
	uids   int
}

type harnessOption func(*Config)

// kubeletHeartbeat is the kubelet's heartbeat configuration, resolved as a fleet resolves it.
func kubeletHeartbeat(tb testing.TB) heartbeat.Config {
	tb.Helper()
	hb, err := heartbeat.Config{}.Resolve()
	if err != nil {
		tb.Fatal(err)
	}
	return hb
}

func newHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	h := &harness{t: t, clock: testingclock.NewFakeClock(t0), client: fake.NewClientset()}
	h.sched = scheduler.New(h.clock)
	tmpl, err := NewTemplate(TemplateOptions{Fleet: "test", Images: MaxImages})
	if err != nil {
		t.Fatal(err)
	}
	// rand 0.5: every jittered period is 1.02 x its base and the report delay is zero, so the test
	// can state exact times.
	h.cfg = &Config{Template: tmpl, Heartbeat: kubeletHeartbeat(t), Footprint: FootprintHeartbeat, Scheduler: h.sched, Rand: func() float64 { return 0.5 }}
	for _, o := range opts {
		o(h.cfg)
	}
	h.client.PrependReactor("*", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		c := call{at: h.clock.Now().Sub(t0), verb: action.GetVerb(), res: action.GetResource().Resource}
		if sub := action.GetSubresource(); sub != "" {
			c.res += "/" + sub
		}
		switch a := action.(type) {
		case k8stesting.CreateAction:
			c.object = a.GetObject()
			// The fake tracker assigns no UIDs; owner references and restarts need them.
			if m, err := meta.Accessor(c.object); err == nil && m.GetUID() == "" && a.GetSubresource() == "" {
				h.uids++
				m.SetUID(types.UID(fmt.Sprintf("uid-%d", h.uids)))
			}
		case k8stesting.UpdateAction:
			c.object = a.GetObject()
		case k8stesting.PatchAction:
			c.patch = a.GetPatch()
		}
		for i := range h.faults {
			f := &h.faults[i]
			if f.n > 0 && f.verb == c.verb && f.res == c.res {
				f.n--
				c.err = f.err
				h.calls = append(h.calls, c)
				return true, nil, f.err
			}
		}
		h.calls = append(h.calls, c)
		if tr, ok := c.object.(*authenticationv1.TokenRequest); ok && c.res == "serviceaccounts/token" {
			return true, issueToken(tr, h.clock.Now()), nil // the tracker has no TokenRequest
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	h.ctx = ctx
	done := make(chan struct{})
	go func() { h.sched.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

func (h *harness) agent(name string, index int) *Agent {
	var coord coordinationv1client.CoordinationV1Interface = h.client.CoordinationV1()
	if h.inline != nil {
		coord = asyncCoordination{coord, h.inline}
	}
	return New(h.cfg, Clients{Core: h.client.CoreV1(), Coordination: coord}, name, index, "")
}

// renewInline makes the harness's agents renew through a LeaseRenewer, as a fleet's do; it counts
// the renewals sent so.
func (h *harness) renewInline() *atomic.Int32 {
	h.inline = new(atomic.Int32)
	return h.inline
}

// asyncCoordination is a LeaseRenewer over a clientset's Coordination: the Update runs on a goroutine
// of its own and done is called from there, as a fleet's transport calls it from a connection's
// reader.
type asyncCoordination struct {
	coordinationv1client.CoordinationV1Interface
	sent *atomic.Int32
}

func (c asyncCoordination) RenewLease(ctx context.Context, lease *coordinationv1.Lease, done func(*coordinationv1.Lease, error)) bool {
	c.sent.Add(1)
	go func() { done(c.Leases(lease.Namespace).Update(ctx, lease, metav1.UpdateOptions{})) }()
	return true
}

// issueToken answers tr at now as the apiserver does: its TTL defaulted to an hour, and the token
// expiring after it.
func issueToken(tr *authenticationv1.TokenRequest, now time.Time) *authenticationv1.TokenRequest {
	out := tr.DeepCopy()
	if out.Spec.ExpirationSeconds == nil {
		out.Spec.ExpirationSeconds = ptr.To[int64](3600)
	}
	out.Status = authenticationv1.TokenRequestStatus{Token: "token",
		ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*out.Spec.ExpirationSeconds) * time.Second))}
	return out
}

// advance runs the fleet's clock to t0+d.
func (h *harness) advance(d time.Duration) { h.sched.Advance(h.clock, t0.Add(d)) }

// take returns the requests recorded since the last take.
func (h *harness) take() []call {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.calls
	h.calls = nil
	return c
}

type fault struct {
	verb, res string
	n         int
	err       error
}

// failNext makes the next n requests matching verb and resource fail with err. They are recorded.
func (h *harness) failNext(verb, resource string, n int, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults = append(h.faults, fault{verb, resource, n, err})
}

func summary(calls []call) string {
	s := make([]string, len(calls))
	for i, c := range calls {
		s[i] = c.verb + " " + c.res
	}
	return strings.Join(s, "; ")
}

func (h *harness) node(name string) *corev1.Node {
	h.t.Helper()
	n, err := h.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", name)
	if err != nil {
		h.t.Fatalf("get node %s: %v", name, err)
	}
	return n.(*corev1.Node)
}
