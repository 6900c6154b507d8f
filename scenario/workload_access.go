package scenario

import (
	"fakelet.dev/fakelet/access"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/profiles"
)

// WorkloadAccess is what shard s of a run of plan does with the plan's workloads, for the fleet's
// preflight (fleet.Config.Workloads): the first shard creates and deletes the kinds of object the
// profile names (and their namespace), every shard's report watches them; nil for a plan without
// workloads.
func WorkloadAccess(plan *profiles.Plan, s fleetname.Shard) *fleet.WorkloadAccess {
	if plan == nil || plan.Profile.Spec.Workloads == nil {
		return nil
	}
	a := &fleet.WorkloadAccess{}
	if s.Index != 0 {
		return a
	}
	seen := map[string]bool{}
	for _, obj := range workloadList(plan, "") {
		res, ok := workloadResources[obj.kind]
		if !ok || seen[obj.kind] {
			continue // the namespace is WorkloadPermissions' own
		}
		seen[obj.kind] = true
		a.Creates = append(a.Creates, res)
	}
	return a
}

// workloadResources are the resources of the kinds createObject creates in the run's namespace.
var workloadResources = map[string]access.Permission{
	string(profiles.KindDeployment): {Group: "apps", Resource: "deployments"},
	"Service":                       {Resource: "services"},
	string(profiles.KindJob):        {Group: "batch", Resource: "jobs"},
	string(profiles.KindDaemonSet):  {Group: "apps", Resource: "daemonsets"},
}
