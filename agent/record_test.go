package agent

import (
	"testing"
	"time"
)

type countingRecorder struct{ requests int }

func (c *countingRecorder) Request(Request)            { c.requests++ }
func (c *countingRecorder) Heartbeat(string, error)    {}
func (c *countingRecorder) LeaseRenewed(time.Duration) {}

func TestJoinRecordersFlattensAndSkipsNil(t *testing.T) {
	a, b, c := &countingRecorder{}, &countingRecorder{}, &countingRecorder{}
	joined := JoinRecorders(JoinRecorders(a, nil, b), nil, c)
	rs, ok := joined.(Recorders)
	if !ok || len(rs) != 3 {
		t.Fatalf("joined %#v, want a flat list of 3 recorders", joined)
	}
	joined.Request(Request{Verb: "update", Resource: "leases", Latency: time.Millisecond})
	if a.requests != 1 || b.requests != 1 || c.requests != 1 {
		t.Errorf("requests seen %d %d %d, want 1 each", a.requests, b.requests, c.requests)
	}
	if single := JoinRecorders(nil, a); single != Recorder(a) {
		t.Errorf("one recorder joined is %#v, want it alone", single)
	}
}
