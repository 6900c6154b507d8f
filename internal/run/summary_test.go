package run

import (
	"testing"
	"time"

	"fakelet.dev/fakelet/fleet"
)

func TestRegistrationSaysHowFastTheControlPlaneLetTheFleetRegister(t *testing.T) {
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	r := fleet.Registration{Nodes: 1000, Start: at, Started: at.Add(20 * time.Second), Registered: at.Add(25 * time.Second),
		CeilingQPS: 100, PeakQPS: 80, Cuts: 2, Throttled: 3, Failed: 1}
	want := "1000 nodes in 25s (40.0/s); paced from 10/s up to 80/s of --register-qps 100, 2 cuts; 3 429s, 1 failed requests meanwhile"
	if got := registrationText(r); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	r.Registered = time.Time{}
	want = "not every node registered; paced from 10/s up to 80/s of --register-qps 100, 2 cuts; 3 429s, 1 failed requests meanwhile"
	if got := registrationText(r); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
