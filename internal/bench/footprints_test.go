package bench

import (
	"slices"
	"strings"
	"testing"

	"fakelet.dev/fakelet/agent"
)

func TestParseFootprints(t *testing.T) {
	hb, kl := agent.FootprintHeartbeat, agent.FootprintKubelet
	for _, tc := range []struct {
		in   string
		want []agent.Footprint
		err  string
	}{
		{in: "heartbeat,kubelet", want: []agent.Footprint{hb, kl}},
		{in: "kubelet, heartbeat", want: []agent.Footprint{kl, hb}},
		{in: "kubelet", want: []agent.Footprint{kl}},
		{in: "kubelet,hollow", err: `unknown footprint "hollow" (want "kubelet" or "heartbeat")`},
		{in: "", err: `unknown footprint ""`},
		{in: "kubelet,kubelet", err: `footprint "kubelet" given twice`},
	} {
		got, err := ParseFootprints(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseFootprints(%q): %v, want an error containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseFootprints(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// A peer renews Leases and sends no other kubelet request: it takes over from the heartbeat
// footprint's fleet when there is one.
func TestPeerTakesOverFromTheHeartbeatFootprint(t *testing.T) {
	hb, kl := agent.FootprintHeartbeat, agent.FootprintKubelet
	for _, tc := range []struct {
		in   []agent.Footprint
		want agent.Footprint
	}{
		{[]agent.Footprint{kl, hb}, hb},
		{[]agent.Footprint{hb, kl}, hb},
		{[]agent.Footprint{kl}, kl},
	} {
		if got := PeerFootprint(tc.in); got != tc.want {
			t.Errorf("PeerFootprint(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
