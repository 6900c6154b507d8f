package measure

import (
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/profiles"
	"fakelet.dev/fakelet/scenario"
)

// Hooks returns the callbacks of a profile runner (scenario.Config.OnPhase and OnApplied) that record
// its run into s: each phase's start with a scrape, and each op that took effect with its node's
// last heartbeats, read from the node's agent at that moment. Both return at once. A profile with
// workloads adds their watches to the record (ObserveWorkloads), in the namespace the runner
// creates them in.
func (s *Session) Hooks(plan *profiles.Plan, f *fleet.Fleet) (onPhase func(string, scenario.PhaseRecord), onApplied func(scenario.Applied)) {
	fc := f.Config()
	prefix := fc.NamePrefix
	if plan.Profile.Spec.Workloads != nil {
		s.ObserveWorkloads(scenario.WorkloadNamespace(fc.Fleet, fc.RunID))
	}
	onPhase = func(_ string, ph scenario.PhaseRecord) { s.PhaseBegan(ph.Name, ph.Start) }
	onApplied = func(a scenario.Applied) {
		if a.Err != "" {
			return // it did not take effect: nothing to react to
		}
		phases := plan.Profile.Spec.Phases
		if a.Phase < 0 || a.Phase >= len(phases) || a.Action < 0 || a.Action >= len(phases[a.Phase].Actions) {
			return
		}
		act := phases[a.Phase].Actions[a.Action]
		var ra reaction.Action
		if ag := f.Agent(a.Node); ag != nil {
			ra = Action(ag, phases[a.Phase].Name, a.Group, string(a.Op), a.At)
		} else {
			ra = reaction.Action{Phase: phases[a.Phase].Name, Group: a.Group, Op: string(a.Op), Node: fleetname.NodeName(prefix, a.Node), At: a.At}
		}
		ra.Condition, ra.Status = string(act.Type), string(act.Status)
		s.Applied(ra)
	}
	return onPhase, onApplied
}

// ScenarioPhases turns a runner's record of its phases into the phases of a report; a phase still
// running (End zero) is left to end with the record.
func ScenarioPhases(rec scenario.Record) []reaction.Phase {
	out := make([]reaction.Phase, 0, len(rec.Phases))
	for _, p := range rec.Phases {
		out = append(out, reaction.Phase{Name: p.Name, Start: p.Start, End: p.End})
	}
	return out
}
