package agent

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/nodeshape"
)

// shape is what a node registers with besides what every node has: extra labels, the taints of
// --register-with-taints, and its resources. Nodes of one shape share one, as they share the
// Template: its maps and slices are never written to.
type shape struct {
	labels                map[string]string
	taints                []corev1.Taint
	capacity, allocatable corev1.ResourceList
}

// checkShape refuses labels and taints a kubelet could not register with (package nodeshape).
func checkShape(labels map[string]string, taints []corev1.Taint, allocatable corev1.ResourceList) error {
	for k, v := range labels {
		if k == fleetname.Label {
			return fmt.Errorf("label %s is set by fakelet itself from the fleet name", fleetname.Label)
		}
		if err := nodeshape.CheckLabel(k, v); err != nil {
			return err
		}
	}
	for _, t := range taints {
		if err := nodeshape.CheckTaint(t); err != nil {
			return err
		}
	}
	for name, q := range allocatable {
		if err := nodeshape.CheckAllocatable(name, q); err != nil {
			return err
		}
	}
	return nil
}

// groupShapes lays each of o.Groups over the fleet's shape base.
func groupShapes(o TemplateOptions, base *shape) ([]*shape, error) {
	if len(o.Groups) > 0 && o.GroupOf == nil {
		return nil, fmt.Errorf("node shapes of %d groups, and no GroupOf to say which node has which", len(o.Groups))
	}
	fleet := nodeshape.Shape{Labels: base.labels, Taints: base.taints}
	out := make([]*shape, len(o.Groups))
	for i, g := range o.Groups {
		if err := checkShape(g.Labels, g.Taints, g.Allocatable); err != nil {
			return nil, fmt.Errorf("node shape %d: %w", i, err)
		}
		merged := g.Over(fleet)
		s := &shape{labels: merged.Labels, taints: merged.Taints}
		s.capacity, s.allocatable = g.Lists(base.capacity, base.allocatable)
		out[i] = s
	}
	return out, nil
}

// shapeOf is the shape of node index: its group's, or the fleet's.
func (t *Template) shapeOf(index int) *shape {
	if t.groupOf != nil {
		if g := t.groupOf(index); g >= 0 && g < len(t.groups) {
			return t.groups[g]
		}
	}
	return &t.base
}

// Allocatable is what the agent's Node reports allocatable: its group's, or its fleet's. Read-only.
func (a *Agent) Allocatable() corev1.ResourceList { return a.shape.allocatable }

// Taints are the taints the agent registers its Node with (--register-with-taints). Read-only.
func (a *Agent) Taints() []corev1.Taint { return a.shape.taints }

// sharedResources returns the shapes' copies of a Node's resource lists where they are equal, so
// that the decoded ones can go. The fleet's shape is looked at first, then each group's: a few.
func (t *Template) sharedResources(capacity, allocatable corev1.ResourceList) (corev1.ResourceList, corev1.ResourceList) {
	for _, s := range t.shapes {
		if sameResources(capacity, s.capacity) {
			capacity = s.capacity
			break
		}
	}
	for _, s := range t.shapes {
		if sameResources(allocatable, s.allocatable) {
			allocatable = s.allocatable
			break
		}
	}
	return capacity, allocatable
}
