package agent

import (
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"

	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/internal/scheduler"
)

// Kubelet constants (v1.37) that no flag changes, each named as the kubelet names it; the heartbeat
// settings and their defaults are package heartbeat's.
const (
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

// Config is what every agent of a fleet shares. It must not change once agents run.
type Config struct {
	Template  *Template
	Heartbeat heartbeat.Config // resolved (heartbeat.Config.Resolve)
	// Footprint is which of a kubelet's requests the agents make; "" is DefaultFootprint.
	Footprint Footprint
	Scheduler *scheduler.Scheduler
	// Pods is the fake runtime's timing of the node's pods (pod_spec.go).
	Pods PodTiming
	// Rand returns a float in [0, 1) for the kubelet's jitter and report delay; nil means math/rand/v2.
	Rand func() float64
	// Recorder receives every request and heartbeat outcome; nil records nothing.
	Recorder Recorder
	// OnFatal is called once when an agent gives up for good, for example because a Node with its name
	// belongs to someone else.
	OnFatal func(a *Agent, err error)
	// Adoptable says which of its fleet's objects another run holds an agent may take over (held.go);
	// nil takes over none.
	Adoptable Adoptable
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
