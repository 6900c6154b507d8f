package scenario

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/profiles"
)

// The labels of a run's workloads: the fleet's and the run's on every object and pod (cleanup and the
// measurement select by them), and the workload's own name on its pods (its selector).
const (
	RunLabel      = fleet.RunLabel
	WorkloadLabel = "fakelet.dev/workload"
)

// RunDurationAnnotation says how long a pod's containers run before they exit 0, for the pod runtime
// of the fleet's agents: a Job's runFor.
const RunDurationAnnotation = "fakelet.dev/run-duration"

// WorkloadNamespace is the namespace of a run's workloads, fleetname.WorkloadNamespace: the fleet's
// preflight checks the permissions there.
func WorkloadNamespace(fleetName, runID string) string {
	return fleetname.WorkloadNamespace(fleetName, runID)
}

// workloadObjects builds the objects of one run's workloads.
type workloadObjects struct {
	fleet, run, namespace string
}

func (o workloadObjects) labels(extra map[string]string) map[string]string {
	l := map[string]string{fleetname.Label: o.fleet, RunLabel: o.run}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

func (o workloadObjects) namespaceObject() *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.namespace, Labels: o.labels(nil)}}
}

func (o workloadObjects) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: o.namespace, Labels: o.labels(map[string]string{WorkloadLabel: name})}
}

// podTemplate is the pods of object name of w: on the fleet's nodes only (their fleet label), tolerating
// a taint of the fleet's (key fakelet.dev/fleet) and, if w says, the not-ready and unreachable
// NoExecute taints for w.TolerationSeconds.
func (o workloadObjects) podTemplate(w *profiles.Workload, name string, restart corev1.RestartPolicy) corev1.PodTemplateSpec {
	c := corev1.Container{Name: "main", Image: w.Image, ImagePullPolicy: corev1.PullIfNotPresent}
	if rl := requests(w.Requests); len(rl) > 0 {
		c.Resources = corev1.ResourceRequirements{Requests: rl, Limits: rl}
	}
	spec := corev1.PodSpec{
		Containers:                   []corev1.Container{c},
		RestartPolicy:                restart,
		NodeSelector:                 map[string]string{fleetname.Label: o.fleet},
		Tolerations:                  []corev1.Toleration{{Key: fleetname.Label, Operator: corev1.TolerationOpExists}},
		AutomountServiceAccountToken: new(bool),
	}
	if t := w.TolerationSeconds; t != nil {
		for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
			spec.Tolerations = append(spec.Tolerations, corev1.Toleration{
				Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: t,
			})
		}
	}
	selector := map[string]string{WorkloadLabel: name}
	var keys []string
	switch w.Spread {
	case profiles.SpreadZone:
		// Over the nodes of each zone too, as the scheduler's default constraints would, which a pod
		// with constraints of its own loses: fake nodes are alike, their scores tie, and v1.37.2's
		// scheduler breaks ties in the same order each time (NodePluginScores.Randomizer is set only
		// with extenders, pkg/scheduler/schedule_one.go), so the zone alone put a Deployment of one
		// pod a node on 8 of 100 nodes, 20 on one.
		keys = []string{corev1.LabelTopologyZone, corev1.LabelHostname}
	case profiles.SpreadNode:
		keys = []string{corev1.LabelHostname}
	}
	for _, key := range keys {
		spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector: &metav1.LabelSelector{MatchLabels: selector},
		})
	}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: o.labels(selector)}, Spec: spec}
	if w.RunFor != nil {
		tmpl.Annotations = map[string]string{RunDurationAnnotation: w.RunFor.Duration.String()}
	}
	return tmpl
}

func requests(r profiles.Requests) corev1.ResourceList {
	rl := corev1.ResourceList{}
	if r.CPU != "" {
		rl[corev1.ResourceCPU] = resource.MustParse(r.CPU) // the profile's validation parsed it
	}
	if r.Memory != "" {
		rl[corev1.ResourceMemory] = resource.MustParse(r.Memory)
	}
	return rl
}

func (o workloadObjects) deployment(w *profiles.Workload, name string, replicas int) *appsv1.Deployment {
	n := int32(replicas)
	return &appsv1.Deployment{
		ObjectMeta: o.meta(name),
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{WorkloadLabel: name}},
			Template: o.podTemplate(w, name, corev1.RestartPolicyAlways),
		},
	}
}

func (o workloadObjects) service(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: o.meta(name),
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{WorkloadLabel: name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

func (o workloadObjects) job(w *profiles.Workload, name string, replicas int) *batchv1.Job {
	n := int32(replicas)
	return &batchv1.Job{
		ObjectMeta: o.meta(name),
		Spec: batchv1.JobSpec{
			Parallelism: &n, Completions: &n,
			Template: o.podTemplate(w, name, corev1.RestartPolicyNever),
		},
	}
}

func (o workloadObjects) daemonSet(w *profiles.Workload, name string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: o.meta(name),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{WorkloadLabel: name}},
			Template: o.podTemplate(w, name, corev1.RestartPolicyAlways),
		},
	}
}

// workloadObject is one object a run creates: its kind and name, for its creation and deletion.
type workloadObject struct {
	kind string // Namespace, Deployment, Service, Job, DaemonSet
	name string
	w    *profiles.Workload // nil for the namespace
	pods int                // a Deployment's or Job's replicas
}

func (o workloadObject) String() string {
	if o.kind == "Namespace" {
		return "namespace " + o.name
	}
	return fmt.Sprintf("%s %s", o.kind, o.name)
}

// workloadList is every object of a plan's workloads in the order the run creates them: the
// namespace, then each workload's objects, a Deployment's Service after it.
func workloadList(plan *profiles.Plan, namespace string) []workloadObject {
	ws := plan.Profile.Spec.Workloads
	if ws == nil {
		return nil
	}
	list := []workloadObject{{kind: "Namespace", name: namespace}}
	for i := range ws.Items {
		w := &ws.Items[i]
		pods := 0
		if i < len(plan.WorkloadPods) {
			pods = plan.WorkloadPods[i]
		}
		for k := range w.Count {
			name := w.ObjectName(k)
			list = append(list, workloadObject{kind: string(w.Kind), name: name, w: w, pods: pods})
			if w.HasService() {
				list = append(list, workloadObject{kind: "Service", name: name, w: w})
			}
		}
	}
	return list
}
