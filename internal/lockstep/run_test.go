package lockstep

import (
	"testing"

	"fakelet.dev/fakelet/profiles"
)

// TestRunHashCoversWhatShardsMustShare: the hash changes with the profile, the fleet's size, seed,
// name prefix and shard count, and not with where the profile file was read from.
func TestRunHashCoversWhatShardsMustShare(t *testing.T) {
	plan := func(name string, nodes int, seed int64) *profiles.Plan {
		p, err := profiles.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		f := p.Fleet()
		f.Nodes, f.Seed = nodes, seed
		pl, err := p.Resolve(f)
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	hash := func(pl *profiles.Plan, prefix string, shards int) string {
		r, err := RunOf(pl, prefix, shards)
		if err != nil {
			t.Fatal(err)
		}
		return r.Hash
	}
	base := hash(plan("stop-10pct", 1000, 1), "fakelet", 10)
	moved := plan("stop-10pct", 1000, 1)
	moved.Profile.Source = "/elsewhere/stop-10pct.yaml"
	if h := hash(moved, "fakelet", 10); h != base {
		t.Errorf("the same run read from another path hashes %s, want %s", h, base)
	}
	for name, h := range map[string]string{
		"another profile": hash(plan("steady", 1000, 1), "fakelet", 10),
		"another size":    hash(plan("stop-10pct", 1001, 1), "fakelet", 10),
		"another seed":    hash(plan("stop-10pct", 1000, 2), "fakelet", 10),
		"another prefix":  hash(plan("stop-10pct", 1000, 1), "fk", 10),
		"another split":   hash(plan("stop-10pct", 1000, 1), "fakelet", 5),
	} {
		if h == base {
			t.Errorf("%s hashes as the run does (%s)", name, h)
		}
	}
	if r, _ := RunOf(plan("stop-10pct", 1000, 1), "fakelet", 0); r.String() != "profile stop-10pct over 1000 nodes in 1 shard(s)" {
		t.Errorf("an unsharded run reads %q", r)
	}
}
