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
	Profile string
	Nodes   int
	Shards  int
	Hash    string
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
	sum := sha256.Sum256(doc)
	return Run{Profile: p.Metadata.Name, Nodes: plan.Nodes, Shards: max(shards, 1), Hash: hex.EncodeToString(sum[:8])}, nil
}

func (r Run) String() string {
	return fmt.Sprintf("profile %s over %d nodes in %d shard(s)", r.Profile, r.Nodes, r.Shards)
}
