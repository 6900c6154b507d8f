package fleetname

import "strings"

// PodNamespace is where the fleet creates its pods, a namespace of fakelet's own
// (fleet/pod_namespace.go says why).
const PodNamespace = "fakelet-pods"

// PodServiceAccount is the ServiceAccount the fleet's pods run as: their namespace's default, which
// the ServiceAccount admission plugin assigns. Its tokens are the only ones deploy's RBAC lets the
// fleet's credential request (--identity=fleet).
const PodServiceAccount = "default"

// WorkloadNamespace is the namespace of a run's workloads: its own, so that nothing of the run lands
// in default and deleting the run's objects can never touch another's. It is cut to the 63 characters
// of a namespace name, and never ends in a dash.
func WorkloadNamespace(fleetName, runID string) string {
	ns := "fakelet-" + fleetName + "-" + runID
	if len(ns) > 63 {
		ns = strings.TrimRight(ns[:63], "-")
	}
	return ns
}
