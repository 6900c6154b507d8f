package fleet

import "fakelet.dev/fakelet/access"

// A profile's workloads live in a namespace of the run's own, WorkloadNamespace(fleet, runID),
// which the run creates labelled with its fleet and run and deletes at the end (package scenario),
// and the report watches their pods, EndpointSlices and Deployments there (measure/workload). The
// credential that does it is the fleet's, so the preflight checks it with the fleet's own
// permissions: a run on a shared cluster is refused before it writes anything, rather than failing
// at its first workload.

// WorkloadAccess is what a run does with its profile's workloads (Config.Workloads).
type WorkloadAccess struct {
	// Creates are the resources of the objects the run creates and deletes in its namespace
	// (Permission's Group and Resource: "deployments" in "apps", "services" in ""); none for a shard
	// other than the first, which only watches them.
	Creates []access.Permission
}

// The report's watches of the workloads (measure/workload.Recorder.Watch), in their namespace.
var workloadWatches = []access.Permission{
	{Resource: "pods", For: "the report's watch of the workloads' pods"},
	{Group: "discovery.k8s.io", Resource: "endpointslices", For: "the report's watch of the workloads' EndpointSlices"},
	{Group: "apps", Resource: "deployments", For: "the report's watch of the workloads' Deployments"},
}

// WorkloadPermissions is what a run that does a with its workloads needs in namespace ns: the watches
// always; with objects to create, the creation of ns (RBAC cannot name an object to be created), its
// deletion by name, and the creation and deletion of those objects in it.
func WorkloadPermissions(ns string, a WorkloadAccess) []access.Permission {
	var perms []access.Permission
	if len(a.Creates) > 0 {
		perms = append(perms,
			access.Permission{Verb: "create", Resource: "namespaces", For: "the run creates its workloads' namespace"},
			access.Permission{Verb: "delete", Resource: "namespaces", Name: ns, For: "the run deletes its workloads' namespace"})
		for _, c := range a.Creates {
			for _, verb := range []string{"create", "delete"} {
				perms = append(perms, access.Permission{Verb: verb, Group: c.Group, Resource: c.Resource, Namespace: ns,
					For: "the run " + verb + "s its workloads"})
			}
		}
	}
	for _, w := range workloadWatches {
		for _, verb := range []string{"list", "watch"} {
			w.Verb, w.Namespace = verb, ns
			perms = append(perms, w)
		}
	}
	return perms
}

// WorkloadCleanupPermissions is what fakelet cleanup needs to find the namespaces of workloads that
// runs of a fleet left. It is not required: a credential that may not list namespaces finds none,
// since deploy/rbac/workloads.yaml, which lets a run create them, grants the list too.
func WorkloadCleanupPermissions() []access.Permission {
	return []access.Permission{{Verb: "list", Resource: "namespaces", For: "cleanup finds the namespaces of the runs' workloads"}}
}
