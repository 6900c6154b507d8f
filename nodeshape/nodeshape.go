// Package nodeshape is what a fake node registers with beyond fakelet's defaults: labels and taints,
// as a kubelet's --node-labels and --register-with-taints give them, and its allocatable cpu, memory
// and pods. Each is parsed and checked as the kubelet and the NodeRestriction admission plugin would
// take it, so that a shape that a kubelet could not register is refused before anything starts.
package nodeshape

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Shape is one set of nodes' labels, taints and allocatable. The zero Shape changes nothing.
type Shape struct {
	Labels map[string]string
	Taints []corev1.Taint
	// Allocatable holds cpu, memory and pods (Resources); what it leaves out keeps its default.
	Allocatable corev1.ResourceList
}

// IsZero tells whether s changes nothing.
func (s Shape) IsZero() bool {
	return len(s.Labels) == 0 && len(s.Taints) == 0 && len(s.Allocatable) == 0
}

// Over returns s laid over base, as a group's shape is laid over its fleet's: base's labels with s's
// (s's value for a key in both), base's taints with s's (s's for a key and effect in both, as the
// apiserver keeps one taint per key and effect), base's allocatable with s's quantities. Neither is
// changed.
func (s Shape) Over(base Shape) Shape {
	out := Shape{
		Labels:      maps.Clone(base.Labels),
		Taints:      slices.Clone(base.Taints),
		Allocatable: base.Allocatable.DeepCopy(),
	}
	if len(s.Labels) > 0 && out.Labels == nil {
		out.Labels = map[string]string{}
	}
	maps.Copy(out.Labels, s.Labels)
	for _, t := range s.Taints {
		out.Taints = slices.DeleteFunc(out.Taints, func(o corev1.Taint) bool { return o.Key == t.Key && o.Effect == t.Effect })
		out.Taints = append(out.Taints, t)
	}
	if len(s.Allocatable) > 0 && out.Allocatable == nil {
		out.Allocatable = corev1.ResourceList{}
	}
	for name, q := range s.Allocatable {
		out.Allocatable[name] = q.DeepCopy()
	}
	return out
}

// Resources are the resources a shape may set.
var Resources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods}

// MaxPods bounds the allocatable pods: a /24 podCIDR, what a Node of the local control plane gets
// (and the controller manager's default), has 254 addresses for pods, and 250 is the most that
// Kubernetes distributions support per node with one.
const MaxPods = 250

// Lists returns defaultCapacity and defaultAllocatable with s's allocatable laid over them: each
// resource s sets is allocatable as given, and its capacity is that plus what the defaults hold
// back (the kubelet's eviction threshold for memory, nothing for cpu and pods), as a kubelet with
// the same reservations computes it. Without an allocatable of its own, the defaults are returned
// as they are, so that nodes of the default shape share them.
func (s Shape) Lists(defaultCapacity, defaultAllocatable corev1.ResourceList) (capacity, allocatable corev1.ResourceList) {
	if len(s.Allocatable) == 0 {
		return defaultCapacity, defaultAllocatable
	}
	capacity, allocatable = defaultCapacity.DeepCopy(), defaultAllocatable.DeepCopy()
	for name, q := range s.Allocatable {
		held := resource.Quantity{}
		if c, ok := defaultCapacity[name]; ok {
			held = c.DeepCopy()
			if a, ok := defaultAllocatable[name]; ok {
				held.Sub(a)
			}
		}
		c := q.DeepCopy()
		c.Add(held)
		allocatable[name], capacity[name] = q.DeepCopy(), c
	}
	return capacity, allocatable
}
