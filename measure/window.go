package measure

import (
	"fakelet.dev/fakelet/measure/falsealarm"
	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/reaction"
)

// PhaseLoad returns the load of the phase named name, between the scrapes nearest its start and end
// (PhaseBegan and PhaseEnded scrape at both), once those scrapes are in: a step of a run that decides
// what to do next from it, as fakelet capacity does, without building the whole report.
func (s *Session) PhaseLoad(name string) (load.Phase, bool) {
	s.pending.Wait()
	s.mu.Lock()
	var ph reaction.Phase
	found := false
	for _, p := range s.phases {
		if p.Name == name {
			ph, found = p, true
		}
	}
	s.mu.Unlock()
	if !found || ph.End.IsZero() {
		return load.Phase{}, false
	}
	return load.Compute(s.scraper.Snapshots(), []load.Window{{Name: name, Start: ph.Start, End: ph.End}})[0], true
}

// FalseAlarms returns the false alarms counted in the phase named name so far, attributing those
// still waiting with the requests seen until now.
func (s *Session) FalseAlarms(phase string) []falsealarm.Count {
	var out []falsealarm.Count
	for _, c := range s.alarms.Counts() {
		if c.Phase == phase {
			out = append(out, c)
		}
	}
	return out
}
