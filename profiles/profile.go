package profiles

import (
	"time"

	"fakelet.dev/fakelet/heartbeat"
)

// The document header every profile carries, so that a file of another kind (or a future version of
// this one) is refused rather than half understood.
const (
	APIVersion = "fakelet.dev/v1alpha1"
	Kind       = "Profile"
)

// Profile is one scenario: a fleet, named groups of its nodes, and phases of actions on those groups.
//
// Field names are the same in YAML, JSON, docs/profiles.md and error messages. A Profile returned by
// Parse or Load has its defaults filled in and has passed Validate.
type Profile struct {
	APIVersion string   `json:"apiVersion" yaml:"apiVersion"`
	Kind       string   `json:"kind" yaml:"kind"`
	Metadata   Metadata `json:"metadata" yaml:"metadata"`
	Spec       Spec     `json:"spec" yaml:"spec"`

	// Source says where the profile was read from (a file path, or builtin/NAME.yaml); errors name it.
	Source string `json:"-" yaml:"-"`
	// Raw is the document as written, comments included, so that `profiles show` and a run's record
	// can reproduce it exactly.
	Raw []byte `json:"-" yaml:"-"`

	// lines maps field paths to source lines, so that problems found after decoding still point at a
	// line. Nil for a profile built in code.
	lines map[string]int
}

// Metadata names and explains a profile.
type Metadata struct {
	Name string `json:"name" yaml:"name"`
	// Description says what question the profile answers and what a user should expect to see. Its
	// first line is the summary `fakelet profiles list` prints.
	Description string `json:"description,omitempty" yaml:"description"`
}

// Spec is the scenario itself.
type Spec struct {
	// Nodes is the default fleet size; `--nodes` overrides it.
	Nodes int `json:"nodes" yaml:"nodes"`
	// Zones is how many topology.kubernetes.io/zone values the nodes get, round-robin (see ZoneOf).
	// 0 means 1.
	Zones int `json:"zones,omitempty" yaml:"zones"`
	// PodsPerNode pods are bound to each node (spec.nodeName) and kept Running and Ready by its agent.
	PodsPerNode int `json:"podsPerNode,omitempty" yaml:"podsPerNode"`
	// PodTolerationSeconds, if set, is how long the pods tolerate the not-ready and unreachable
	// NoExecute taints before the taint eviction controller deletes them. Unset, the apiserver's
	// DefaultTolerationSeconds admission gives them 300 s. Only with podsPerNode above 0.
	PodTolerationSeconds *int64 `json:"podTolerationSeconds,omitempty" yaml:"podTolerationSeconds"`
	// Seed makes group selection and flap jitter reproducible; `--seed` overrides it.
	Seed      int64            `json:"seed,omitempty" yaml:"seed"`
	Heartbeat Heartbeat        `json:"heartbeat" yaml:"heartbeat"`
	Groups    map[string]Group `json:"groups,omitempty" yaml:"groups"`
	Phases    []Phase          `json:"phases" yaml:"phases"`
	// Workloads, if set, are the Deployments, Jobs and DaemonSets the run creates on its nodes
	// (profiles/workloads.go).
	Workloads *Workloads `json:"workloads,omitempty" yaml:"workloads"`
}

// Duration is the length of the whole run: the sum of its phases.
func (s *Spec) Duration() time.Duration {
	var d time.Duration
	for _, p := range s.Phases {
		d += p.Duration.Duration
	}
	return d
}

// Heartbeat holds the agent's heartbeat settings. The defaults are the kubelet's.
type Heartbeat struct {
	// Mode is lease (default) or status.
	Mode heartbeat.Mode `json:"mode" yaml:"mode"`
	// LeaseDurationSeconds is written into the Lease; the renew interval is a quarter of it, as in the
	// kubelet. Default 40.
	LeaseDurationSeconds int32 `json:"leaseDurationSeconds" yaml:"leaseDurationSeconds"`
	// StatusUpdateFrequency is how often the agent recomputes node status (and, in status mode, patches
	// it). Default 10s.
	StatusUpdateFrequency Duration `json:"statusUpdateFrequency" yaml:"statusUpdateFrequency"`
	// StatusReportFrequency is how often, in lease mode, an unchanged status is patched anyway.
	// Default 5m.
	StatusReportFrequency Duration `json:"statusReportFrequency" yaml:"statusReportFrequency"`
}

// RenewInterval is how often the Lease is renewed: a quarter of its duration, as the kubelet does.
func (h Heartbeat) RenewInterval() time.Duration {
	return heartbeat.RenewInterval(h.LeaseDurationSeconds)
}

// Config is the heartbeat configuration the profile asks for: the run's, unless a flag overrides it.
func (h Heartbeat) Config() heartbeat.Config {
	return heartbeat.Config{
		Mode:                  h.Mode,
		LeaseDurationSeconds:  h.LeaseDurationSeconds,
		StatusUpdateFrequency: h.StatusUpdateFrequency.Duration,
		StatusReportFrequency: h.StatusReportFrequency.Duration,
	}
}

// Group selects a subset of the fleet by exactly one of its selecting fields (percent, count, names,
// indexes, zone). Groups are chosen over the whole fleet, independently of each other (they may
// overlap), and only over the nodes the run starts with. A group may also shape its nodes (labels,
// taints, allocatable; see nodeshape.go).
type Group struct {
	// Percent of the fleet, in (0, 100]: rounded to the nearest node, at least one.
	Percent *float64 `json:"percent,omitempty" yaml:"percent"`
	// Count nodes, at most the fleet size.
	Count *int `json:"count,omitempty" yaml:"count"`
	// Names of nodes, as the fleet names them.
	Names []string `json:"names,omitempty" yaml:"names"`
	// Indexes of nodes, as ranges: "0-9,20".
	Indexes string `json:"indexes,omitempty" yaml:"indexes"`
	// Zone selects every node of one zone, zone-1 to zone-N (see ZoneOf).
	Zone string `json:"zone,omitempty" yaml:"zone"`

	// Labels and Taints are added to those the group's nodes register with, Allocatable replaces
	// their allocatable cpu, memory or pods: laid over the fleet's (fakelet run --node-label,
	// --node-taint, --node-allocatable). A node is in one shaped group at most.
	Labels      map[string]string `json:"labels,omitempty" yaml:"labels"`
	Taints      []Taint           `json:"taints,omitempty" yaml:"taints"`
	Allocatable map[string]string `json:"allocatable,omitempty" yaml:"allocatable"`
}

// Phase is a stretch of the run with the actions that happen during it. Phases run one after another.
type Phase struct {
	Name     string   `json:"name" yaml:"name"`
	Duration Duration `json:"duration" yaml:"duration"`
	Actions  []Action `json:"actions,omitempty" yaml:"actions"`
}

// Action does one thing (Do) to the nodes of a group, at an offset into its phase, optionally staggered
// over the group. Only the parameter fields of its verb may be set; see the Verb constants.
type Action struct {
	Group string `json:"group,omitempty" yaml:"group"`
	Do    Verb   `json:"do" yaml:"do"`
	// At is the offset into the phase when the action starts.
	At Duration `json:"at,omitempty" yaml:"at"`
	// Spread staggers the group's members evenly over this window, starting at At.
	Spread Duration `json:"spread,omitempty" yaml:"spread"`

	// flap
	Period *Duration `json:"period,omitempty" yaml:"period"`
	Duty   *float64  `json:"duty,omitempty" yaml:"duty"`
	Jitter *Duration `json:"jitter,omitempty" yaml:"jitter"`

	// notReady
	Reason  string `json:"reason,omitempty" yaml:"reason"`
	Message string `json:"message,omitempty" yaml:"message"`

	// condition
	Type   ConditionType   `json:"type,omitempty" yaml:"type"`
	Status ConditionStatus `json:"status,omitempty" yaml:"status"`

	// latency
	Delay *Duration `json:"delay,omitempty" yaml:"delay"`

	// mode
	Mode heartbeat.Mode `json:"mode,omitempty" yaml:"mode"`

	// restart
	Downtime *Duration `json:"downtime,omitempty" yaml:"downtime"`

	// crashPods
	ExitCode *int32 `json:"exitCode,omitempty" yaml:"exitCode"`

	// churn
	Add    int      `json:"add,omitempty" yaml:"add"`
	Remove int      `json:"remove,omitempty" yaml:"remove"`
	Rate   *float64 `json:"rate,omitempty" yaml:"rate"`
}

// ConditionType is a node pressure condition an action can set.
type ConditionType string

const (
	MemoryPressure ConditionType = "MemoryPressure"
	DiskPressure   ConditionType = "DiskPressure"
	PIDPressure    ConditionType = "PIDPressure"
)

// ConditionStatus is the status a condition action sets: Unknown is the node lifecycle controller's to
// set, not a kubelet's.
type ConditionStatus string

const (
	ConditionTrue  ConditionStatus = "True"
	ConditionFalse ConditionStatus = "False"
)
