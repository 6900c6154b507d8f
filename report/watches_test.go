package report

import (
	"strings"
	"testing"

	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/record"
)

// The summary shows the agents' watches by resource and per node when they held any, and nothing
// in the heartbeat footprint.
func TestSummaryShowsTheAgentsWatches(t *testing.T) {
	r := &Report{Record: record.Record{Parameters: record.Parameters{Nodes: 2}}}
	var b strings.Builder
	r.writeWatches(&b)
	if b.Len() != 0 {
		t.Errorf("without watches: %q, want nothing", b.String())
	}
	r.Load.Run.FleetWatches = []load.FleetWatch{
		{Resource: "nodes", Held: 2, Lists: 2, Watches: 1, Events: 10, EventsRate: 0.5},
		{Resource: "pods", Held: 2, Lists: 3, Events: 30, EventsRate: 1.5},
	}
	r.writeWatches(&b)
	for _, want := range []string{"the agents' watches", "most held", "nodes", "pods", "all", "per node: 2.0 watches held, 2.5 streaming lists"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
