package bench

import (
	"testing"
	"time"
)

// A fleet not all Ready by the deadline is measured anyway; its log line said "registered in 0s".
func TestRegisteredSaysWhenNotEveryNodeWasReady(t *testing.T) {
	for _, tc := range []struct {
		res  Result
		want string
	}{
		{Result{AllReady: true, Register: 79 * time.Second}, "registered in 1m19s"},
		{Result{RegisteredErr: "not every node Ready within 10m0s"}, "not every node Ready within 10m0s"},
	} {
		if got := registered(tc.res); got != tc.want {
			t.Errorf("registered(%+v) = %q, want %q", tc.res, got, tc.want)
		}
	}
}
