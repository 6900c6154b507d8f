package profiles

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Fleet is what resolving a profile needs to know about the fleet it will run on.
type Fleet struct {
	// Nodes is the fleet size at the start of the run: spec.nodes, unless --nodes overrides it.
	Nodes int
	// Seed drives group selection and flap jitter: spec.seed, unless --seed overrides it.
	Seed int64
	// NodeIndex maps a node name to its index. Only groups that select by names need it; the fleet owns
	// node naming, so it provides the mapping.
	NodeIndex func(name string) (index int, ok bool)
	// Allocatable is what each node offers pods, against which spec.workloads must fit; nil is
	// DefaultNodeAllocatable.
	Allocatable *NodeAllocatable
}

// Fleet returns the fleet the profile asks for: spec.nodes and spec.seed. A runner changes the fields
// its flags override and passes the result to Resolve.
func (p *Profile) Fleet() Fleet {
	return Fleet{Nodes: p.Spec.Nodes, Seed: p.Spec.Seed}
}

// Plan is a profile resolved for one fleet: the members of every group are known. It is pure data,
// the same for the same profile, fleet size and seed, whoever computes it; a fleet split into shards
// resolves the same Plan in every shard, and each shard applies the events of the nodes it owns.
type Plan struct {
	Profile *Profile
	// Nodes and Seed are the fleet's.
	Nodes int
	Seed  int64
	// Groups maps each group name to its member node indexes, ascending.
	Groups map[string][]int
	// WorkloadPods is how many pods each object of spec.workloads.items[i] runs on this fleet.
	WorkloadPods []int

	churn map[actionRef]churnPlan
	// total counts the initial nodes and every node churn adds: indexes run from 0 to total-1.
	total int
}

// actionRef names one action of a profile by its position.
type actionRef struct {
	phase, action int
}

// churnPlan says which nodes one churn action removes and from which index the nodes it adds count.
type churnPlan struct {
	removes  []int
	firstAdd int
}

// Resolve checks the profile against the fleet (what --nodes may change: counts, indexes, zones that
// have no node, node names) and picks the members of every group. Errors are an *Error listing every
// problem.
func (p *Profile) Resolve(f Fleet) (*Plan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	ps := &problems{lines: p.lines}
	if f.Nodes < 1 || f.Nodes > maxNodes {
		ps.addf("", "a fleet of %d nodes: the fleet size must be between 1 and %d", f.Nodes, maxNodes)
		return nil, ps.err(p.Source)
	}
	plan := &Plan{Profile: p, Nodes: f.Nodes, Seed: f.Seed, Groups: map[string][]int{}, churn: map[actionRef]churnPlan{}}
	for _, name := range slices.Sorted(maps.Keys(p.Spec.Groups)) {
		members := selectGroup(ps, joinPath("spec.groups", name), name, p.Spec.Groups[name], p.Spec.Zones, f)
		plan.Groups[name] = members
	}
	if len(ps.list) == 0 {
		plan.planChurn(ps)
		plan.checkShapesApart(ps)
	}
	alloc := DefaultNodeAllocatable
	if f.Allocatable != nil {
		alloc = *f.Allocatable
	}
	plan.checkFit(ps, alloc)
	if err := ps.err(p.Source); err != nil {
		return nil, err
	}
	return plan, nil
}

// selectGroup returns a group's members, ascending, or records why it cannot.
func selectGroup(ps *problems, path, name string, g Group, zones int, f Fleet) []int {
	n := f.Nodes
	switch {
	case g.Percent != nil:
		k := int(math.Round(*g.Percent * float64(n) / 100))
		return sampleNodes(f.Seed, name, n, min(max(k, 1), n))
	case g.Count != nil:
		if *g.Count > n {
			ps.addf(joinPath(path, "count"), "asks for %d nodes, and the fleet has %d", *g.Count, n)
			return nil
		}
		return sampleNodes(f.Seed, name, n, *g.Count)
	case g.Names != nil:
		if f.NodeIndex == nil {
			ps.addf(joinPath(path, "names"), "selecting nodes by name needs the fleet's node naming, and none was given")
			return nil
		}
		members := make([]int, 0, len(g.Names))
		var missing []string
		for _, nodeName := range g.Names {
			i, ok := f.NodeIndex(nodeName)
			if !ok || i < 0 || i >= n {
				missing = append(missing, fmt.Sprintf("%q", nodeName))
				continue
			}
			members = append(members, i)
		}
		if len(missing) > 0 {
			ps.addf(joinPath(path, "names"), "not in a fleet of %d nodes: %s", n, strings.Join(missing, ", "))
			return nil
		}
		slices.Sort(members)
		return slices.Compact(members)
	case g.Indexes != "":
		ranges, _ := parseIndexes(g.Indexes) // Validate checked the syntax.
		var members []int
		for _, r := range ranges {
			if r.hi >= n {
				ps.addf(joinPath(path, "indexes"), "index %d is beyond a fleet of %d nodes (indexes 0-%d)", r.hi, n, n-1)
				return nil
			}
			for i := r.lo; i <= r.hi; i++ {
				members = append(members, i)
			}
		}
		slices.Sort(members)
		return slices.Compact(members)
	case g.Zone != "":
		z, _ := parseZone(g.Zone) // Validate checked the name.
		if z > n {
			ps.addf(joinPath(path, "zone"), "%s has no nodes in a fleet of %d nodes", g.Zone, n)
			return nil
		}
		members := make([]int, 0, n/zones+1)
		for i := z - 1; i < n; i += zones {
			members = append(members, i)
		}
		return members
	}
	return nil
}

// sampleNodes picks k of n nodes for a group: the k with the lowest hash of (seed, group, index).
// Ranking by a per-node hash keeps selections stable: growing the fleet adds candidates without
// reshuffling the ranks of the others, and two groups of one profile are drawn independently.
func sampleNodes(seed int64, group string, n, k int) []int {
	key := hashKey(seed, group)
	type ranked struct {
		rank  uint64
		index int
	}
	all := make([]ranked, n)
	for i := range all {
		all[i] = ranked{hashOf(key, uint64(i)), i}
	}
	slices.SortFunc(all, func(a, b ranked) int {
		if a.rank != b.rank {
			if a.rank < b.rank {
				return -1
			}
			return 1
		}
		return a.index - b.index
	})
	members := make([]int, k)
	for i := range members {
		members[i] = all[i].index
	}
	slices.Sort(members)
	return members
}

// planChurn decides, in phase and action order, which nodes each churn action removes (the first
// members of its group not removed already) and which indexes the nodes it adds get (counting on from
// the fleet size).
func (plan *Plan) planChurn(ps *problems) {
	removed := make([]bool, plan.Nodes)
	next := plan.Nodes
	for i, ph := range plan.Profile.Spec.Phases {
		for j, a := range ph.Actions {
			if a.Do != VerbChurn {
				continue
			}
			cp := churnPlan{firstAdd: next}
			next += a.Add
			if a.Remove > 0 {
				for _, m := range plan.Groups[a.Group] {
					if len(cp.removes) == a.Remove {
						break
					}
					if !removed[m] {
						removed[m] = true
						cp.removes = append(cp.removes, m)
					}
				}
				if len(cp.removes) < a.Remove {
					ps.addf(joinPath(indexPath(joinPath(indexPath("spec.phases", i), "actions"), j), paramRemove),
						"removes %d nodes, and group %s has %d nodes left to remove", a.Remove, a.Group, len(cp.removes))
				}
			}
			plan.churn[actionRef{i, j}] = cp
		}
	}
	plan.total = next
}

// TotalNodes is how many nodes the run has at most: the initial fleet and every node churn adds. Event
// node indexes are below it.
func (plan *Plan) TotalNodes() int {
	return plan.total
}

// Zone returns the zone of a node of this plan (see ZoneOf).
func (plan *Plan) Zone(index int) string {
	return ZoneOf(index, plan.Profile.Spec.Zones)
}
