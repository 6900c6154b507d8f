package main

import (
	"fmt"
	"time"

	"fakelet.dev/fakelet/heartbeat"
)

// heartbeatFlags are the flags of the heartbeat configuration, which a profile's spec.heartbeat gives
// when they are not.
var heartbeatFlags = []string{"mode", "lease-duration", "renew-interval", "status-update-frequency", "status-report-frequency"}

// heartbeat lays every heartbeat flag given over base and checks each value as its flag, naming the
// profile when the value is the profile's. What makes a configuration work as a whole is left to
// heartbeat.Config.Resolve.
func (rf *runFlags) heartbeat(base heartbeat.Config) (heartbeat.Config, error) {
	hb, given := base, func(name string) bool { return !rf.fromProfile[name] }
	if given("mode") {
		mode, err := heartbeat.ParseMode(rf.mode)
		if err != nil {
			return hb, fmt.Errorf("--mode: %w", err)
		}
		hb.Mode = mode
	}
	if given("lease-duration") {
		if rf.leaseDuration <= 0 || rf.leaseDuration%time.Second != 0 {
			return hb, fmt.Errorf("%s must be a positive whole number of seconds, got %v", rf.flag("lease-duration"), rf.leaseDuration)
		}
		if rf.leaseDuration > maxLeaseDuration {
			return hb, fmt.Errorf("%s %ds: at most %ds, since a Lease holds its duration in seconds as a 32-bit integer",
				rf.flag("lease-duration"), rf.leaseDuration/time.Second, maxLeaseDuration/time.Second)
		}
		hb.LeaseDurationSeconds = int32(rf.leaseDuration / time.Second)
	}
	var runDuration time.Duration // not a heartbeat setting, checked here in its flag's order
	for _, d := range []struct {
		name  string
		flag  time.Duration
		value *time.Duration
	}{
		{"renew-interval", rf.renewInterval, &hb.RenewInterval},
		{"duration", rf.duration, &runDuration},
		{"status-update-frequency", rf.statusUpdateFrequency, &hb.StatusUpdateFrequency},
		{"status-report-frequency", rf.statusReportFrequency, &hb.StatusReportFrequency},
	} {
		if given(d.name) {
			*d.value = d.flag
		}
		if *d.value < 0 {
			return hb, fmt.Errorf("%s must not be negative, got %v", rf.flag(d.name), *d.value)
		}
	}
	if hb.RenewInterval != 0 && hb.RenewInterval < minRenewInterval {
		return hb, fmt.Errorf("%s %v: at least %v, a kubelet's shortest (a quarter of a one-second lease)", rf.flag("renew-interval"), hb.RenewInterval, minRenewInterval)
	}
	if hb.StatusUpdateFrequency != 0 && hb.StatusUpdateFrequency < minStatusUpdateFrequency {
		return hb, fmt.Errorf("%s %v: at least %v, since a status's heartbeat times have whole seconds", rf.flag("status-update-frequency"), hb.StatusUpdateFrequency, minStatusUpdateFrequency)
	}
	return hb, nil
}
