package main

import (
	"fmt"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/nodeshape"
)

// nodeShapeFlags are what every node of the fleet registers with besides fakelet's defaults: a
// kubelet's --node-labels and --register-with-taints, and its allocatable. A profile's groups may
// lay their own over them.
type nodeShapeFlags struct {
	labels, taints, allocatable []string
}

func addNodeShapeFlags(f *pflag.FlagSet, nf *nodeShapeFlags) {
	f.StringArrayVar(&nf.labels, "node-label", nil, "label every Node registers with, KEY=VALUE, as a kubelet's --node-labels (repeatable; not kubernetes.io or k8s.io labels other than the kubelet's own, which NodeRestriction refuses)")
	f.StringArrayVar(&nf.taints, "node-taint", nil, "taint every Node registers with, KEY=VALUE:EFFECT or KEY:EFFECT, as a kubelet's --register-with-taints (repeatable)")
	f.StringArrayVar(&nf.allocatable, "node-allocatable", nil, "allocatable of every Node, NAME=QUANTITY[,...] of cpu, memory and pods, such as cpu=4,memory=16Gi,pods=50 (repeatable; capacity follows, plus the kubelet's 100Mi memory eviction threshold)")
}

// apply checks the flags, each error naming its flag and value, and sets the fleet's labels, taints
// and resource lists in t; the fleet's own pods (podsPerNode) must fit the allocatable pods.
func (nf nodeShapeFlags) apply(t *agent.TemplateOptions, podsPerNode int) error {
	var s nodeshape.Shape
	for _, l := range nf.labels {
		k, v, err := nodeshape.ParseLabel(l)
		if err != nil {
			return fmt.Errorf("--node-label %q: %w", l, err)
		}
		if _, dup := s.Labels[k]; dup {
			return fmt.Errorf("--node-label %q: label %s is given twice", l, k)
		}
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[k] = v
	}
	for _, ts := range nf.taints {
		taint, err := nodeshape.ParseTaint(ts)
		if err != nil {
			return fmt.Errorf("--node-taint %q: %w", ts, err)
		}
		for _, o := range s.Taints {
			if o.Key == taint.Key && o.Effect == taint.Effect {
				return fmt.Errorf("--node-taint %q: a taint %s:%s is given twice (a Node has one taint per key and effect)", ts, taint.Key, taint.Effect)
			}
		}
		s.Taints = append(s.Taints, taint)
	}
	for _, a := range nf.allocatable {
		list, err := nodeshape.ParseAllocatable(a)
		if err != nil {
			return fmt.Errorf("--node-allocatable %q: %w", a, err)
		}
		for name, q := range list {
			if _, dup := s.Allocatable[name]; dup {
				return fmt.Errorf("--node-allocatable %q: %s is given twice", a, name)
			}
			if s.Allocatable == nil {
				s.Allocatable = corev1.ResourceList{}
			}
			s.Allocatable[name] = q
		}
	}
	if pods, ok := s.Allocatable[corev1.ResourcePods]; ok && pods.Value() < int64(podsPerNode) {
		return fmt.Errorf("--node-allocatable pods=%s: fewer than the profile's spec.podsPerNode %d, whose pods would not fit", pods.String(), podsPerNode)
	}
	t.Labels, t.Taints = s.Labels, s.Taints
	if len(s.Allocatable) > 0 {
		t.Capacity, t.Allocatable = s.Lists(agent.DefaultCapacity(), agent.DefaultAllocatable())
	}
	return nil
}
