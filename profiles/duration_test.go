package profiles

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

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
