package scenario

import (
	"errors"
	"fmt"
	"iter"
	"strings"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/profiles"
)

// errNotInFleet is why an op found no agent: the node is not the fleet's, or churn removed it.
var errNotInFleet = errors.New("no such node in the fleet")

// pull returns the events of one phase one at a time.
func pull(s *profiles.Schedule, phase int) (func() (profiles.Event, bool), func()) {
	return iter.Pull(s.Events(phase))
}

// apply applies one event to its node, logging its action if it is the action's first event. Ops on
// an agent take effect at once; deleteLease and remove call the apiserver and are queued to the
// admin workers, and take effect when their calls return.
func (r *Runner) apply(ev profiles.Event) {
	if !r.begun[ev.Action] {
		r.begun[ev.Action] = true
		ph := &r.plan.Profile.Spec.Phases[ev.Phase]
		r.logf("%s   %s: %s", offset(ev.At), ph.Name, r.describe(&ph.Actions[ev.Action]))
	}
	if !r.owns(ev.Node) {
		return // another shard's node
	}
	switch ev.Op {
	case profiles.OpDeleteLease, profiles.OpRemove:
		r.admin.push(ev)
		return
	case profiles.OpAdd:
		r.record(ev, r.fleet.AddNodes([]int{ev.Node}))
		return
	case profiles.OpStart:
		r.record(ev, r.fleet.StartNode(ev.Node))
		return
	case profiles.OpStop:
		r.record(ev, r.fleet.StopNode(ev.Node))
		return
	case profiles.OpRestart:
		r.record(ev, r.fleet.RestartNode(ev.Node, ev.Args.Downtime))
		return
	case profiles.OpCrashPods, profiles.OpUnreadyPods, profiles.OpHealPods:
		pf := ev.Args.PodFault
		r.record(ev, r.fleet.SetPodFault([]int{ev.Node}, agent.PodFault{Crash: pf.Crash, ExitCode: pf.ExitCode, Unready: pf.Unready}))
		return
	}
	a := r.fleet.Agent(ev.Node)
	if a == nil {
		r.record(ev, errNotInFleet)
		return
	}
	var err error
	switch ev.Op {
	case profiles.OpPartition:
		a.SetPartitioned(true)
	case profiles.OpHeal:
		a.SetPartitioned(false)
	case profiles.OpNotReady:
		a.SetHealth(func(h *agent.Health) {
			h.NotReady, h.NotReadyReason, h.NotReadyMsg = true, ev.Args.Reason, ev.Args.Message
		})
	case profiles.OpReady:
		a.SetHealth(func(h *agent.Health) {
			h.NotReady, h.NotReadyReason, h.NotReadyMsg = false, "", ""
		})
	case profiles.OpCondition:
		on := ev.Args.Status == profiles.ConditionTrue
		a.SetHealth(func(h *agent.Health) {
			switch ev.Args.Condition {
			case profiles.MemoryPressure:
				h.MemoryPressure = on
			case profiles.DiskPressure:
				h.DiskPressure = on
			case profiles.PIDPressure:
				h.PIDPressure = on
			}
		})
	case profiles.OpDenyAuth:
		a.SetAuthDenied(true)
	case profiles.OpRestoreAuth:
		a.SetAuthDenied(false)
	case profiles.OpLatency:
		a.SetLatency(ev.Args.Delay)
	case profiles.OpMode:
		a.SetMode(ev.Args.Mode)
	default:
		err = fmt.Errorf("op %s is not known to the runner", ev.Op)
	}
	r.record(ev, err)
}

// describe is an action as its log line says it: verb, group and its size, parameters, spread.
func (r *Runner) describe(a *profiles.Action) string {
	var b strings.Builder
	n := len(r.plan.Groups[a.Group])
	switch a.Do {
	case profiles.VerbChurn:
		b.WriteString("churn")
		if a.Add > 0 {
			fmt.Fprintf(&b, " add %d", a.Add)
		}
		if a.Remove > 0 {
			fmt.Fprintf(&b, " remove %d of group %s (%s)", a.Remove, a.Group, plural(n, "node"))
		}
		if a.Rate != nil {
			fmt.Fprintf(&b, " at %g/s", *a.Rate)
		}
	case profiles.VerbFlap:
		fmt.Fprintf(&b, "flap group %s (%s) period %v duty %g", a.Group, plural(n, "node"), a.Period.Duration, *a.Duty)
		if a.Jitter != nil && a.Jitter.Duration > 0 {
			fmt.Fprintf(&b, " jitter %v", a.Jitter.Duration)
		}
	default:
		fmt.Fprintf(&b, "%s group %s (%s)", a.Do, a.Group, plural(n, "node"))
		switch a.Do {
		case profiles.VerbNotReady:
			fmt.Fprintf(&b, " reason %s message %q", a.Reason, a.Message)
		case profiles.VerbCondition:
			fmt.Fprintf(&b, " %s=%s", a.Type, a.Status)
		case profiles.VerbLatency:
			fmt.Fprintf(&b, " delay %v", a.Delay.Duration)
		case profiles.VerbMode:
			fmt.Fprintf(&b, " mode %s", a.Mode)
		case profiles.VerbRestart:
			fmt.Fprintf(&b, " downtime %v", a.Downtime.Duration)
		case profiles.VerbCrashPods:
			fmt.Fprintf(&b, " exit code %d", *a.ExitCode)
		}
	}
	if a.Spread.Duration > 0 {
		fmt.Fprintf(&b, " spread over %v", a.Spread.Duration)
	}
	return b.String()
}
