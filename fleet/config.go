// Package fleet runs many fake kubelets in one process: it builds their shared clients and node
// template, checks the cluster before writing anything, registers them at a bounded rate, keeps one
// watch on their Nodes for all of them, and deletes what it created when it stops.
package fleet

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/transport"
)

// Config describes a fleet.
type Config struct {
	Nodes      int
	FirstIndex int    // node numbers run FirstIndex..FirstIndex+Nodes-1
	NamePrefix string // node i is PREFIX-NNNNN
	Fleet      string // value of the fakelet.dev/fleet label
	Zones      int    // nodes get topology.kubernetes.io/zone zone-1..zone-Zones round-robin; 0 sets none
	Heartbeat  heartbeat.Config
	// Footprint is which of a kubelet's requests the agents make; "" is agent.DefaultFootprint.
	Footprint agent.Footprint
	Template  agent.TemplateOptions // Fleet is taken from Fleet
	Identity  Identity
	// ConnectionMode is how the agents reach the apiserver; "" is ConnectionsShared.
	ConnectionMode ConnectionMode
	// Connections is, with ConnectionsShared, the sets of HTTP/2 connections the agents share; 0
	// picks one per 1000 nodes. Per-node connections are one per node, and leave it 0.
	Connections int
	// NodeCredentials, if set, gives every node a client certificate of its own over its per-node
	// connection, with IdentityNode; without it a per-node connection impersonates its node.
	NodeCredentials transport.NodeCredentials
	RegisterQPS     float64 // agents started per second
	Keep            bool    // leave Nodes and Leases behind on shutdown
	// Clock is the agents' and their transport's clock (the wire connections' health checks and
	// the Retry-After waits included); nil: the real clock.
	Clock clock.WithDelayedExecution
	// Coalesce is the step of the fleet's timers: work due within one step runs together at its end
	// (scheduler.Coalesce); 0 runs everything at its own time.
	Coalesce time.Duration
	// LegacyWire sends lease renewals and the agents' watches over net/http and status patches
	// through client-go, as before the wire package did, to compare the two (fakelet run's hidden
	// --legacy-wire).
	LegacyWire bool
	// FlushWindow is how long each wire connection's writer may hold written requests for more
	// before one write sends them all (wire.Config.FlushWindow): 0 is transport.MaxFlushWindow; negative
	// writes as soon as its queue is empty (fakelet run's hidden --flush-window).
	FlushWindow time.Duration
	// ZoneOf names node index's zone; nil uses zone-(index mod Zones + 1).
	ZoneOf func(index, zones int) string
	// Recorder, if set, receives every agent's requests and heartbeats besides the fleet's Tally.
	Recorder agent.Recorder
	// PodsPerNode pods are created bound to each node once it registered, and kept Running and Ready
	// by its agent (see pods.go); 0 runs no pods and needs no permission on pods.
	PodsPerNode int
	// PodTolerationSeconds, if set, is how long the pods tolerate the not-ready and unreachable
	// NoExecute taints; nil leaves the apiserver's default (300 s).
	PodTolerationSeconds *int64
	// PodQPS is how many pods the fleet creates per second at most.
	PodQPS float64
	// PodTiming is the fake runtime's timing of every pod the agents run, the fleet's and any other
	// bound to their nodes (agent.PodTiming; a pod's annotations override it). The zero value is
	// the hollow kubelet's: containers start and are ready at once, and those of a pod with
	// restartPolicy Never or OnFailure exit 0 as soon as they run.
	PodTiming agent.PodTiming
	// Workloads, if set, is what the run does with its profile's workloads in its own namespace,
	// WorkloadNamespace(Fleet, RunID): the preflight checks it (WorkloadPermissions).
	Workloads *WorkloadAccess
	// RunID names this run on every object it creates or adopts (fleetname.RunAnnotation); empty picks
	// a new one (NewRunID).
	RunID string
	// Shard is which of the fleet's shards this run is (the zero Shard: the whole fleet), for its
	// claim (ClaimName): a run holds its shard of the fleet or refuses to start.
	Shard fleetname.Shard
	// Log, if set, receives what the checks before the run wait for (another run's heartbeats).
	Log io.Writer
	// CleanupQPS is how many deletions a second the cleanup at the end of the run sends.
	CleanupQPS float64
	// CleanupLog, if set, receives the end-of-run cleanup's progress lines.
	CleanupLog io.Writer
}

// Defaults for a Config's zero fields.
const (
	DefaultRegisterQPS = 100
	DefaultPodQPS      = 100
	// DefaultCleanupQPS sends the 20,000 deletions of 10,000 Nodes and their Leases in 200 s, a
	// small share of what an apiserver serves, so that a shared control plane's other clients
	// keep their room.
	DefaultCleanupQPS = 100
	// MaxPodsPerNode is the pod capacity the nodes report.
	MaxPodsPerNode = 110
	// MaxCoalesce bounds Config.Coalesce: a longer step would hold heartbeats back by more than their
	// timing is meant to vary.
	MaxCoalesce = time.Second
)

// Resolved is a fleet's configuration with its defaults, checked. Only Config.Resolve makes one, and
// New, NewWithClients and Permissions take nothing else, so that no one downstream defaults or checks
// a configuration again; the zero Resolved is none, and New refuses it.
type Resolved struct {
	c *Config // never changed once Resolve made it: Config and the With methods copy it
}

// Resolve returns c with its defaults, or the first setting that cannot work: the one default and the
// one check of a fleet's configuration, its heartbeat's included (heartbeat.Config.Resolve).
func (c Config) Resolve() (Resolved, error) {
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return Resolved{}, err
	}
	hb, err := c.Heartbeat.Resolve()
	if err != nil {
		return Resolved{}, fmt.Errorf("heartbeat: %w", err)
	}
	c.Heartbeat = hb
	return Resolved{c: &c}, nil
}

// Config returns a copy of the resolved configuration, every default in place, to read: a copy
// changed is a Config again, and only Resolve makes it a Resolved.
func (r Resolved) Config() Config {
	if r.c == nil {
		return Config{}
	}
	return *r.c
}

// WithNodeCredentials returns r whose per-node connections carry creds (Config.NodeCredentials),
// which a run knows only once it knows its target; they have no default and nothing to check. The
// zero Resolved stays the zero one.
func (r Resolved) WithNodeCredentials(creds transport.NodeCredentials) Resolved {
	if r.c == nil {
		return r
	}
	c := *r.c
	c.NodeCredentials = creds
	return Resolved{c: &c}
}

// WithFirstNodes returns r for a fleet that starts with the first n of r's nodes and grows to all of
// them (AddNodes, fakelet capacity's steps): r was checked at its largest, and its connections
// stay those of the whole fleet.
func (r Resolved) WithFirstNodes(n int) (Resolved, error) {
	c := r.Config()
	if n <= 0 || n > c.Nodes {
		return Resolved{}, fieldError("Nodes", "nodes", "must be between 1 and %d, got %d", c.Nodes, n)
	}
	c.Nodes = n
	return Resolved{c: &c}, nil
}

// withDefaults returns c with zero fields set, but for its heartbeat's (heartbeat.Config.Resolve).
func (c Config) withDefaults() Config {
	if c.NamePrefix == "" {
		c.NamePrefix = fleetname.DefaultNamePrefix
	}
	if c.Fleet == "" {
		c.Fleet = fleetname.DefaultFleet
	}
	if c.Footprint == "" {
		c.Footprint = agent.DefaultFootprint
	}
	if c.Identity == "" {
		c.Identity = IdentityNode
	}
	if c.RegisterQPS == 0 {
		c.RegisterQPS = DefaultRegisterQPS
	}
	if c.PodQPS == 0 {
		c.PodQPS = DefaultPodQPS
	}
	if c.ConnectionMode == "" {
		c.ConnectionMode = ConnectionsShared
	}
	if c.Connections == 0 && c.ConnectionMode == ConnectionsShared {
		c.Connections = max(1, (c.Nodes+999)/1000)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.RunID == "" {
		c.RunID = fleetname.NewRunID(c.Clock.Now())
	}
	if c.CleanupQPS == 0 {
		c.CleanupQPS = DefaultCleanupQPS
	}
	c.Template.Fleet = c.Fleet
	c.Template.RunID = c.RunID
	return c
}

// validate reports the first setting that cannot work, but for its heartbeat's; a numeric field out of
// range is a *FieldError, so that a caller can name the field as its user set it.
func (c Config) validate() error {
	switch {
	case c.Nodes <= 0:
		return fieldError("Nodes", "nodes", "must be positive, got %d", c.Nodes)
	case c.FirstIndex < 0:
		return fmt.Errorf("first node index must not be negative, got %d", c.FirstIndex)
	case c.Nodes > fleetname.MaxNodes || c.FirstIndex > fleetname.MaxNodes-c.Nodes:
		return fmt.Errorf("node numbers %d..%d go beyond the largest fleet fakelet runs (%d nodes)", c.FirstIndex, c.FirstIndex+min(c.Nodes, fleetname.MaxNodes)-1, fleetname.MaxNodes)
	case fleetname.CheckNamePrefix(c.NamePrefix) != nil:
		return fleetname.CheckNamePrefix(c.NamePrefix)
	case fleetname.CheckFleet(c.Fleet) != nil:
		return fleetname.CheckFleet(c.Fleet)
	case c.Zones < 0:
		return fieldError("Zones", "zones", "must not be negative, got %d", c.Zones)
	case c.Connections < 0:
		return fieldError("Connections", "connections", "must not be negative, got %d", c.Connections)
	case c.ConnectionMode == ConnectionsPerNode && c.Connections != 0:
		return fieldError("Connections", "connections", "is one per node with per-node connections, got %d shared ones too", c.Connections)
	case c.ConnectionMode == ConnectionsPerNode && c.LegacyWire:
		return errors.New("the legacy wire path is one of shared connections: per-node connections send everything over net/http")
	case c.FlushWindow > transport.MaxFlushWindow:
		return fmt.Errorf("flush window must be at most %v, got %v", transport.MaxFlushWindow, c.FlushWindow)
	case c.Coalesce < 0 || c.Coalesce > MaxCoalesce:
		return fieldError("Coalesce", "coalesce", "must be between 0 and %v, got %v", MaxCoalesce, c.Coalesce)
	case !(c.RegisterQPS > 0) || math.IsInf(c.RegisterQPS, 1):
		return fieldError("RegisterQPS", "register QPS", "must be positive and finite, got %v", c.RegisterQPS)
	case c.PodsPerNode < 0 || c.PodsPerNode > MaxPodsPerNode:
		return fmt.Errorf("pods per node must be between 0 and %d (a node's pod capacity), got %d", MaxPodsPerNode, c.PodsPerNode)
	case c.PodTolerationSeconds != nil && c.PodsPerNode == 0:
		return fmt.Errorf("a pod toleration applies to pods, and pods per node is 0")
	case c.PodTolerationSeconds != nil && *c.PodTolerationSeconds < 0:
		return fmt.Errorf("pod toleration seconds must not be negative, got %d", *c.PodTolerationSeconds)
	case !(c.PodQPS > 0) || math.IsInf(c.PodQPS, 1):
		return fieldError("PodQPS", "pod QPS", "must be positive and finite, got %v", c.PodQPS)
	case c.PodTiming.ImagePull < 0:
		return fieldError("PodTiming.ImagePull", "pod image pull delay", "must not be negative, got %v", c.PodTiming.ImagePull)
	case c.PodTiming.Start < 0:
		return fieldError("PodTiming.Start", "pod start delay", "must not be negative, got %v", c.PodTiming.Start)
	case c.PodTiming.Ready < 0:
		return fieldError("PodTiming.Ready", "pod ready delay", "must not be negative, got %v", c.PodTiming.Ready)
	case c.PodTiming.RunDuration < 0:
		return fieldError("PodTiming.RunDuration", "pod run duration", "must not be negative, got %v", c.PodTiming.RunDuration)
	case CheckCleanupQPS(c.CleanupQPS) != nil:
		return fieldError("CleanupQPS", "cleanup QPS", "%v", CheckCleanupQPS(c.CleanupQPS))
	case fleetname.CheckRunID(c.RunID) != nil:
		return fleetname.CheckRunID(c.RunID)
	}
	if _, err := agent.ParseFootprint(string(c.Footprint)); err != nil {
		return err
	}
	if _, err := ParseIdentity(string(c.Identity)); err != nil {
		return err
	}
	if _, err := ParseConnectionMode(string(c.ConnectionMode)); err != nil {
		return err
	}
	return nil
}

// FieldError is a numeric field of Config out of range.
type FieldError struct {
	Field   string // as Config spells it: "Nodes", "RegisterQPS"
	name    string // as the message speaks of it: "nodes", "register QPS"
	Problem string // "must be positive, got 0"
}

func (e *FieldError) Error() string { return e.name + " " + e.Problem }

func fieldError(field, name, format string, args ...any) *FieldError {
	return &FieldError{Field: field, name: name, Problem: fmt.Sprintf(format, args...)}
}

func (c *Config) zone(index int) string {
	if c.Zones <= 0 {
		return ""
	}
	if c.ZoneOf != nil {
		return c.ZoneOf(index, c.Zones)
	}
	return fleetname.Zone(index, c.Zones)
}
