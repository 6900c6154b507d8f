package profiles

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseIndexes(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []indexRange
		wantErr string
	}{
		{in: "0", want: []indexRange{{0, 0}}},
		{in: "0-9,20", want: []indexRange{{0, 9}, {20, 20}}},
		{in: " 3 - 5 , 7 ", want: []indexRange{{3, 5}, {7, 7}}},
		{in: "5-5,0-9", want: []indexRange{{5, 5}, {0, 9}}},
		{in: "", wantErr: `is empty (write indexes like "0-9,20")`},
		{in: "1,,2", wantErr: `item 2 is empty (write indexes like "0-9,20")`},
		{in: "1,", wantErr: `item 2 is empty`},
		{in: "x", wantErr: `item "x": "x" is not a node index`},
		{in: "-1", wantErr: `item "-1": "" is not a node index`},
		{in: "1-2-3", wantErr: `item "1-2-3": "2-3" is not a node index`},
		{in: "+1", wantErr: `item "+1": "+1" is not a node index`},
		{in: "9-3", wantErr: `item "9-3": the range runs backwards`},
		{in: "1000000", wantErr: `item "1000000": index 1000000 is beyond the largest fleet fakelet runs (1000000 nodes)`},
		{in: "99999999999999999999999", wantErr: `is beyond the largest fleet`},
	} {
		got, err := parseIndexes(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseIndexes(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("parseIndexes(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("parseIndexes(%q) = %v, want %v", tc.in, got, tc.want)
			}
		}
	}
}

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

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "90s", want: 90 * time.Second},
		{in: "1m30s", want: 90 * time.Second},
		{in: "0s", want: 0},
		{in: "0", want: 0},
		{in: "1.5h", want: 90 * time.Minute},
		{in: "-1s", wantErr: `duration "-1s" is negative`},
		{in: "60", wantErr: `"60" is not a duration (write it like 90s, 5m or 1m30s)`},
		{in: "soon", wantErr: `"soon" is not a duration`},
		{in: "", wantErr: `"" is not a duration`},
	} {
		got, err := ParseDuration(tc.in)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseDuration(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got.Duration != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	var d Duration
	if err := json.Unmarshal([]byte(`"2m"`), &d); err != nil || d.Duration != 2*time.Minute {
		t.Errorf("json %q -> %v, %v", `"2m"`, d, err)
	}
	for _, bad := range []string{`120`, `"-2m"`} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("json %s: no error", bad)
		}
	}
	if b, _ := json.Marshal(Duration{90 * time.Second}); string(b) != `"1m30s"` {
		t.Errorf("json marshal = %s", b)
	}
}

func TestVerbsDocumented(t *testing.T) {
	// Every verb must be described in docs/profiles.md, under its own heading.
	docs := readDocs(t)
	for _, v := range Verbs() {
		if !strings.Contains(docs, "### "+string(v)) {
			t.Errorf("docs/profiles.md has no section for %q", v)
		}
	}
}
