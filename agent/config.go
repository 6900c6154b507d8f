package agent

import (
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"

	"fakelet.dev/fakelet/internal/scheduler"
)

// Mode is how a fake kubelet heartbeats.
type Mode string

const (
	// ModeLease renews a Lease every renew interval and patches the node status on change or every
	// report period: the kubelet's behaviour since Kubernetes 1.17.
	ModeLease Mode = "lease"
	// ModeStatus patches the node status every update period and keeps no Lease: the kubelet before
	// KEP-589, for comparing heartbeat load.
	ModeStatus Mode = "status"
)

// ParseMode checks a mode given by a user.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case ModeLease, ModeStatus:
		return Mode(s), nil
	}
	return "", fmt.Errorf("unknown heartbeat mode %q (want %q or %q)", s, ModeLease, ModeStatus)
}

// Kubelet defaults (v1.37), each named as the kubelet names it.
const (
	DefaultLeaseDurationSeconds  = 40
	DefaultStatusUpdateFrequency = 10 * time.Second
	DefaultStatusReportFrequency = 5 * time.Minute
	// renewIntervalFraction is the kubelet's nodeLeaseRenewIntervalFraction.
	renewIntervalFraction = 0.25
	// loopJitter is the jitter factor of the kubelet's lease and status loops.
	loopJitter = 0.04
	// RequestTimeout is the kubelet's heartbeat client timeout, min(10 s, lease duration).
	RequestTimeout = 10 * time.Second
	// statusUpdateRetries is the kubelet's nodeStatusUpdateRetry.
	statusUpdateRetries = 5
	// leaseUpdateRetries is the lease controller's maxUpdateRetries.
	leaseUpdateRetries = 5
	// MaxBackoff caps both registration and lease-creation backoff.
	MaxBackoff = 7 * time.Second
	// LeaseNamespace is where kubelets keep their node leases.
	LeaseNamespace = corev1.NamespaceNodeLease
)

// Heartbeat holds the timing of a kubelet's heartbeats. Zero fields take the kubelet's defaults.
type Heartbeat struct {
	Mode                  Mode
	LeaseDurationSeconds  int32
	RenewInterval         time.Duration // default 0.25 x lease duration
	StatusUpdateFrequency time.Duration
	// StatusReportFrequency is how often an unchanged status is patched in lease mode. In status mode
	// it is StatusUpdateFrequency, as for a kubelet that sets only --node-status-update-frequency.
	StatusReportFrequency time.Duration
}

// WithDefaults returns h with every zero field set to the kubelet's default.
func (h Heartbeat) WithDefaults() Heartbeat {
	if h.Mode == "" {
		h.Mode = ModeLease
	}
	if h.LeaseDurationSeconds == 0 {
		h.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if h.RenewInterval == 0 {
		h.RenewInterval = time.Duration(renewIntervalFraction * float64(time.Duration(h.LeaseDurationSeconds)*time.Second))
	}
	if h.StatusUpdateFrequency == 0 {
		h.StatusUpdateFrequency = DefaultStatusUpdateFrequency
	}
	if h.StatusReportFrequency == 0 {
		h.StatusReportFrequency = DefaultStatusReportFrequency
	}
	return h
}

// Validate reports the first field that cannot work.
func (h Heartbeat) Validate() error {
	if _, err := ParseMode(string(h.Mode)); err != nil {
		return err
	}
	switch {
	case h.LeaseDurationSeconds <= 0:
		return fmt.Errorf("lease duration must be positive, got %ds", h.LeaseDurationSeconds)
	case h.RenewInterval <= 0:
		return fmt.Errorf("lease renew interval must be positive, got %v", h.RenewInterval)
	case h.RenewInterval >= time.Duration(h.LeaseDurationSeconds)*time.Second:
		return fmt.Errorf("lease renew interval %v must be shorter than the lease duration %ds", h.RenewInterval, h.LeaseDurationSeconds)
	case h.StatusUpdateFrequency <= 0:
		return fmt.Errorf("status update frequency must be positive, got %v", h.StatusUpdateFrequency)
	case h.StatusReportFrequency < h.StatusUpdateFrequency:
		return fmt.Errorf("status report frequency %v must not be shorter than the update frequency %v", h.StatusReportFrequency, h.StatusUpdateFrequency)
	}
	return nil
}

// Config is what every agent of a fleet shares. It must not change once agents run.
type Config struct {
	Template  *Template
	Heartbeat Heartbeat
	// Footprint is which of a kubelet's requests the agents make; "" is FootprintHeartbeat.
	Footprint Footprint
	Scheduler *scheduler.Scheduler
	// Rand returns a float in [0, 1) for the kubelet's jitter and report delay; nil means math/rand/v2.
	Rand func() float64
	// Recorder receives every request and heartbeat outcome; nil records nothing.
	Recorder Recorder
	// OnFatal is called once when an agent gives up for good, for example because a Node with its name
	// belongs to someone else.
	OnFatal func(a *Agent, err error)
}

func (c *Config) rand() float64 {
	if c.Rand != nil {
		return c.Rand()
	}
	return rand.Float64()
}

// jitter is wait.Jitter: d plus up to maxFactor x d.
func (c *Config) jitter(d time.Duration, maxFactor float64) time.Duration {
	return d + time.Duration(c.rand()*maxFactor*float64(d))
}
