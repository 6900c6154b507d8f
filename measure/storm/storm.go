// Package storm records the run's storms: the stretches when kubelets fell behind together and
// caught up again, as after a mass restart (the restart op) or an apiserver restart that broke their
// watches, with the fleet's own requests second by second while they last. A storm begins when a
// caught-up kubelet falls behind (agent.RecoveryRecorder: its process ended, or a watch broke) while
// none is behind, and ends when the last one behind is caught up again: it has reported Ready and
// holds every watch past its initial list. Between storms nothing is kept, so a quiet run of any
// length costs nothing here; a storm keeps at most MaxSeconds seconds of counts.
package storm

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"fakelet.dev/fakelet/agent"
)

// MaxSeconds bounds the per-second counts one storm keeps: ten minutes, past which a storm is a
// stretch of stopped nodes rather than a burst, and its totals still count.
const MaxSeconds = 600

// MaxStorms bounds the storms a run keeps: the first ones, the rest only counted (Dropped).
const MaxStorms = 20

// Storm is one storm as recorded.
type Storm struct {
	// Start is when the first kubelet fell behind; End when the last one caught up again, zero if
	// some were still behind when the run ended.
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`
	// Causes counts the falls by cause: agent.DisruptedProcess (a stop or restart), agent.DisruptedWatch
	// (a watch the server or the network broke).
	Causes map[string]int `json:"causes"`
	// Nodes is how many distinct nodes fell behind; Recovered how many of them are caught up (all
	// of them once the storm ended).
	Nodes     int `json:"nodes"`
	Recovered int `json:"recovered"`
	// Seconds are the fleet's requests in each second from Start's, up to End's (MaxSeconds at most).
	Seconds []Second `json:"seconds"`
}

// Second is what the fleet did in one second of a storm.
type Second struct {
	// Requests counts the requests sent, by "verb resource" as the agents name them ("watch pods").
	Requests map[string]int `json:"requests,omitempty"`
	// Throttled counts the requests answered 429 Too Many Requests (API Priority and Fairness).
	Throttled int `json:"throttled,omitempty"`
	// Recovered counts the nodes that caught up in that second.
	Recovered int `json:"recovered,omitempty"`
}

// Recorder records storms from what the fleet's agents tell it. It is an agent.Recorder and an
// agent.RecoveryRecorder; its methods are cheap outside storms (a lock and a map lookup).
type Recorder struct {
	mu      sync.Mutex
	behind  map[string]bool // nodes fallen behind in the current storm, not caught up yet
	seen    map[string]bool // nodes fallen behind in the current storm
	current *Storm
	storms  []Storm
	dropped int
}

// NewRecorder returns a recorder with no storm.
func NewRecorder() *Recorder {
	return &Recorder{behind: map[string]bool{}, seen: map[string]bool{}}
}

// Request implements agent.Recorder: during a storm, the request counts in its second.
func (r *Recorder) Request(req agent.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sec := r.second(req.Sent)
	if sec == nil {
		return
	}
	if sec.Requests == nil {
		sec.Requests = map[string]int{}
	}
	sec.Requests[req.Verb+" "+req.Resource]++
	if throttled(req.Err) {
		sec.Throttled++
	}
}

// Heartbeat implements agent.Recorder.
func (*Recorder) Heartbeat(string, error) {}

// LeaseRenewed implements agent.Recorder.
func (*Recorder) LeaseRenewed(time.Duration) {}

// Disrupted implements agent.RecoveryRecorder.
func (r *Recorder) Disrupted(node, cause string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current == nil {
		if len(r.storms) >= MaxStorms {
			r.dropped++
			return
		}
		r.current = &Storm{Start: at, Causes: map[string]int{}}
		clear(r.seen)
	}
	r.current.Causes[cause]++
	if !r.seen[node] {
		r.seen[node] = true
		r.current.Nodes++
	}
	r.behind[node] = true
}

// Recovered implements agent.RecoveryRecorder. A node that was not behind in a storm (a first
// start) changes nothing.
func (r *Recorder) Recovered(node string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current == nil || !r.behind[node] {
		return
	}
	delete(r.behind, node)
	if sec := r.second(at); sec != nil {
		sec.Recovered++
	}
	if len(r.behind) == 0 {
		r.current.End = at
		r.close()
	}
}

// Forget drops a node that will not come back (churn removed it): a storm does not wait for it.
func (r *Recorder) Forget(node string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current == nil || !r.behind[node] {
		return
	}
	delete(r.behind, node)
	r.current.Nodes--
	r.current.Causes[agent.DisruptedProcess]--
	if len(r.behind) == 0 {
		if r.current.Nodes == 0 {
			r.current = nil
			return
		}
		r.current.End = at
		r.close()
	}
}

// close files the current storm. r.mu is held.
func (r *Recorder) close() {
	r.current.Recovered = r.current.Nodes
	r.storms = append(r.storms, *r.current)
	r.current = nil
	clear(r.behind)
}

// second returns the counts of t's second in the current storm, or nil outside one. r.mu is held.
func (r *Recorder) second(t time.Time) *Second {
	s := r.current
	if s == nil || t.Before(s.Start) {
		return nil
	}
	i := int(t.Truncate(time.Second).Sub(s.Start.Truncate(time.Second)) / time.Second)
	if i >= MaxSeconds {
		return nil
	}
	for len(s.Seconds) <= i {
		s.Seconds = append(s.Seconds, Second{})
	}
	return &s.Seconds[i]
}

// Storms returns the storms so far, the one under way last (its End zero), and how many were not
// kept past MaxStorms.
func (r *Recorder) Storms() ([]Storm, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Storm, 0, len(r.storms)+1)
	for _, s := range r.storms {
		out = append(out, s.clone())
	}
	if r.current != nil {
		s := r.current.clone()
		s.Recovered = s.Nodes - len(r.behind)
		out = append(out, s)
	}
	return out, r.dropped
}

func (s Storm) clone() Storm {
	s.Causes = maps.Clone(s.Causes)
	s.Seconds = slices.Clone(s.Seconds)
	for i := range s.Seconds {
		s.Seconds[i].Requests = maps.Clone(s.Seconds[i].Requests)
	}
	return s
}

// throttled says whether err is a 429, as the apiserver's API Priority and Fairness answers.
func throttled(err error) bool {
	var se apierrors.APIStatus
	return errors.As(err, &se) && se.Status().Code == http.StatusTooManyRequests
}
