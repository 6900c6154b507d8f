package nodeshape

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// fakeletLabels are the labels fakelet sets on every node itself: the kubelet's own (hostname, OS
// and architecture), the zone from --zones or spec.zones, and the fleet label (fleetname.Label),
// which says which Nodes are the fleet's to adopt and delete.
var fakeletLabels = []string{
	corev1.LabelHostname, corev1.LabelOSStable, corev1.LabelArchStable, kubeletapis.LabelOS, kubeletapis.LabelArch,
	corev1.LabelTopologyZone, "fakelet.dev/fleet",
}

// CheckLabel refuses a label a kubelet could not register its Node with: a key or value Kubernetes
// does not accept, a key in the kubernetes.io or k8s.io namespaces other than those a kubelet may
// set on itself (the kubelet refuses them at start, and the NodeRestriction admission plugin would
// refuse the Node), and the labels fakelet sets itself.
func CheckLabel(key, value string) error {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return fmt.Errorf("label key %q: %s", key, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return fmt.Errorf("label %s value %q: %s", key, value, strings.Join(errs, "; "))
	}
	if slices.Contains(fakeletLabels, key) {
		hint := ""
		if key == corev1.LabelTopologyZone {
			hint = " (from --zones, or spec.zones in a profile)"
		}
		return fmt.Errorf("label %s is set by fakelet itself%s", key, hint)
	}
	if isKubernetesLabel(key) && !kubeletapis.IsKubeletLabel(key) {
		return fmt.Errorf("label %s: a kubelet may not register its Node with a kubernetes.io or k8s.io label other than %s, or one under %s (the NodeRestriction admission plugin refuses it)",
			key, strings.Join(kubeletapis.KubeletLabels(), ", "), strings.Join(kubeletapis.KubeletLabelNamespaces(), ", "))
	}
	return nil
}

// isKubernetesLabel is the kubelet's own test (cmd/kubelet/app/options): is the key in the
// kubernetes.io or k8s.io namespaces.
func isKubernetesLabel(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	return ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") || ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
}

// effects are the taint effects a Node may carry.
var effects = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

// CheckTaint refuses a taint the apiserver would refuse on a Node: a key that is not a qualified
// name, a value that is not a label value, an effect other than NoSchedule, PreferNoSchedule and
// NoExecute. A taint of the node lifecycle controller's (node.kubernetes.io/not-ready, unreachable,
// ...) is refused too: registered by a node, it would be taken for the controller's verdict.
func CheckTaint(t corev1.Taint) error {
	if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		return fmt.Errorf("taint key %q: %s", t.Key, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
		return fmt.Errorf("taint %s value %q: %s", t.Key, t.Value, strings.Join(errs, "; "))
	}
	if !slices.Contains(effects, t.Effect) {
		return fmt.Errorf("taint %s effect %q: want one of %s", t.Key, t.Effect, effectList())
	}
	if ns, _, _ := strings.Cut(t.Key, "/"); ns == "node.kubernetes.io" {
		return fmt.Errorf("taint %s: the node.kubernetes.io taints are the control plane's (the node lifecycle controller's and the kubelet's conditions), not a node's to register", t.Key)
	}
	return nil
}

func effectList() string {
	names := make([]string, len(effects))
	for i, e := range effects {
		names[i] = string(e)
	}
	return strings.Join(names, ", ")
}

// CheckAllocatable refuses an allocatable quantity a fake node cannot report: another resource than
// cpu, memory and pods, a quantity of 0 or less, pods that are not a whole number or more than
// MaxPods.
func CheckAllocatable(name corev1.ResourceName, q resource.Quantity) error {
	if !slices.Contains(Resources, name) {
		return fmt.Errorf("allocatable %s: fakelet sets only %s", name, resourceList())
	}
	if q.Sign() <= 0 {
		return fmt.Errorf("allocatable %s %s: must be more than 0", name, q.String())
	}
	if name == corev1.ResourcePods {
		if q.MilliValue()%1000 != 0 {
			return fmt.Errorf("allocatable pods %s: must be a whole number", q.String())
		}
		if q.Value() > MaxPods {
			return fmt.Errorf("allocatable pods %s: at most %d (a /24 podCIDR's addresses)", q.String(), MaxPods)
		}
	}
	return nil
}

func resourceList() string {
	names := make([]string, len(Resources))
	for i, r := range Resources {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}
