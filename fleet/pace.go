package fleet

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"fakelet.dev/fakelet/agent"
)

// Registration paces itself by the server's answers, as TCP paces a connection (additive increase,
// multiplicative decrease): it starts at PaceStartQPS, doubles its rate every PaceInterval while the
// server answers without a 429, a 5xx or a timeout and without its latency rising well above its
// floor, then, after its first cut, adds PaceStartQPS a second each interval; a sign of overload
// halves it. Config.RegisterQPS is its ceiling. A fleet that starts a thousand kubelets at once
// measures its own burst, not the control plane: the kubelets of a real cluster boot over minutes.
const (
	PaceStartQPS = 10
	PaceInterval = time.Second
	// PaceMinQPS is the rate no cut goes below: a server that rejects everything still sees the
	// fleet try, as a real cluster's kubelets keep booting.
	PaceMinQPS = 1
	// paceLatencyFactor and paceLatencyMin: an interval whose mean latency exceeds both this many
	// times the lowest interval mean seen and paceLatencyMin is one of overload. The absolute
	// minimum keeps a server that answers in a millisecond from being judged slow at three.
	paceLatencyFactor = 3
	paceLatencyMin    = 50 * time.Millisecond
	// paceMinAnswers is how many answers an interval needs for its mean latency to count.
	paceMinAnswers = 5
)

// pacer sets the registration rate. Request (an agent.Recorder's) is called from every agent's
// goroutine; adjust only from the starter's task.
type pacer struct {
	ceiling float64
	// throttled reads the 429s the agents' transports saw, those that client-go retried after the
	// server's Retry-After included, which reach no agent as an error; nil counts only errors.
	throttled func() int64

	done                          atomic.Bool
	answers, latency, overloadeds atomic.Int64 // since the last adjust

	mu            sync.Mutex
	rate, peak    float64
	slowStart     bool
	hold          bool // the interval after a cut: its answers are still the old rate's
	floor         time.Duration
	floorSet      bool
	lastThrottled int64
	cuts          int
}

func newPacer(ceiling float64, throttled func() int64) *pacer {
	p := &pacer{ceiling: ceiling, throttled: throttled, rate: min(ceiling, PaceStartQPS), slowStart: true}
	p.peak = p.rate
	if throttled != nil {
		p.lastThrottled = throttled()
	}
	return p
}

// Request implements agent.Recorder. A watch's latency is that of its stream's opening, and is left
// out with the watches.
func (p *pacer) Request(req agent.Request) {
	if p.done.Load() || req.Verb == "watch" {
		return
	}
	p.answers.Add(1)
	p.latency.Add(int64(req.Latency))
	if overloaded(req.Verb, req.Err) {
		p.overloadeds.Add(1)
	}
}

// Heartbeat implements agent.Recorder.
func (*pacer) Heartbeat(string, error) {}

// LeaseRenewed implements agent.Recorder.
func (*pacer) LeaseRenewed(time.Duration) {}

// overloaded says whether err is a server's sign of overload: a 429, a 5xx or no answer in time. A
// partition fault's timeout is fakelet's own.
func overloaded(verb string, err error) bool {
	if err == nil || errors.Is(err, agent.ErrPartitioned) {
		return false
	}
	switch _, code := Classify(verb, err); code {
	case "429", "500", "503", "504", CodeTimeout:
		return true
	}
	return false
}

// adjust reads the answers since the last call and returns the rate for the next interval.
func (p *pacer) adjust() float64 {
	n, sum, bad := p.answers.Swap(0), p.latency.Swap(0), p.overloadeds.Swap(0)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.throttled != nil {
		t := p.throttled()
		bad += t - p.lastThrottled
		p.lastThrottled = t
	}
	slow := false
	if n >= paceMinAnswers {
		mean := time.Duration(sum / n)
		if !p.floorSet || mean < p.floor {
			p.floor, p.floorSet = mean, true
		}
		slow = mean > max(paceLatencyFactor*p.floor, paceLatencyMin)
	}
	switch {
	case p.hold:
		p.hold = false
	case bad > 0 || slow:
		p.rate = max(PaceMinQPS, p.rate/2)
		p.slowStart, p.hold = false, true
		p.cuts++
	case n == 0: // no answer, no news
	case p.slowStart:
		p.rate = min(p.ceiling, 2*p.rate)
	default:
		p.rate = min(p.ceiling, p.rate+PaceStartQPS)
	}
	p.peak = max(p.peak, p.rate)
	return p.rate
}

// qps is the current rate.
func (p *pacer) qps() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rate
}

// stop ends the pacing: the recorder ignores the requests that follow.
func (p *pacer) stop() { p.done.Store(true) }

// paced returns the highest rate the pacer reached and how many times it cut its rate.
func (p *pacer) paced() (peak float64, cuts int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak, p.cuts
}
