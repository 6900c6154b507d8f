package capacity

import (
	"testing"

	"fakelet.dev/fakelet/measure/load"
)

func TestFromLoad(t *testing.T) {
	p := load.Phase{
		Latency: []load.Latency{
			{Verb: "*", Count: 900, P99: 2.5}, // every request: not the level's
			{Verb: "PUT", Resource: "leases", Count: 600, P99: 0.4},
			{Verb: "PATCH", Resource: "nodes", Subresource: "status", Count: 2, P99: 1.2},
			{Verb: "PATCH", Resource: "nodes", Count: 1, P99: 9}, // a Node, not its status
			{Verb: "GET", Resource: "leases", Count: 5, P99: 3},
		},
		PriorityLevels: []load.PriorityLevel{{Name: "node-high", Rejected: 4}, {Name: "workload-low", Rejected: 100}},
	}
	want := Measured{FalseAlarms: 1, MutatingP99: 1.2, APFRejections: 4, RenewalP99: 10.3, FailedHeartbeats: 2}
	if got := FromLoad(p, 1, 2, 10.3); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
