// Package heartbeat holds a kubelet's heartbeat settings: how it tells the control plane it is alive
// (a Lease, or the node status alone), how often, and the kubelet's defaults for each. A profile
// produces a Config, the CLI lays its flags over it, the fleet hands it to every agent; it is
// defaulted and validated once, by Resolve, before anything starts.
package heartbeat

import (
	"fmt"
	"time"

	"fakelet.dev/fakelet/internal/enum"
)

// Mode is how a fake kubelet heartbeats.
type Mode string

const (
	// ModeLease renews a Lease every renew interval and patches the node status on change or every
	// report period: the kubelet's behaviour since Kubernetes 1.17.
	ModeLease Mode = "lease"
	// ModeStatus patches the node status every update period and keeps no Lease: the kubelet before
	// KEP-589, kept to measure what Leases save.
	ModeStatus Mode = "status"
)

// ParseMode checks a mode given by a user.
func ParseMode(s string) (Mode, error) { return enum.Parse("heartbeat mode", s, ModeLease, ModeStatus) }

// Kubelet defaults (v1.37), each named as the kubelet names it, so that a run that says nothing about
// heartbeats loads the control plane the way real kubelets do.
const (
	DefaultMode                  = ModeLease
	DefaultLeaseDurationSeconds  = 40
	DefaultStatusUpdateFrequency = 10 * time.Second
	DefaultStatusReportFrequency = 5 * time.Minute
	// RenewIntervalFraction is the kubelet's nodeLeaseRenewIntervalFraction.
	RenewIntervalFraction = 0.25
)

// RenewInterval is the kubelet's renew interval for a lease of leaseDurationSeconds.
func RenewInterval(leaseDurationSeconds int32) time.Duration {
	return time.Duration(RenewIntervalFraction * float64(time.Duration(leaseDurationSeconds)*time.Second))
}

// Config holds the timing of a kubelet's heartbeats. Zero fields take the kubelet's defaults.
type Config struct {
	Mode                 Mode
	LeaseDurationSeconds int32
	// RenewInterval is how often the Lease is renewed; 0 is RenewIntervalFraction of the duration.
	RenewInterval         time.Duration
	StatusUpdateFrequency time.Duration
	// StatusReportFrequency is how often an unchanged status is patched in lease mode. In status mode
	// it is StatusUpdateFrequency, as for a kubelet that sets only --node-status-update-frequency.
	StatusReportFrequency time.Duration
}

// Resolve returns c with its defaults, or the first field that cannot work. It is the heartbeat's one
// default and one check: a fleet's configuration calls it (fleet.Config.Resolve), and what comes
// after reads the fields it set.
func (c Config) Resolve() (Config, error) {
	c = c.withDefaults()
	return c, c.validate()
}

// withDefaults returns c with every zero field set to the kubelet's default.
func (c Config) withDefaults() Config {
	if c.Mode == "" {
		c.Mode = DefaultMode
	}
	if c.LeaseDurationSeconds == 0 {
		c.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if c.RenewInterval == 0 {
		c.RenewInterval = RenewInterval(c.LeaseDurationSeconds)
	}
	if c.StatusUpdateFrequency == 0 {
		c.StatusUpdateFrequency = DefaultStatusUpdateFrequency
	}
	if c.StatusReportFrequency == 0 {
		c.StatusReportFrequency = DefaultStatusReportFrequency
	}
	return c
}

// validate reports the first field that cannot work.
func (c Config) validate() error {
	if _, err := ParseMode(string(c.Mode)); err != nil {
		return err
	}
	switch {
	case c.LeaseDurationSeconds <= 0:
		return fmt.Errorf("lease duration must be positive, got %ds", c.LeaseDurationSeconds)
	case c.RenewInterval <= 0:
		return fmt.Errorf("lease renew interval must be positive, got %v", c.RenewInterval)
	case c.RenewInterval >= time.Duration(c.LeaseDurationSeconds)*time.Second:
		return fmt.Errorf("lease renew interval %v must be shorter than the lease duration %ds", c.RenewInterval, c.LeaseDurationSeconds)
	case c.StatusUpdateFrequency <= 0:
		return fmt.Errorf("status update frequency must be positive, got %v", c.StatusUpdateFrequency)
	case c.StatusReportFrequency < c.StatusUpdateFrequency:
		return fmt.Errorf("status report frequency %v must not be shorter than the update frequency %v", c.StatusReportFrequency, c.StatusUpdateFrequency)
	}
	return nil
}
