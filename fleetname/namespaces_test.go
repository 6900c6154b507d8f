package fleetname

import (
	"strings"
	"testing"
)

func TestWorkloadNamespaceIsANamespaceName(t *testing.T) {
	long := strings.Repeat("a", 50)
	for _, tc := range []struct{ fleet, run, want string }{
		{"fakelet", "20260301-120000-abcdef", "fakelet-fakelet-20260301-120000-abcdef"},
		{long, "20260301-120000-abcdef", "fakelet-" + long + "-2026"},
		{strings.Repeat("a", 54), "x", "fakelet-" + strings.Repeat("a", 54)}, // not ending in the dash before the run
	} {
		if got := WorkloadNamespace(tc.fleet, tc.run); got != tc.want || len(got) > 63 {
			t.Errorf("WorkloadNamespace(%q, %q) = %q, want %q", tc.fleet, tc.run, got, tc.want)
		}
	}
}
