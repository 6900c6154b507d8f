package bench

import (
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/agent"
)

func TestStandInTableShowsTheFleetsOwnCosts(t *testing.T) {
	r := Result{Nodes: 1000, Footprint: agent.FootprintHeartbeat, AllReady: true, Register: 10 * time.Second, Window: time.Minute,
		CPU: map[string]time.Duration{Fakelet: 3 * time.Second, StandIn: 6 * time.Second}, RSS: map[string]int64{Fakelet: 100 << 20, StandIn: 200 << 20},
		LeasePUTs: 6000, RenewalP50: 10.2, RenewalP99: 10.4, SendLagP99: 0.02}
	var b strings.Builder
	WriteStandInTable(&b, []Result{r})
	want := "| 1000 | heartbeat | 10 s | 5.0% | 500 µs | 100 MiB | 102.4 KiB | 10.20 s / 10.40 s | 20.0 ms | 10.0% | 200 MiB | 100 | 0 |"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("table:\n%s\nwant the row\n%s", b.String(), want)
	}
}
