package profiles

import (
	"testing"
)

func TestZones(t *testing.T) {
	for _, tc := range []struct {
		index, zones int
		want         string
	}{
		{0, 3, "zone-1"}, {1, 3, "zone-2"}, {2, 3, "zone-3"}, {3, 3, "zone-1"}, {1000, 3, "zone-2"},
		{7, 1, "zone-1"}, {7, 0, "zone-1"}, {9, 10, "zone-10"},
	} {
		if got := ZoneOf(tc.index, tc.zones); got != tc.want {
			t.Errorf("ZoneOf(%d, %d) = %q, want %q", tc.index, tc.zones, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		n    int
		ok   bool
	}{
		{"zone-1", 1, true}, {"zone-12", 12, true}, {"zone-0", 0, false}, {"zone-01", 0, false},
		{"zone-", 0, false}, {"zone-+1", 0, false}, {"zone-1a", 0, false}, {"east", 0, false}, {"Zone-1", 0, false},
	} {
		if n, ok := parseZone(tc.name); n != tc.n || ok != tc.ok {
			t.Errorf("parseZone(%q) = %d, %v; want %d, %v", tc.name, n, ok, tc.n, tc.ok)
		}
	}
}
