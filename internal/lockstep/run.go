package lockstep

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"fakelet.dev/fakelet/profiles"
)

// Run is what every shard of one run must agree on, summed up in Hash; the Lease keeps both, so that
// a shard started with other parameters is refused with what differs.
type Run struct {
	// What the run plays: "profile NAME", or a capacity run's steps.
	What   string
	Nodes  int
	Shards int
	Hash   string
}

// RunOf describes a run of plan (resolved over the whole fleet) split into shards, its nodes named
// PREFIX-NNNNN. The hash covers the profile as parsed (not its file name, which may differ between
// machines), the fleet's size, seed, name prefix and shard count: any of them differing would make
// shards play different groups or overlapping nodes.
func RunOf(plan *profiles.Plan, namePrefix string, shards int) (Run, error) {
	p := plan.Profile
	doc, err := json.Marshal(struct {
		Metadata profiles.Metadata `json:"metadata"`
		Spec     profiles.Spec     `json:"spec"`
		Nodes    int               `json:"nodes"`
		Seed     int64             `json:"seed"`
		Prefix   string            `json:"prefix"`
		Shards   int               `json:"shards"`
	}{p.Metadata, p.Spec, plan.Nodes, plan.Seed, namePrefix, max(shards, 1)})
	if err != nil {
		return Run{}, fmt.Errorf("describe profile %s for the start Lease: %w", p.Metadata.Name, err)
	}
	return runOf("profile "+p.Metadata.Name, plan.Nodes, shards, doc), nil
}

// RunOfParameters describes a run without a profile (fakelet capacity's steps, what) of a fleet of
// nodes split into shards, whose every shard must share params: the hash covers their JSON.
func RunOfParameters(what string, nodes, shards int, params any) (Run, error) {
	doc, err := json.Marshal(struct {
		Params any `json:"params"`
		Nodes  int `json:"nodes"`
		Shards int `json:"shards"`
	}{params, nodes, max(shards, 1)})
	if err != nil {
		return Run{}, fmt.Errorf("describe %s for the start Lease: %w", what, err)
	}
	return runOf(what, nodes, shards, doc), nil
}

func runOf(what string, nodes, shards int, doc []byte) Run {
	sum := sha256.Sum256(doc)
	return Run{What: what, Nodes: nodes, Shards: max(shards, 1), Hash: hex.EncodeToString(sum[:8])}
}

func (r Run) String() string {
	return fmt.Sprintf("%s over %d nodes in %d shard(s)", r.What, r.Nodes, r.Shards)
}
