package falsealarm

import (
	"testing"
	"time"
)

// A node keeps its requests to the microsecond, each wait within ±35 minutes: what the attribution
// reads of them is what they were, a wait beyond that counting as that long.
func TestKeptBeatsAreTheRequests(t *testing.T) {
	sent := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	for _, b := range []Beat{
		{Due: sent.Add(-1500 * time.Microsecond), Lag: 1500 * time.Microsecond, Sent: sent, Latency: 2 * time.Second, Rejected: true},
		{Sent: sent, Latency: 40 * time.Millisecond},
		{Due: sent.Add(10 * time.Second), Lag: time.Millisecond, Sent: sent},
	} {
		if got := keep(b).beat(); !got.Due.Equal(b.Due) || got.Lag != b.Lag || !got.Sent.Equal(b.Sent) || got.Latency != b.Latency || got.Rejected != b.Rejected {
			t.Errorf("kept %+v as %+v", b, got)
		}
	}
	if got := keep(Beat{Sent: sent, Latency: time.Hour}).beat().Latency; got < 35*time.Minute || got > 36*time.Minute {
		t.Errorf("an hour's latency kept as %v, want about 35 minutes", got)
	}
}
