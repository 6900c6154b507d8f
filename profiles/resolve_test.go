package profiles

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func mustParse(t testing.TB, spec string) *Profile {
	t.Helper()
	p, err := Parse("t.yaml", []byte(doc(spec)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustResolve(t testing.TB, p *Profile, nodes int, seed int64) *Plan {
	t.Helper()
	f := p.Fleet()
	f.Nodes, f.Seed = nodes, seed
	plan, err := p.Resolve(f)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// testNodeIndex is a naming scheme for tests: node-<index>.
func testNodeIndex(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, "node-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(digits)
	return i, err == nil
}

const groupsSpec = `nodes: 20
zones: 3
groups:
  pct: {percent: 10}
  pct2: {percent: 10}
  tiny: {percent: 0.1}
  all: {percent: 100}
  count: {count: 5}
  names: {names: [node-7, node-3, node-7x]}
  idx: {indexes: "0-2,10,1"}
  zone: {zone: zone-2}
phases: [{name: p, duration: 1m}]`

func TestResolveSelectors(t *testing.T) {
	p := mustParse(t, strings.Replace(groupsSpec, ", node-7x", "", 1))
	plan, err := p.Resolve(Fleet{Nodes: 20, Seed: 1, NodeIndex: testNodeIndex})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		group string
		check func([]int) string
	}{
		{"pct", size(2)},
		{"tiny", size(1)}, // at least one node
		{"all", exactly(seq(0, 20))},
		{"count", size(5)},
		{"names", exactly([]int{3, 7})},
		{"idx", exactly([]int{0, 1, 2, 10})},
		{"zone", exactly([]int{1, 4, 7, 10, 13, 16, 19})},
	} {
		members := plan.Groups[tc.group]
		if msg := tc.check(members); msg != "" {
			t.Errorf("group %s = %v: %s", tc.group, members, msg)
		}
		if !slices.IsSorted(members) {
			t.Errorf("group %s = %v: not ascending", tc.group, members)
		}
		for _, m := range members {
			if m < 0 || m >= 20 {
				t.Errorf("group %s has node %d, outside the fleet", tc.group, m)
			}
		}
	}
	// Groups are drawn independently: two 10% groups are not the same nodes.
	if slices.Equal(plan.Groups["pct"], plan.Groups["pct2"]) {
		t.Errorf("groups pct and pct2 drew the same nodes %v", plan.Groups["pct"])
	}
	if plan.Zone(4) != "zone-2" || plan.TotalNodes() != 20 {
		t.Errorf("Zone(4) = %s, TotalNodes() = %d", plan.Zone(4), plan.TotalNodes())
	}
}

func TestPercentRounding(t *testing.T) {
	for _, tc := range []struct {
		percent float64
		nodes   int
		want    int
	}{
		{10, 1000, 100}, {10, 15, 2}, {10, 14, 1}, {60, 1000, 600}, {33.3, 3, 1}, {0.001, 10, 1}, {100, 7, 7}, {99.9, 7, 7},
	} {
		p := mustParse(t, fmt.Sprintf("nodes: %d\ngroups: {g: {percent: %v}}\nphases: [{name: p, duration: 1m}]", tc.nodes, tc.percent))
		if got := len(mustResolve(t, p, tc.nodes, 0).Groups["g"]); got != tc.want {
			t.Errorf("%v%% of %d = %d nodes, want %d", tc.percent, tc.nodes, got, tc.want)
		}
	}
}

// The same seed gives the same groups; another seed other groups.
func TestResolveDeterministic(t *testing.T) {
	p := mustParse(t, "nodes: 1000\ngroups: {g: {percent: 10}, c: {count: 50}}\nphases: [{name: p, duration: 1m}]")
	a, b := mustResolve(t, p, 1000, 42), mustResolve(t, p, 1000, 42)
	for _, g := range []string{"g", "c"} {
		if !slices.Equal(a.Groups[g], b.Groups[g]) {
			t.Errorf("group %s differs between two resolutions with one seed", g)
		}
		if other := mustResolve(t, p, 1000, 43); slices.Equal(a.Groups[g], other.Groups[g]) {
			t.Errorf("group %s is the same for seeds 42 and 43", g)
		}
	}
}

// Selections are fixed across versions of fakelet, so that a seed reproduces an old run: a change of
// algorithm shows up here.
func TestResolveGolden(t *testing.T) {
	p := mustParse(t, groupsSpec)
	var b strings.Builder
	for _, seed := range []int64{0, 1, -7} {
		plan, err := p.Resolve(Fleet{Nodes: 20, Seed: seed, NodeIndex: func(name string) (int, bool) {
			if name == "node-7x" {
				return 0, false
			}
			return testNodeIndex(name)
		}})
		if err == nil {
			t.Fatal("node-7x resolved")
		}
		fmt.Fprintf(&b, "seed %d: %v\n", seed, err)
		p2 := mustParse(t, strings.Replace(groupsSpec, ", node-7x", "", 1))
		plan, err = p2.Resolve(Fleet{Nodes: 20, Seed: seed, NodeIndex: testNodeIndex})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range []string{"pct", "pct2", "tiny", "count", "names", "idx", "zone"} {
			fmt.Fprintf(&b, "seed %d %s: %v\n", seed, g, plan.Groups[g])
		}
	}
	golden(t, "groups.golden", b.String())
}

// Growing the fleet does not reshuffle a group: most members of a 10% group of 1000 nodes are still
// members at 1100 nodes.
func TestResolveStableWhenFleetGrows(t *testing.T) {
	p := mustParse(t, "nodes: 1000\ngroups: {g: {percent: 10}}\nphases: [{name: p, duration: 1m}]")
	small, large := mustResolve(t, p, 1000, 5).Groups["g"], mustResolve(t, p, 1100, 5).Groups["g"]
	kept := 0
	for _, m := range small {
		if _, found := slices.BinarySearch(large, m); found {
			kept++
		}
	}
	if kept < 85 {
		t.Errorf("only %d of %d members kept when the fleet grew by 10%%", kept, len(small))
	}
}

// A percent group spreads over the zones as a random sample does: no zone is left out.
func TestResolveSpreadsOverZones(t *testing.T) {
	p := mustParse(t, "nodes: 3000\nzones: 3\ngroups: {g: {percent: 10}}\nphases: [{name: p, duration: 1m}]")
	per := map[string]int{}
	for _, m := range mustResolve(t, p, 3000, 0).Groups["g"] {
		per[ZoneOf(m, 3)]++
	}
	for _, z := range []string{"zone-1", "zone-2", "zone-3"} {
		if per[z] < 70 || per[z] > 130 {
			t.Errorf("%s has %d of 300 members", z, per[z])
		}
	}
}

func TestResolveErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  string
		fleet Fleet
		want  []string
	}{
		{
			name:  "fleet size",
			spec:  "nodes: 10\nphases: [{name: p, duration: 1m}]",
			fleet: Fleet{Nodes: 0},
			want:  []string{"0: a fleet of 0 nodes: the fleet size must be between 1 and 1000000"},
		},
		{
			name:  "count, indexes and zone beyond a smaller fleet",
			spec:  "nodes: 10\nzones: 3\ngroups:\n  c: {count: 5}\n  i: {indexes: \"0-2,4\"}\n  z: {zone: zone-3}\nphases: [{name: p, duration: 1m}]",
			fleet: Fleet{Nodes: 2},
			want: []string{
				"9: spec.groups.c.count: asks for 5 nodes, and the fleet has 2",
				"10: spec.groups.i.indexes: index 2 is beyond a fleet of 2 nodes (indexes 0-1)",
				"11: spec.groups.z.zone: zone-3 has no nodes in a fleet of 2 nodes",
			},
		},
		{
			name:  "names without naming",
			spec:  "nodes: 10\ngroups: {n: {names: [node-1]}}\nphases: [{name: p, duration: 1m}]",
			fleet: Fleet{Nodes: 10},
			want:  []string{"7: spec.groups.n.names: selecting nodes by name needs the fleet's node naming, and none was given"},
		},
		{
			name:  "names not in the fleet",
			spec:  "nodes: 10\ngroups: {n: {names: [node-1, node-10, web-1]}}\nphases: [{name: p, duration: 1m}]",
			fleet: Fleet{Nodes: 10, NodeIndex: testNodeIndex},
			want:  []string{`7: spec.groups.n.names: not in a fleet of 10 nodes: "node-10", "web-1"`},
		},
		{
			name: "churn removes more than the group has left",
			spec: `nodes: 10
groups: {g: {count: 4}}
phases:
- name: p
  duration: 1m
  actions:
  - {group: g, do: churn, remove: 3}
  - {group: g, do: churn, remove: 2}`,
			fleet: Fleet{Nodes: 10},
			want:  []string{"13: spec.phases[0].actions[1].remove: removes 2 nodes, and group g has 1 nodes left to remove"},
		},
		{
			name:  "an invalid profile is refused",
			spec:  "nodes: 10\nphases: [{name: p, duration: 1m}]",
			fleet: Fleet{Nodes: 10},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustParse(t, tc.spec)
			if tc.want == nil {
				p.Spec.Nodes = 0
				tc.want = []string{"6: spec.nodes: must be between 1 and 1000000, got 0"}
			}
			_, err := p.Resolve(tc.fleet)
			assertProblems(t, err, tc.want)
		})
	}
}

func size(n int) func([]int) string {
	return func(m []int) string {
		if len(m) != n {
			return fmt.Sprintf("%d members, want %d", len(m), n)
		}
		return ""
	}
}

func exactly(want []int) func([]int) string {
	return func(m []int) string {
		if !slices.Equal(m, want) {
			return fmt.Sprintf("want %v", want)
		}
		return ""
	}
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}
