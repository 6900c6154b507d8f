//go:build tools

// Package tools pins the control plane components that `make controlplane` builds, and kubemark,
// whose hollow kubelet is the reference fakelet's agents are checked against (docs/fidelity.md).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubemark"
)
