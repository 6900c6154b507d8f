package agent

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodTiming is the fake runtime's timing for the pods of a fleet; a pod's annotations override it
// (PodAnnotation*). The zero value is the hollow kubelet's fake runtime: images present, containers
// running and ready as soon as they are started, and, what the hollow kubelet never does, the
// containers of a pod that does not restart them (restartPolicy Never or OnFailure, a Job's) exiting 0
// as soon as they run, so that Jobs complete.
type PodTiming struct {
	ImagePull time.Duration // each container's image pull before it is created
	Start     time.Duration // from a container's creation to its process running
	Ready     time.Duration // from running to ready (a readiness probe's first success)
	// RunDuration is how long the containers of a pod with restartPolicy Never or OnFailure run
	// before they exit 0, unless their command is `sleep N` or the pod's annotation says otherwise.
	RunDuration time.Duration
}

// The annotations that set one pod's timing and fate; a value that does not parse is reported on
// the pod (a Warning event in the kubelet footprint) and counted, and the fleet's value is used.
const (
	PodAnnotationImagePull   = "fakelet.dev/image-pull-delay" // a duration
	PodAnnotationStart       = "fakelet.dev/start-delay"      // a duration
	PodAnnotationReady       = "fakelet.dev/ready-delay"      // a duration
	PodAnnotationRunDuration = "fakelet.dev/run-duration"     // a duration; for any restartPolicy
	PodAnnotationExitCode    = "fakelet.dev/exit-code"        // 0-255: how the containers exit when they end
	// PodAnnotationStopDelay is how long the containers take to exit after their SIGTERM when the pod
	// is deleted (a duration); one longer than the grace period is killed at its end (exit 137).
	PodAnnotationStopDelay = "fakelet.dev/stop-delay"
)

// podSpec is what the agent keeps of a pod's spec once it is admitted: what its status and its fake
// runtime need, a few hundred bytes where the decoded pod takes kilobytes.
type podSpec struct {
	restartPolicy corev1.RestartPolicy
	qos           corev1.PodQOSClass
	hostNetwork   bool
	cpu, memory   int64 // requests, in millicores and bytes, as the kubelet's admission sums them
	hostPorts     []string
	init, ctrs    []ctrSpec
	grace         int64 // terminationGracePeriodSeconds
	timing        PodTiming
	stopDelay     time.Duration // PodAnnotationStopDelay's: no fleet-wide setting, pause stops at once
	runSet        bool          // the run duration comes from the pod (annotation or sleep), not the fleet
	exitCode      int32
	// badAnnotations says which annotations did not parse, for the one Warning the agent records.
	badAnnotations string
}

// ctrSpec is one container.
type ctrSpec struct {
	name, image string
	sidecar     bool          // an init container with restartPolicy Always
	sleep       time.Duration // its command is `sleep N`: it runs that long; -1 for another command
}

// compactSpec reads what the agent keeps of pod, under timing, the fleet's.
func compactSpec(pod *corev1.Pod, timing PodTiming) *podSpec {
	s := &podSpec{
		restartPolicy: pod.Spec.RestartPolicy,
		qos:           pod.Status.QOSClass, // set by the apiserver at creation, as the kubelet computes it
		hostNetwork:   pod.Spec.HostNetwork,
		timing:        timing,
		grace:         corev1.DefaultTerminationGracePeriodSeconds,
	}
	if s.restartPolicy == "" {
		s.restartPolicy = corev1.RestartPolicyAlways
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		s.grace = *g
	}
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	s.cpu = req.Cpu().MilliValue()
	s.memory = req.Memory().Value()
	for _, c := range pod.Spec.InitContainers {
		s.init = append(s.init, newCtrSpec(&c))
		s.hostPorts = appendHostPorts(s.hostPorts, &c)
	}
	for _, c := range pod.Spec.Containers {
		s.ctrs = append(s.ctrs, newCtrSpec(&c))
		s.hostPorts = appendHostPorts(s.hostPorts, &c)
	}
	for _, c := range s.ctrs {
		if c.sleep >= 0 {
			s.timing.RunDuration, s.runSet = c.sleep, true
			break
		}
	}
	var bad []string
	duration := func(key string, to *time.Duration) bool {
		v, ok := pod.Annotations[key]
		if !ok {
			return false
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			bad = append(bad, fmt.Sprintf("%s=%q (want a duration such as 5s)", key, v))
			return false
		}
		*to = d
		return true
	}
	duration(PodAnnotationImagePull, &s.timing.ImagePull)
	duration(PodAnnotationStart, &s.timing.Start)
	duration(PodAnnotationReady, &s.timing.Ready)
	duration(PodAnnotationStopDelay, &s.stopDelay)
	if duration(PodAnnotationRunDuration, &s.timing.RunDuration) {
		s.runSet = true
	}
	if v, ok := pod.Annotations[PodAnnotationExitCode]; ok {
		n, err := strconv.ParseUint(v, 10, 8)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s=%q (want an exit code 0-255)", PodAnnotationExitCode, v))
		} else {
			s.exitCode = int32(n)
			if !s.runSet {
				s.runSet = true // a code says the containers end: at the run duration
			}
		}
	}
	s.badAnnotations = strings.Join(bad, ", ")
	return s
}

func newCtrSpec(c *corev1.Container) ctrSpec {
	s := ctrSpec{name: c.Name, image: c.Image, sleep: sleepOf(c),
		sidecar: c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways}
	return s
}

// sleepOf reads clusterloader2's batch pods, whose container runs `sleep N` (in command or args,
// N seconds or a sleep(1) duration such as 30s), as the container's run time; -1 if it runs another
// command.
func sleepOf(c *corev1.Container) time.Duration {
	argv := append(append([]string(nil), c.Command...), c.Args...)
	for i, a := range argv {
		if (a == "sleep" || strings.HasSuffix(a, "/sleep")) && i+1 < len(argv) {
			v := argv[i+1]
			if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 {
				return time.Duration(n * float64(time.Second))
			}
			if d, err := time.ParseDuration(v); err == nil && d >= 0 {
				return d
			}
			return -1
		}
	}
	return -1
}

func appendHostPorts(ports []string, c *corev1.Container) []string {
	for _, p := range c.Ports {
		if p.HostPort > 0 {
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			ports = append(ports, fmt.Sprintf("%s/%s/%d", p.HostIP, proto, p.HostPort))
		}
	}
	return ports
}

// ends says whether a container of the pod exits on its own, and after how long it runs.
func (s *podSpec) ends() (bool, time.Duration) {
	if s.runSet || s.restartPolicy != corev1.RestartPolicyAlways {
		return true, s.timing.RunDuration
	}
	return false, 0
}
