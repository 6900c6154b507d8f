package fleet

import (
	"context"
	"math"
	"time"

	"golang.org/x/time/rate"

	"fakelet.dev/fakelet/agent"
)

// Registration is how the fleet's initial nodes registered: how fast the control plane let them
// (the pacer's rate, PaceStartQPS up to the ceiling), how long it took and what failed meanwhile.
type Registration struct {
	Nodes int
	// Start is when the first agent started, Started when the last did, Registered when the fleet's
	// watch had seen every node's Node; each zero until then.
	Start, Started, Registered time.Time
	// CeilingQPS is Config.RegisterQPS; PeakQPS the highest rate the pacer reached, Cuts how many
	// times it halved its rate on a 429, a 5xx, a timeout or a rise of latency.
	CeilingQPS, PeakQPS float64
	Cuts                int
	// Throttled counts the 429s and Failed the failed requests of the agents from Start to
	// Registered (to now while they register).
	Throttled, Failed int64
	// the tally's counts at Start
	throttledBefore, failedBefore int64
}

// Duration is the time from the first start to every node registered, or 0 before.
func (r Registration) Duration() time.Duration {
	if r.Registered.IsZero() {
		return 0
	}
	return r.Registered.Sub(r.Start)
}

// QPS is the registration rate achieved: nodes per second from the first start to the last node
// registered, or 0 before.
func (r Registration) QPS() float64 {
	if d := r.Duration().Seconds(); d > 0 {
		return float64(r.Nodes) / d
	}
	return 0
}

// Registration says how the initial nodes registered, so far.
func (f *Fleet) Registration() Registration {
	f.mu.Lock()
	r := f.registration
	f.mu.Unlock()
	r.PeakQPS, r.Cuts = f.pace.paced()
	if r.Registered.IsZero() && !r.Start.IsZero() {
		r.Throttled, r.Failed = f.tally.Throttled()-r.throttledBefore, f.tally.Errors()-r.failedBefore
	}
	return r
}

// registeredPoll is how often the starter, all agents started, looks whether every Node is seen.
const registeredPoll = 100 * time.Millisecond

// starter starts agents one by one as the pacer's rate admits them, as kubelets booting, then
// records when every node registered.
type starter struct {
	f          *Fleet
	agents     []*agent.Agent // the initial ones: AddNodes starts the others itself
	ctx        context.Context
	limit      *rate.Limiter
	nextAdjust time.Time // zero until the first run
	next       int
}

func (f *Fleet) newStarter(ctx context.Context, agents []*agent.Agent) *starter {
	f.mu.Lock()
	f.registration = Registration{Nodes: len(agents), CeilingQPS: f.cfg.RegisterQPS}
	f.mu.Unlock()
	return &starter{f: f, agents: agents, ctx: ctx, limit: f.limiter(f.pace.qps())}
}

func (s *starter) Run() {
	f := s.f
	now := f.sched.Clock().Now()
	if s.ctx.Err() != nil {
		f.pace.stop()
		return
	}
	if s.nextAdjust.IsZero() {
		f.mu.Lock()
		f.registration.Start, f.registration.throttledBefore, f.registration.failedBefore = now, f.tally.Throttled(), f.tally.Errors()
		f.mu.Unlock()
		s.nextAdjust = now.Add(PaceInterval)
	}
	if !now.Before(s.nextAdjust) {
		qps := f.pace.adjust()
		s.limit.SetLimitAt(now, rate.Limit(qps))
		s.limit.SetBurstAt(now, burst(qps, f.cfg.Coalesce))
		s.nextAdjust = now.Add(PaceInterval)
	}
	for s.next < len(s.agents) {
		r := s.limit.ReserveN(now, 1)
		if d := r.DelayFrom(now); d > 0 {
			r.CancelAt(now)
			f.sched.After(min(d, s.nextAdjust.Sub(now)), s)
			return
		}
		a := s.agents[s.next]
		s.next++
		f.mu.Lock()
		if !f.removed[a] {
			a.Start(s.ctx)
			f.started++
		}
		if s.next == len(s.agents) {
			f.registration.Started = now
		}
		f.mu.Unlock()
	}
	if registered, _, _ := f.nodes.counts(); registered < len(s.agents) {
		f.sched.After(registeredPoll, s)
		return
	}
	f.pace.stop()
	r := f.Registration()
	f.mu.Lock()
	f.registration.Registered, f.registration.Throttled, f.registration.Failed = now, r.Throttled, r.Failed
	f.mu.Unlock()
}

// limiter allows qps a second to a task that waits for its next token on the fleet's scheduler.
func (f *Fleet) limiter(qps float64) *rate.Limiter {
	return rate.NewLimiter(rate.Limit(qps), burst(qps, f.cfg.Coalesce))
}

// burst is what accrues in one timer step, since a task wakes at the end of the step (Coalesce):
// with a burst of one, a step of 50 ms would hold 200 registrations a second to 20.
func burst(qps float64, step time.Duration) int {
	return max(1, int(math.Ceil(qps*step.Seconds())))
}
