package run

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/measure/workload"
	"fakelet.dev/fakelet/profiles"
	"fakelet.dev/fakelet/report"
)

// The run's side of a profile's workloads: the profile runner creates and deletes them with the
// target's credential (workloadClient, in Play), the report's session watches them
// (measure.Session.Hooks adds the watches for a profile that has some) and the run's metrics get
// their pods' startup live and their reactions at the end.

// workloadClient is the client the profile runner creates the workloads with: the target's
// credential, as the report's watches use; nil for a profile without workloads.
func workloadClient(tgt *Target, plan *profiles.Plan) (kubernetes.Interface, error) {
	if plan == nil || plan.Profile.Spec.Workloads == nil {
		return nil, nil
	}
	c, err := kubernetes.NewForConfig(rest.CopyConfig(tgt.Config))
	if err != nil {
		return nil, fmt.Errorf("client for the workloads on %s: %w", tgt.Config.Host, err)
	}
	return c, nil
}

// podStartupsInto feeds each workload pod's startup to fakelet_pod_startup_latency_seconds.
func podStartupsInto(m *runMetrics) func(workload.Startup) {
	if m == nil || m.Metrics == nil {
		return nil
	}
	return func(s workload.Startup) {
		m.ObservePodStartup(workload.CreateToSchedule, s.CreateToSchedule)
		m.ObservePodStartup(workload.ScheduleToRun, s.ScheduleToRun)
		m.ObservePodStartup(workload.RunToWatch, s.RunToWatch)
		m.ObservePodStartup(workload.ScheduleToWatch, s.ScheduleToWatch)
		m.ObservePodStartup(workload.PodStartup, s.PodStartup)
	}
}

// workloadReactionsInto sets the workloads' reactions of report r on the run's metrics, once they
// are known.
func workloadReactionsInto(m *runMetrics, r *report.Report) {
	if m == nil || m.Metrics == nil || r.Workloads == nil {
		return
	}
	for _, re := range r.Workloads.Reactions {
		for _, st := range re.Steps {
			m.SetWorkloadReaction(re.Op, re.Group, st.Name, st.First, st.Median, st.Last)
		}
		m.SetWorkloadPodsLost(re.Op, re.Group, re.Lost)
	}
}
