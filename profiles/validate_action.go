package profiles

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"fakelet.dev/fakelet/heartbeat"
)

// minFlapPeriod bounds flap periods from below: the agent's heartbeat works in seconds, and a shorter
// period would only multiply events without changing what the control plane sees.
const minFlapPeriod = time.Second

// reasonRe is what a condition reason looks like in Kubernetes: one CamelCase word.
var reasonRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

func (s *Spec) validateAction(ps *problems, path string, ph *Phase, a *Action) {
	params, known := verbParams(a.Do)
	switch {
	case a.Do == "":
		ps.addf(joinPath(path, "do"), "is required (actions: %s)", verbList())
		return
	case !known:
		ps.addf(joinPath(path, "do"), "unknown action %q (actions: %s)", a.Do, verbList())
		return
	}
	for _, p := range a.setParams() {
		if !slices.Contains(params, p) {
			takes := "takes no parameters"
			if len(params) > 0 {
				takes = "takes " + strings.Join(params, ", ")
			}
			ps.addf(joinPath(path, p), "is not a parameter of %s (%s %s)", a.Do, a.Do, takes)
		}
	}
	s.validateActionGroup(ps, path, a)

	// Timing checks compare against what is left of the phase rather than add durations up, which
	// could overflow. A phase of zero or too long a duration is reported by itself; timing is then not
	// checked.
	phaseLen := ph.Duration.Duration
	if phaseLen <= 0 || phaseLen > maxRunDuration {
		phaseLen = 0
	}
	if phaseLen > 0 {
		if a.At.Duration >= phaseLen {
			ps.addf(joinPath(path, "at"), "%v is not within the phase (duration %v)", a.At.Duration, phaseLen)
			phaseLen = 0
		} else if a.Spread.Duration > phaseLen-a.At.Duration {
			ps.addf(joinPath(path, "spread"), "at %v + spread %v ends after the phase (duration %v)",
				a.At.Duration, a.Spread.Duration, phaseLen)
			phaseLen = 0
		}
	}

	switch a.Do {
	case VerbFlap:
		validateFlap(ps, path, a, phaseLen)
	case VerbNotReady:
		if a.Reason != "" && !reasonRe.MatchString(a.Reason) {
			ps.addf(joinPath(path, paramReason), "%q is not a condition reason: one CamelCase word, like KubeletNotReady", a.Reason)
		}
	case VerbCondition:
		switch a.Type {
		case "":
			ps.addf(joinPath(path, paramType), "is required (%s, %s or %s)", MemoryPressure, DiskPressure, PIDPressure)
		case MemoryPressure, DiskPressure, PIDPressure:
		default:
			ps.addf(joinPath(path, paramType), "must be %s, %s or %s, got %q", MemoryPressure, DiskPressure, PIDPressure, a.Type)
		}
		if a.Status != ConditionTrue && a.Status != ConditionFalse {
			ps.addf(joinPath(path, paramStatus), "must be %s or %s, got %q", ConditionTrue, ConditionFalse, a.Status)
		}
	case VerbLatency:
		if a.Delay == nil {
			ps.addf(joinPath(path, paramDelay), "is required (0s clears a delay)")
		}
	case VerbMode:
		if a.Mode == "" {
			ps.addf(joinPath(path, paramMode), "is required (%s or %s)", heartbeat.ModeLease, heartbeat.ModeStatus)
		} else if a.Mode != heartbeat.ModeLease && a.Mode != heartbeat.ModeStatus {
			ps.addf(joinPath(path, paramMode), "must be %s or %s, got %q", heartbeat.ModeLease, heartbeat.ModeStatus, a.Mode)
		}
	case VerbChurn:
		validateChurn(ps, path, a, phaseLen)
	case VerbRestart:
		validateRestart(ps, path, a, phaseLen)
	case VerbCrashPods:
		if c := a.ExitCode; c != nil && (*c < 1 || *c > 255) {
			ps.addf(joinPath(path, paramExitCode), "must be between 1 and 255 (a crash is a failing exit; 0 would be a success), got %d", *c)
		}
	}
}

func (s *Spec) validateActionGroup(ps *problems, path string, a *Action) {
	gpath := joinPath(path, "group")
	if a.Do == VerbChurn && a.Remove <= 0 {
		if a.Group != "" {
			ps.addf(gpath, "churn uses a group only to choose the nodes it removes, and remove is 0")
		}
		return
	}
	switch _, ok := s.Groups[a.Group]; {
	case a.Group == "" && len(s.Groups) == 0:
		ps.addf(gpath, "is required, and spec.groups defines none")
	case a.Group == "":
		ps.addf(gpath, "is required (groups: %s)", strings.Join(slices.Sorted(maps.Keys(s.Groups)), ", "))
	case !ok && len(s.Groups) == 0:
		ps.addf(gpath, "unknown group %q: spec.groups defines none", a.Group)
	case !ok:
		ps.addf(gpath, "unknown group %q (groups: %s)", a.Group, strings.Join(slices.Sorted(maps.Keys(s.Groups)), ", "))
	}
}

func validateFlap(ps *problems, path string, a *Action, phaseLen time.Duration) {
	if a.Period == nil {
		ps.addf(joinPath(path, paramPeriod), "is required: how long one stop and start cycle lasts")
		return
	}
	period := a.Period.Duration
	if period < minFlapPeriod {
		ps.addf(joinPath(path, paramPeriod), "must be at least %v, got %v", minFlapPeriod, period)
		return
	}
	if a.Duty == nil || !(*a.Duty > 0 && *a.Duty < 1) {
		got := "nothing"
		if a.Duty != nil {
			got = fmt.Sprint(*a.Duty)
		}
		ps.addf(joinPath(path, paramDuty), "must be more than 0 and less than 1 (the stopped fraction of a period), got %s", got)
		return
	}
	// Jitter delays each stop and each start by up to jitter; bounding it by the shorter of the stopped
	// and running stretches keeps every node's stops and starts alternating.
	down := time.Duration(float64(period) * *a.Duty)
	bound := min(down, period-down)
	if a.Jitter != nil && a.Jitter.Duration > bound {
		ps.addf(joinPath(path, paramJitter), "%v is more than the shorter of the stopped (%v) and running (%v) parts of a period",
			a.Jitter.Duration, down, period-down)
	}
	if phaseLen > 0 && period > phaseLen-a.At.Duration-a.Spread.Duration {
		ps.addf(joinPath(path, paramPeriod), "at %v + spread %v + period %v ends after the phase (duration %v): not every node would flap once",
			a.At.Duration, a.Spread.Duration, period, phaseLen)
	}
}

// validateRestart keeps every restarted kubelet's new process within the phase, so that the phase
// that restarts a group is also the one whose report shows it coming back.
func validateRestart(ps *problems, path string, a *Action, phaseLen time.Duration) {
	if a.Downtime == nil {
		return
	}
	d := a.Downtime.Duration
	switch {
	case d < 0:
		ps.addf(joinPath(path, paramDowntime), "must not be negative, got %v (0s restarts at once)", d)
	case phaseLen > 0 && d >= phaseLen-a.At.Duration-a.Spread.Duration:
		ps.addf(joinPath(path, paramDowntime), "at %v + spread %v + downtime %v ends after the phase (duration %v): a kubelet would still be down when it ends",
			a.At.Duration, a.Spread.Duration, d, phaseLen)
	}
}

func validateChurn(ps *problems, path string, a *Action, phaseLen time.Duration) {
	if a.Add < 0 {
		ps.addf(joinPath(path, paramAdd), "must not be negative, got %d", a.Add)
	}
	if a.Remove < 0 {
		ps.addf(joinPath(path, paramRemove), "must not be negative, got %d", a.Remove)
	}
	if a.Add <= 0 && a.Remove <= 0 {
		ps.addf(path, "churn needs add or remove (or both) above 0")
		return
	}
	if a.Add > maxNodes || a.Remove > maxNodes {
		ps.addf(path, "churn adds or removes more nodes than the largest fleet fakelet runs (%d)", maxNodes)
		return
	}
	if a.Rate == nil {
		return
	}
	rate := *a.Rate
	switch {
	case !(rate > 0):
		ps.addf(joinPath(path, paramRate), "must be more than 0 nodes per second, got %v", rate)
	case a.Spread.Duration > 0:
		ps.addf(joinPath(path, paramRate), "set rate or spread, not both: both say how fast nodes come and go")
	case phaseLen > 0:
		if last := churnOffset(max(a.Add, a.Remove)-1, rate); last >= phaseLen-a.At.Duration {
			ps.addf(joinPath(path, paramRate), "%d nodes at %v per second take %v, which ends after the phase (duration %v, at %v)",
				max(a.Add, a.Remove), rate, last, phaseLen, a.At.Duration)
		}
	}
}

// churnOffset is when the i-th node (from 0) of a churn action at rate nodes per second comes or goes,
// from the action's start.
// A rate so low that the offset overflows a Duration gives the largest one.
func churnOffset(i int, rate float64) time.Duration {
	ns := float64(i) / rate * float64(time.Second)
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

func verbList() string {
	names := make([]string, len(verbs))
	for i, v := range verbs {
		names[i] = string(v.verb)
	}
	return strings.Join(names, ", ")
}
