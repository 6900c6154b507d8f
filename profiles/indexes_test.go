package profiles

import (
	"strings"
	"testing"
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
