package heartbeat

import (
	"strings"
	"testing"
	"time"
)

func TestResolveTakesTheKubeletsDefaults(t *testing.T) {
	got, err := Config{}.Resolve()
	want := Config{Mode: ModeLease, LeaseDurationSeconds: 40, RenewInterval: 10 * time.Second,
		StatusUpdateFrequency: 10 * time.Second, StatusReportFrequency: 5 * time.Minute}
	if err != nil || got != want {
		t.Fatalf("Config{}.Resolve() = %+v, %v; want %+v", got, err, want)
	}
	if got, _ := (Config{LeaseDurationSeconds: 6}).Resolve(); got.RenewInterval != 1500*time.Millisecond {
		t.Errorf("a 6 s lease renews every %v, want a quarter of it", got.RenewInterval)
	}
}

func TestResolveRefusesWhatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Mode: "gossip"}, "unknown heartbeat mode"},
		{Config{LeaseDurationSeconds: -1}, "lease duration must be positive"},
		{Config{LeaseDurationSeconds: 40, RenewInterval: time.Minute}, "shorter than the lease duration"},
		{Config{StatusUpdateFrequency: time.Minute, StatusReportFrequency: time.Second}, "must not be shorter than the update frequency"},
	} {
		if _, err := tc.c.Resolve(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.c, err, tc.want)
		}
	}
}
