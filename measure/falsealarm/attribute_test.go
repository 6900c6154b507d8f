package falsealarm

import (
	"testing"
	"time"
)

func TestAttribute(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC) // the alarm; the window is the 50 s before it
	s := func(d time.Duration) time.Time { return at.Add(-d) }
	const grace = 50 * time.Second
	for _, tc := range []struct {
		name  string
		beats []Beat
		want  Attribution
	}{
		{"on time", []Beat{{Due: s(45 * time.Second), Lag: time.Millisecond, Sent: s(45 * time.Second), Latency: 2 * time.Millisecond}},
			Attribution{Cause: CauseNone, SendLag: time.Millisecond, ServerLatency: 2 * time.Millisecond}},
		{"a 429 in the window", []Beat{{Sent: s(30 * time.Second), Latency: time.Millisecond, Rejected: true}},
			Attribution{Cause: CauseRejection, ServerLatency: time.Millisecond, Rejected: 1}},
		{"a 429 before the window", []Beat{{Sent: s(51 * time.Second), Latency: time.Millisecond, Rejected: true}},
			Attribution{Cause: CauseNone}},
		// Only the parts inside the window count: 40 s of a 100 s wait, 10 s of a lag that began before.
		{"latency over lag", []Beat{
			{Due: s(60 * time.Second), Lag: 20 * time.Second, Sent: s(40 * time.Second), Latency: 100 * time.Second}},
			Attribution{Cause: CauseServerLatency, SendLag: 10 * time.Second, ServerLatency: 40 * time.Second}},
		{"lag over latency", []Beat{
			{Due: s(40 * time.Second), Lag: 50 * time.Second, Sent: at.Add(10 * time.Second), Latency: time.Second}},
			Attribution{Cause: CauseSendLag, SendLag: 40 * time.Second}},
		{"waits under a second", []Beat{{Due: s(40 * time.Second), Lag: 900 * time.Millisecond, Sent: s(39 * time.Second), Latency: 500 * time.Millisecond}},
			Attribution{Cause: CauseNone, SendLag: 900 * time.Millisecond, ServerLatency: 500 * time.Millisecond}},
	} {
		if got := Attribute(tc.beats, at, grace); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
