package run

import (
	"errors"
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/fleet"
)

func TestProgressLineCountsPodsOnlyWithPods(t *testing.T) {
	for _, tc := range []struct {
		p    fleet.Progress
		want string
	}{
		{fleet.Progress{Nodes: 10, Started: 10, Registered: 10, Ready: 9},
			"    5s  started 10/10  registered 10  Ready 9  errors 0  (2 nodes/s)"},
		{fleet.Progress{Nodes: 10, Started: 10, Registered: 10, Ready: 10, Pods: 19, PodsReady: 18, PodsFailed: 1},
			"    5s  started 10/10  registered 10  Ready 10  pods 19 Ready 18 not created 1  errors 0  (2 nodes/s)"},
	} {
		if got := progressLine(tc.p, 5*time.Second); got != tc.want {
			t.Errorf("progressLine:\n got %q\nwant %q", got, tc.want)
		}
	}
}

func TestSummaryCountsPodsOnlyWithPods(t *testing.T) {
	for _, tc := range []struct {
		p    fleet.Progress
		want bool
	}{
		{fleet.Progress{Nodes: 2, Started: 2}, false},
		{fleet.Progress{Nodes: 2, Started: 2, Pods: 3, PodsReady: 2, PodsFailed: 1}, true},
	} {
		var b strings.Builder
		var podsErr error
		if tc.p.PodsFailed > 0 {
			podsErr = errors.New("create pod default/n-0: forbidden")
		}
		runSummary{Progress: tc.p, Heartbeat: map[string][2]int64{}, PodsErr: podsErr}.render(&b)
		line := "  pods               3 at the end, 2 of them Ready, 1 not created\n" +
			"                     last not created: create pod default/n-0: forbidden\n"
		if got := strings.Contains(b.String(), line); got != tc.want {
			t.Errorf("summary of %+v:\n%s\nwant the pods line %v", tc.p, b.String(), tc.want)
		}
	}
}
