package profiles

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"fakelet.dev/fakelet/nodeshape"
)

// Taint is one of the taints a group's nodes register with, as in a Node's spec.taints.
type Taint struct {
	Key    string `json:"key" yaml:"key"`
	Value  string `json:"value,omitempty" yaml:"value"`
	Effect string `json:"effect" yaml:"effect"`
}

// Shaped tells whether the group shapes its nodes.
func (g Group) Shaped() bool { return len(g.Labels)+len(g.Taints)+len(g.Allocatable) > 0 }

// Shape is the group's node shape. The profile must have passed Validate, which checked every
// field: what does not parse is left out.
func (g Group) Shape() nodeshape.Shape {
	var s nodeshape.Shape
	if len(g.Labels) > 0 {
		s.Labels = maps.Clone(g.Labels)
	}
	for _, t := range g.Taints {
		s.Taints = append(s.Taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	for name, v := range g.Allocatable {
		if q, err := resource.ParseQuantity(v); err == nil {
			if s.Allocatable == nil {
				s.Allocatable = corev1.ResourceList{}
			}
			s.Allocatable[corev1.ResourceName(name)] = q
		}
	}
	return s
}

// validateGroupShape checks a group's labels, taints and allocatable as a kubelet and the
// NodeRestriction admission plugin would (package nodeshape), and that the fleet's own pods
// (spec.podsPerNode) fit the allocatable pods.
func (s *Spec) validateGroupShape(ps *problems, path string, g Group) {
	for _, k := range slices.Sorted(maps.Keys(g.Labels)) {
		if err := nodeshape.CheckLabel(k, g.Labels[k]); err != nil {
			ps.addf(joinPath(joinPath(path, "labels"), k), "%v", err)
		}
	}
	seen := map[[2]string]int{}
	for i, t := range g.Taints {
		tpath := indexPath(joinPath(path, "taints"), i)
		if err := nodeshape.CheckTaint(corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)}); err != nil {
			ps.addf(tpath, "%v", err)
			continue
		}
		key := [2]string{t.Key, t.Effect}
		if first, dup := seen[key]; dup {
			ps.addf(tpath, "taint %s:%s is already taints[%d]: a Node has one taint per key and effect", t.Key, t.Effect, first)
			continue
		}
		seen[key] = i
	}
	for _, name := range slices.Sorted(maps.Keys(g.Allocatable)) {
		apath := joinPath(joinPath(path, "allocatable"), name)
		q, err := resource.ParseQuantity(g.Allocatable[name])
		if err != nil {
			ps.addf(apath, "%q is not a quantity (such as 4, 500m, 16Gi): %v", g.Allocatable[name], err)
			continue
		}
		if err := nodeshape.CheckAllocatable(corev1.ResourceName(name), q); err != nil {
			ps.addf(apath, "%v", err)
			continue
		}
		if name == string(corev1.ResourcePods) && q.Value() < int64(s.PodsPerNode) {
			ps.addf(apath, "%s is fewer than spec.podsPerNode %d: the fleet's own pods would not fit", q.String(), s.PodsPerNode)
		}
	}
}

// checkShapesApart refuses two shaped groups that share a node: a node registers with one shape.
func (plan *Plan) checkShapesApart(ps *problems) {
	owner := map[int]string{}
	for _, name := range slices.Sorted(maps.Keys(plan.Groups)) {
		if !plan.Profile.Spec.Groups[name].Shaped() {
			continue
		}
		shared, first, other := 0, -1, ""
		for _, m := range plan.Groups[name] {
			if o, taken := owner[m]; taken {
				if shared == 0 {
					first, other = m, o
				}
				shared++
				continue
			}
			owner[m] = name
		}
		if shared > 0 {
			ps.addf(joinPath("spec.groups", name), "shares %d node(s) (node %d first) with group %s, and both shape their nodes: a node registers with one shape",
				shared, first, other)
		}
	}
}

// NodeShapes are the shapes of the plan's shaped groups, in the order of their names, and which of
// them node index has (-1: none): what the fleet's template takes (agent.TemplateOptions.Groups,
// GroupOf). Nil when no group shapes its nodes.
func (plan *Plan) NodeShapes() (shapes []nodeshape.Shape, groupOf func(index int) int) {
	of := map[int]int{}
	for _, name := range slices.Sorted(maps.Keys(plan.Groups)) {
		g := plan.Profile.Spec.Groups[name]
		if !g.Shaped() {
			continue
		}
		for _, m := range plan.Groups[name] {
			of[m] = len(shapes)
		}
		shapes = append(shapes, g.Shape())
	}
	if len(shapes) == 0 {
		return nil, nil
	}
	return shapes, func(index int) int {
		if g, ok := of[index]; ok {
			return g
		}
		return -1
	}
}
