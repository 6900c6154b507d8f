package agent

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"
)

// tokenSent records where each token request went and as whom: "NAMESPACE/SERVICEACCOUNT as USER GROUPS".
type tokenSent struct {
	mu   sync.Mutex
	sent []string
}

func (s *tokenSent) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.sent
	s.sent = nil
	return out
}

// tokenCore is a CoreV1 client whose token requests are recorded before they go on.
type tokenCore struct {
	corev1client.CoreV1Interface
	s *tokenSent
}

func (c tokenCore) ServiceAccounts(ns string) corev1client.ServiceAccountInterface {
	return tokenServiceAccounts{c.CoreV1Interface.ServiceAccounts(ns), c.s, ns}
}

type tokenServiceAccounts struct {
	corev1client.ServiceAccountInterface
	s  *tokenSent
	ns string
}

func (sa tokenServiceAccounts) CreateToken(ctx context.Context, name string, tr *authenticationv1.TokenRequest, opts metav1.CreateOptions) (*authenticationv1.TokenRequest, error) {
	user, groups, _ := IdentityFrom(ctx)
	sa.s.mu.Lock()
	sa.s.sent = append(sa.s.sent, fmt.Sprintf("%s/%s as %s %v", sa.ns, name, user, groups))
	sa.s.mu.Unlock()
	return sa.ServiceAccountInterface.CreateToken(ctx, name, tr, opts)
}

// tokenAgent is kubeletAgent with its token requests recorded.
func tokenAgent(t *testing.T, fp Footprint) (*harness, *Agent, *tokenSent) {
	h := newHarness(t, func(c *Config) { c.Footprint = fp })
	s := &tokenSent{}
	a := New(h.cfg, Clients{Core: tokenCore{h.client.CoreV1(), s}, Coordination: h.client.CoordinationV1(), Watches: &fakeWatcher{h: h}},
		"fakelet-00007", 7, "")
	return h, a, s
}

// tokenCalls returns the token requests among calls.
func tokenCalls(calls []call) []call {
	var out []call
	for _, c := range calls {
		if c.res == "serviceaccounts/token" {
			out = append(out, c)
		}
	}
	return out
}

// podEvent says whether c records an Event of a pod's container.
func podEvent(c call) bool {
	ev, ok := c.object.(*corev1.Event)
	return ok && c.verb == "create" && ev.InvolvedObject.Kind == "Pod"
}

// startTokenPod starts a with pod p1 and returns when its token was first requested (since t0).
func startTokenPod(t *testing.T, h *harness, a *Agent) time.Duration {
	t.Helper()
	startPods(t, h, a, 5*time.Second, tokenPod("p1", "uid-p1", ""))
	toks := tokenCalls(h.take())
	if len(toks) != 1 {
		t.Fatalf("%d token requests at the pod's first sync, want 1", len(toks))
	}
	return toks[0].at
}

// wantTokenAt advances to d and checks that the pod's one token request of the interval came at d.
func wantTokenAt(t *testing.T, h *harness, d time.Duration) {
	t.Helper()
	h.advance(d - time.Second)
	if toks := tokenCalls(h.take()); len(toks) != 0 {
		t.Fatalf("token requested at %v, want none before %v", toks, d)
	}
	h.advance(d)
	if toks := tokenCalls(h.take()); len(toks) != 1 || toks[0].at != d {
		t.Fatalf("token requests %v, want one at %v", toks, d)
	}
}

// rand 0.5: the pod is resynced every 75 s (a minute and a quarter of it) and the manager's jitter is
// 5 s, so a token of 3607 s, due for refresh 721 s before it expires, is refreshed at the first
// resync more than 2881 s after its issue: the 39th, 2925 s after it.
const tokenRefreshAfter = 2925 * time.Second

// A kubelet requests a pod's token as the node when it first mounts its volume, bound to the pod,
// before the containers start; then at the first resync that finds it older than 80% of its TTL
// (less the jitter), again and again.
func TestTokenRequestedAtMountAndRefreshed(t *testing.T) {
	h, a, sent := tokenAgent(t, FootprintKubelet)
	startPods(t, h, a, 5*time.Second, tokenPod("p1", "uid-p1", ""))
	calls := h.take()
	toks := tokenCalls(calls)
	if len(toks) != 1 {
		t.Fatalf("%d token requests at the pod's first sync, want 1: %s", len(toks), summary(calls))
	}
	tr, _ := toks[0].object.(*authenticationv1.TokenRequest)
	want := authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3607),
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p1", UID: "uid-p1"}}
	if tr == nil || !equality.Semantic.DeepEqual(tr.Spec, want) {
		t.Errorf("token request %+v, want spec %+v", tr, want)
	}
	if got := sent.take(); len(got) != 1 || got[0] != "fakelet/default as system:node:fakelet-00007 [system:nodes]" {
		t.Errorf("token requests went %v, want to the pod's service account, as the node", got)
	}
	token, events := -1, -1
	for i, c := range calls {
		switch {
		case c.res == "serviceaccounts/token":
			token = i
		case podEvent(c) && events < 0:
			events = i
		}
	}
	if events < 0 || token > events {
		t.Errorf("requests %s: want the token before the container's Events", summary(calls))
	}

	// The Running report a relist after the first sync is the pod worker's last sync: its
	// resyncs, which refresh the token, count from it.
	m := toks[0].at + plegRelistPeriod
	wantTokenAt(t, h, m+tokenRefreshAfter)
	wantTokenAt(t, h, m+2*tokenRefreshAfter)
	if n := len(sent.take()); n != 2 {
		t.Errorf("%d refreshes sent through the client, want 2", n)
	}
}

// A restarted kubelet's manager starts empty: its first sync of the pod requests the token again,
// and the old run's refresh is not sent; a pod being deleted is not resynced, so its token is not
// refreshed, and it is forgotten once the pod is finished.
func TestTokenAfterRestartAndDeletion(t *testing.T) {
	h, a, _ := tokenAgent(t, FootprintKubelet)
	m := startTokenPod(t, h, a)
	h.advance(m + 1000*time.Second)
	a.Stop()
	a.Start(h.ctx)
	h.advance(m + 1005*time.Second)
	toks := tokenCalls(h.take())
	if len(toks) != 1 {
		t.Fatalf("%d token requests after the restart, want 1", len(toks))
	}
	r := toks[0].at
	wantTokenAt(t, h, r+tokenRefreshAfter) // and none at the first run's m+tokenRefreshAfter, before it

	deletePod(t, h, a, "p1")
	h.advance(r + 3*tokenRefreshAfter)
	if toks := tokenCalls(h.take()); len(toks) != 0 {
		t.Errorf("token requested at %v for a deleted pod", toks)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := len(a.run.tokens.pods); n != 0 {
		t.Errorf("the manager keeps the tokens of %d finished pods", n)
	}
}

// A pod whose first token request fails stays Pending, its containers waiting for the volume, until
// a later sync gets the token; a failed refresh is tried again at the next resync.
func TestTokenRequestFailures(t *testing.T) {
	h, a, _ := tokenAgent(t, FootprintKubelet)
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "default", fmt.Errorf("no"))
	h.failNext("create", "serviceaccounts/token", 1, forbidden)
	startPods(t, h, a, 5*time.Second, tokenPod("p1", "uid-p1", ""))
	calls := h.take()
	toks := tokenCalls(calls)
	if len(toks) != 1 || toks[0].err == nil {
		t.Fatalf("token requests %v, want one refused", toks)
	}
	for _, c := range calls {
		if podEvent(c) {
			t.Errorf("requests %s: the container started without its token", summary(calls))
			break
		}
	}
	if _, ready := a.Pods(); ready != 0 {
		t.Fatal("the pod is Ready without its token")
	}
	h.advance(toks[0].at + podSyncPeriod)
	toks = tokenCalls(h.take())
	if len(toks) != 1 || toks[0].err != nil {
		t.Fatalf("token requests %v at the next sync, want one granted", toks)
	}
	if _, ready := a.Pods(); ready != 1 {
		t.Fatal("the pod is not Ready once it has its token")
	}

	m := toks[0].at
	h.advance(m + tokenRefreshAfter - time.Second)
	h.failNext("create", "serviceaccounts/token", 1, forbidden)
	h.advance(m + tokenRefreshAfter)
	if toks := tokenCalls(h.take()); len(toks) != 1 || toks[0].err == nil {
		t.Fatalf("token requests %v, want the refresh refused", toks)
	}
	wantTokenAt(t, h, m+tokenRefreshAfter+75*time.Second)
}

// The heartbeat footprint sends no token request; neither does a pod without a token volume.
func TestNoTokenRequests(t *testing.T) {
	h, a, _ := tokenAgent(t, FootprintHeartbeat)
	startPods(t, h, a, time.Hour, tokenPod("p1", "uid-p1", ""))
	h2, b, _ := tokenAgent(t, FootprintKubelet)
	plain := tokenPod("p2", "uid-p2", "")
	plain.Spec.Volumes = nil
	startPods(t, h2, b, time.Hour, plain)
	for _, c := range append(h.take(), h2.take()...) {
		if c.res == "serviceaccounts/token" {
			t.Errorf("token requested at %v", c.at)
		}
	}
	if _, ready := b.Pods(); ready != 1 {
		t.Error("the pod without a token volume is not Ready")
	}
}

// startPods creates pods, shows them to a, starts it and runs it for run.
func startPods(t *testing.T, h *harness, a *Agent, run time.Duration, pods ...*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		created, err := h.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a.ObservePod(created)
	}
	a.Start(h.ctx)
	h.advance(run)
}

// Projections that ask for the same token share it; another audience is another token, requested
// for that audience alone.
func TestTokenSources(t *testing.T) {
	pod := tokenPod("p1", "uid-p1", "")
	vault := &corev1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: ptr.To[int64](600), Path: "vault"}
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: "again", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "other", ExpirationSeconds: ptr.To[int64](3607)}},
			{ServiceAccountToken: vault},
		}}}})
	sources := tokenSources(pod)
	if len(sources) != 2 || sources[1] != vault {
		t.Fatalf("sources %+v, want the admission plugin's token and vault's", sources)
	}
	set := newPodTokenSet(pod, sources)
	if a := set.request(&set.tokens[0]).Spec.Audiences; a != nil {
		t.Errorf("the default token asks for audiences %q, want none (the apiserver's)", a)
	}
	if tr := set.request(&set.tokens[1]).Spec; len(tr.Audiences) != 1 || tr.Audiences[0] != "vault" || *tr.ExpirationSeconds != 600 {
		t.Errorf("vault's token asks for audiences %q and %d s", tr.Audiences, *tr.ExpirationSeconds)
	}
}
