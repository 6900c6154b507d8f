package nodeshape

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ParseLabel reads KEY=VALUE, one of a kubelet's --node-labels, and checks it (CheckLabel).
func ParseLabel(s string) (key, value string, err error) {
	key, value, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("label %q: want KEY=VALUE", s)
	}
	return key, value, CheckLabel(key, value)
}

// ParseTaint reads KEY=VALUE:EFFECT or KEY:EFFECT, the form of the kubelet's --register-with-taints
// and kubectl taint, and checks it (CheckTaint).
func ParseTaint(s string) (corev1.Taint, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return corev1.Taint{}, fmt.Errorf("taint %q: want KEY=VALUE:EFFECT or KEY:EFFECT (EFFECT one of %s)", s, effectList())
	}
	t := corev1.Taint{Effect: corev1.TaintEffect(s[i+1:])}
	t.Key, t.Value, _ = strings.Cut(s[:i], "=")
	return t, CheckTaint(t)
}

// ParseAllocatable reads NAME=QUANTITY[,NAME=QUANTITY...], as the kubelet's --kube-reserved, into
// allocatable quantities, each checked (CheckAllocatable); a name given twice is refused.
func ParseAllocatable(s string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, pair := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fmt.Errorf("allocatable %q: want NAME=QUANTITY, such as cpu=4,memory=16Gi,pods=110", pair)
		}
		rn := corev1.ResourceName(name)
		if _, dup := out[rn]; dup {
			return nil, fmt.Errorf("allocatable %s is given twice", name)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("allocatable %s %q: %w", name, value, err)
		}
		if err := CheckAllocatable(rn, q); err != nil {
			return nil, err
		}
		out[rn] = q
	}
	return out, nil
}
