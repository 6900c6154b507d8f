package capacity

import (
	"fmt"
	"math"
	"time"

	"fakelet.dev/fakelet/report"
)

// Level names, as flags and reports name them.
const (
	LevelFalseAlarms      = "false-alarms"
	LevelMutatingP99      = "mutating-p99"
	LevelAPFRejections    = "apf-rejections"
	LevelRenewalP99       = "renewal-p99"
	LevelFailedHeartbeats = "failed-heartbeats"
)

// Levels are the service levels a step must hold. The zero value holds nothing: start from
// DefaultLevels.
type Levels struct {
	// FalseAlarms is the most false alarms (package falsealarm) a step may have.
	FalseAlarms int
	// MutatingP99 is the highest p99 of the fleet's mutating single-object calls (lease PUT, status
	// PATCH) as the apiserver measured them: the upstream API call latency SLO is 1 s.
	MutatingP99 time.Duration
	// APFRejections is the most requests of the fleet's priority level (node-high) API Priority and
	// Fairness may reject.
	APFRejections int
	// RenewalSlack is how far the p99 of the lease renewal interval may pass the kubelet's renew
	// interval, as a fraction of it: 0.1 allows 11 s for 10 s.
	RenewalSlack float64
	// FailedHeartbeats is the most heartbeats (renewals and status patches) that may fail.
	FailedHeartbeats int
}

// DefaultLevels are the issue's: no false alarm, mutating calls' p99 at most 1 s, no APF rejection
// of node traffic, renewal interval p99 at most the renew interval plus 10%, no failed heartbeat.
func DefaultLevels() Levels {
	return Levels{FalseAlarms: 0, MutatingP99: time.Second, APFRejections: 0, RenewalSlack: 0.1, FailedHeartbeats: 0}
}

// Validate says which level is out of range.
func (l Levels) Validate() error {
	switch {
	case l.FalseAlarms < 0:
		return fmt.Errorf("--max-%s must not be negative, got %d", LevelFalseAlarms, l.FalseAlarms)
	case l.MutatingP99 <= 0:
		return fmt.Errorf("--max-%s must be positive, got %v", LevelMutatingP99, l.MutatingP99)
	case l.APFRejections < 0:
		return fmt.Errorf("--max-%s must not be negative, got %d", LevelAPFRejections, l.APFRejections)
	case !(l.RenewalSlack >= 0) || l.RenewalSlack > 3:
		// Past 3 renew intervals beyond the first, the lease duration (4 of them) has expired.
		return fmt.Errorf("--max-%s-slack must be between 0 and 3 (a fraction of the renew interval), got %v", LevelRenewalP99, l.RenewalSlack)
	case l.FailedHeartbeats < 0:
		return fmt.Errorf("--max-%s must not be negative, got %d", LevelFailedHeartbeats, l.FailedHeartbeats)
	}
	return nil
}

// Measured is what a step's hold measured, the inputs of the levels.
type Measured struct {
	FalseAlarms int
	// MutatingP99 is in seconds; NaN or negative when the hold had no mutating call.
	MutatingP99   float64
	APFRejections float64
	// RenewalP99 is the lease renewal interval's p99 in seconds (0 in status mode, which renews no
	// lease: the level does not apply).
	RenewalP99       float64
	FailedHeartbeats int64
}

// Measure is m's levels in the order of Levels' fields, each against its limit for a fleet whose
// kubelets renew every renewInterval, and Broken where m passed it. The counts of what befell the
// fleet's own nodes (false alarms, failed heartbeats) are Sum levels: a sharded fleet's is the sum
// of its shards'. A level that does not apply is
// left out: the mutating p99 of a hold without a mutating call (NaN), the renewal interval's in
// status mode, which renews no lease.
func (l Levels) Measure(m Measured, renewInterval time.Duration) []report.Level {
	all := []report.Level{
		{Level: LevelFalseAlarms, Value: float64(m.FalseAlarms), Limit: float64(l.FalseAlarms), Sum: true},
		{Level: LevelMutatingP99, Value: m.MutatingP99, Limit: l.MutatingP99.Seconds(), Unit: "s"},
		{Level: LevelAPFRejections, Value: m.APFRejections, Limit: float64(l.APFRejections)},
		{Level: LevelRenewalP99, Value: m.RenewalP99, Limit: renewInterval.Seconds() * (1 + l.RenewalSlack), Unit: "s"},
		{Level: LevelFailedHeartbeats, Value: float64(m.FailedHeartbeats), Limit: float64(l.FailedHeartbeats), Sum: true},
	}
	var out []report.Level
	for _, lv := range all {
		if math.IsNaN(lv.Value) || lv.Level == LevelRenewalP99 && lv.Value <= 0 {
			continue
		}
		lv.Broken = lv.Value > lv.Limit
		out = append(out, lv)
	}
	return out
}

// Check returns the levels m breaks, as Measure gives them.
func (l Levels) Check(m Measured, renewInterval time.Duration) []report.Level {
	var out []report.Level
	for _, lv := range l.Measure(m, renewInterval) {
		if lv.Broken {
			out = append(out, lv)
		}
	}
	return out
}
