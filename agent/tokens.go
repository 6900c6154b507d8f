package agent

import (
	"slices"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// podTokens is the kubelet's token manager (pkg/kubelet/token/token_manager.go, v1.37.2) for the
// service account token volumes of the node's pods, as the apiserver sees it (kubelet footprint):
// a TokenRequest, a POST of serviceaccounts/<the pod's service account>/token bound to the pod, for
// each serviceAccountToken projection of the pod's projected volumes (pkg/volume/projected), when
// the volume is first mounted at the pod's first sync, and again at the first of the pod's syncs
// that finds the token older than 80% of its TTL or than 24 hours (requiresRefresh, with its
// jitter).
//
// A kubelet syncs a running pod again one syncFrequency (1 minute) plus up to half of it after its
// last sync (the pod workers' resync), and each sync remounts the projected volumes, asking the
// token manager, which answers from its cache until the token needs a refresh. Those syncs send
// nothing else, so the agent does not run them: when a token is issued it draws the pod's
// following resyncs and the manager's jitter at each, and schedules the one that finds a token due.
//
// A token is forgotten with its pod's volumes, torn down once the pod is terminated
// (DeleteServiceAccountToken), and with the run: a restarted kubelet requests every pod's tokens
// again at its first sync. If a pod has no token yet and the request fails, the mount fails and the
// pod's containers do not start; the agent retries at its next sync of the pod (podSyncPeriod),
// where the kubelet's volume manager retries the mount with a backoff from 0.5 s to about 2
// minutes. A refresh that fails keeps the old token, and is tried again at the next resync.
type podTokens struct {
	r *run
	c caller
	// mu is held over a check of a pod's tokens and its requests, so that the pod's sync and the
	// scheduled refresh never request the same token together. It comes before Agent.mu.
	mu sync.Mutex
	// Guarded by Agent.mu.
	pods map[types.UID]*podTokenSet
	due  time.Time // when Run is next scheduled; zero if it is not
}

// podTokenSet is one pod's tokens. Its fields are guarded by podTokens.mu.
type podTokenSet struct {
	// What the requests name, copied: the set keeps no pod alive.
	namespace, name, serviceAccount string
	uid                             types.UID
	tokens                          []issuedToken
	next                            time.Time // the resync at which a token is due for refresh; zero if none ever is
}

// issuedToken is one projection's token, as the manager caches it.
type issuedToken struct {
	audience   string
	expSeconds *int64 // the projection's TTL, if it asks for one
	issued     bool
	// From the answer: its expiration, and the TTL it was issued for (nil: it is never refreshed).
	exp time.Time
	ttl *int64
	due bool // the next resync refreshes it
}

// The token manager's and the pod workers' settings.
const (
	tokenMaxTTL    = 24 * time.Hour   // maxTTL: a token is refreshed after a day whatever its TTL
	tokenMaxJitter = 10 * time.Second // maxJitter of requiresRefresh
	// podResyncPeriod is the kubelet's syncFrequency, and podResyncJitter the pod workers' jitter
	// factor on it (workerResyncIntervalJitterFactor).
	podResyncPeriod = time.Minute
	podResyncJitter = 0.5
)

// tokenSources returns the serviceAccountToken projections of pod's projected volumes, one of each
// audience and TTL: the manager caches a token by those and the pod, so projections that ask for
// the same token share one request.
func tokenSources(pod *corev1.Pod) []*corev1.ServiceAccountTokenProjection {
	var out []*corev1.ServiceAccountTokenProjection
	for i := range pod.Spec.Volumes {
		v := pod.Spec.Volumes[i].Projected
		if v == nil {
			continue
		}
		for j := range v.Sources {
			if s := v.Sources[j].ServiceAccountToken; s != nil && !slices.ContainsFunc(out, sameToken(s)) {
				out = append(out, s)
			}
		}
	}
	return out
}

// sameToken matches the projections that ask for the same token as s.
func sameToken(s *corev1.ServiceAccountTokenProjection) func(*corev1.ServiceAccountTokenProjection) bool {
	return func(o *corev1.ServiceAccountTokenProjection) bool {
		return o.Audience == s.Audience && ptr.Equal(o.ExpirationSeconds, s.ExpirationSeconds)
	}
}

// newPodTokenSet is the manager's empty cache for pod's token sources.
func newPodTokenSet(pod *corev1.Pod, sources []*corev1.ServiceAccountTokenProjection) *podTokenSet {
	set := &podTokenSet{namespace: pod.Namespace, name: pod.Name, serviceAccount: pod.Spec.ServiceAccountName, uid: pod.UID,
		tokens: make([]issuedToken, len(sources))}
	for i, s := range sources {
		set.tokens[i].audience = s.Audience
		if s.ExpirationSeconds != nil {
			set.tokens[i].expSeconds = ptr.To(*s.ExpirationSeconds)
		}
	}
	return set
}

// request is the TokenRequest the projected volume plugin hands the token manager for tok.
func (set *podTokenSet) request(tok *issuedToken) *authenticationv1.TokenRequest {
	var audiences []string
	if tok.audience != "" {
		audiences = []string{tok.audience}
	}
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         audiences,
		ExpirationSeconds: tok.expSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: set.name, UID: set.uid},
	}}
}

// requiresRefresh is the manager's requiresRefresh at now, with rand drawing its jitter.
func (t *issuedToken) requiresRefresh(now time.Time, rand float64) bool {
	if t.ttl == nil {
		return false // the kubelet logs that the expiration is missing, and keeps the token
	}
	iat := t.exp.Add(-time.Duration(*t.ttl) * time.Second)
	jitter := time.Duration(rand*tokenMaxJitter.Seconds()) * time.Second
	if now.After(iat.Add(tokenMaxTTL - jitter)) {
		return true
	}
	return now.After(t.exp.Add(-time.Duration(*t.ttl*20/100)*time.Second - jitter))
}

// mount is the setup of pod's projected volumes at a sync of the pod, with c, the pod loop's
// caller: it requests each token the manager has none of, or that needs a refresh now, and
// schedules the refresh. It fails if a token is missing or expired after it.
func (t *podTokens) mount(c *caller, pod *corev1.Pod, now time.Time) error {
	a := t.r.a
	if !a.kubelet() {
		return nil
	}
	sources := tokenSources(pod)
	if len(sources) == 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	a.mu.Lock()
	if a.run != t.r || t.r.ctx.Err() != nil {
		a.mu.Unlock()
		return nil
	}
	set := t.pods[pod.UID]
	if set == nil {
		set = newPodTokenSet(pod, sources)
		if t.pods == nil {
			t.pods = map[types.UID]*podTokenSet{}
		}
		t.pods[pod.UID] = set
	}
	a.mu.Unlock()
	for i := range set.tokens {
		tok := &set.tokens[i]
		tok.due = !tok.issued || tok.requiresRefresh(now, a.cfg.rand())
	}
	return t.request(c, set, now)
}

// request requests set's due tokens with c, then schedules its next refresh. It fails if a token
// is missing or expired after it. podTokens.mu must be held.
func (t *podTokens) request(c *caller, set *podTokenSet, now time.Time) error {
	a := t.r.a
	var failed error
	for i := range set.tokens {
		tok := &set.tokens[i]
		if !tok.due {
			continue
		}
		tok.due = false
		out, err := c.createToken(set.namespace, set.serviceAccount, set.request(tok))
		if err == nil {
			tok.issued, tok.exp, tok.ttl = true, out.Status.ExpirationTimestamp.Time, out.Spec.ExpirationSeconds
			continue
		}
		if !tok.issued || now.After(tok.exp) {
			failed = err
		}
	}
	set.next = t.nextRefresh(set, now)
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.pods[set.uid] == set && !set.next.IsZero() {
		t.schedule(set.next)
	}
	return failed
}

// nextRefresh draws the pod's resyncs after from, one syncFrequency plus up to half of it apart,
// until one finds a token due, and marks it: that resync, or zero if no token ever needs a refresh.
// It ends within a day of issued resyncs: every token with a TTL is due within 24 hours of its issue.
func (t *podTokens) nextRefresh(set *podTokenSet, from time.Time) time.Time {
	cfg := t.r.a.cfg
	refreshed := false
	for i := range set.tokens {
		refreshed = refreshed || set.tokens[i].issued && set.tokens[i].ttl != nil
	}
	if !refreshed {
		return time.Time{}
	}
	for at := from; ; {
		at = at.Add(cfg.jitter(podResyncPeriod, podResyncJitter))
		found := false
		for i := range set.tokens {
			tok := &set.tokens[i]
			if tok.issued && tok.requiresRefresh(at, cfg.rand()) {
				tok.due, found = true, true
			}
		}
		if found {
			return at
		}
	}
}

// schedule makes Run happen at at, unless it is due earlier. Agent.mu must be held.
func (t *podTokens) schedule(at time.Time) {
	if !t.due.IsZero() && !at.Before(t.due) {
		return
	}
	sched := t.r.a.cfg.Scheduler
	t.due = at
	sched.After(max(at.Sub(sched.Clock().Now()), 0), t)
}

// drop forgets the tokens of pod uid, whose volumes are torn down. Agent.mu must be held.
func (t *podTokens) drop(uid types.UID) {
	delete(t.pods, uid)
}

// Run is the resync of each pod whose token is due for refresh: it requests the due tokens. A pod
// being deleted is not synced any more (the kubelet terminates it instead), so its tokens are not
// refreshed.
func (t *podTokens) Run() {
	a := t.r.a
	now := a.cfg.Scheduler.Clock().Now()
	a.mu.Lock()
	if a.run != t.r || t.r.ctx.Err() != nil || now.Before(t.due) {
		a.mu.Unlock()
		return
	}
	t.due = time.Time{}
	a.mu.Unlock()

	t.mu.Lock()
	defer t.mu.Unlock()
	a.mu.Lock()
	var todo []*podTokenSet
	for _, set := range t.pods {
		switch {
		case set.next.IsZero():
		case set.next.After(now):
			t.schedule(set.next)
		default:
			if st := a.pods[podKey{set.namespace, set.name}]; st != nil && st.uid == set.uid && !st.deleting {
				todo = append(todo, set)
			} else {
				set.next = time.Time{}
			}
		}
	}
	a.mu.Unlock()
	for _, set := range todo {
		if t.r.ctx.Err() != nil {
			return
		}
		_ = t.request(&t.c, set, set.next) // a failed refresh keeps the old token until the next resync
	}
}
