//go:build tools

// Package tools pins the control plane components that `make controlplane` builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
