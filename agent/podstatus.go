package agent

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"
)

// podCIDR holds the pods' IPs: the node index and the pod's number pick one, wrapping after 2^22
// (38,000 nodes of 110 pods). They are never contacted, and the apiserver does not check that they
// are unique.
var podCIDR = netip.MustParsePrefix("100.64.0.0/10")

// maxPodsPerNode is the pod capacity of DefaultCapacity; pod numbers below it get distinct IPs.
const maxPodsPerNode = 110

// podIP is the IP of the node's pod named pod: the fleet names pods NODE-N.
func (a *Agent) podIP(pod string) string {
	n, _ := strconv.Atoi(strings.TrimPrefix(pod, a.name+"-"))
	base := podCIDR.Addr().As4()
	size := uint32(1) << (32 - podCIDR.Bits())
	v := binary.BigEndian.Uint32(base[:]) + uint32(a.index*maxPodsPerNode+n)%size
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b).String()
}

// runningReady says whether the pod's status is what the agent reports: Running and Ready.
func runningReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podConditions are the conditions the kubelet reports of a running pod, in its order.
var podConditions = [...]corev1.PodConditionType{
	corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled,
}

// podStatus is the status the kubelet reports of a pod whose containers all run and are ready: the
// pod's own status with phase, conditions, IPs, start time and container statuses set. What did not
// change keeps its times, so that a pod already Running and Ready gets an empty patch.
func (a *Agent) podStatus(p *corev1.Pod, now time.Time) corev1.PodStatus {
	t := metav1.NewTime(now.Truncate(time.Second))
	s := *p.Status.DeepCopy()
	s.Phase = corev1.PodRunning
	for _, typ := range podConditions {
		setPodCondition(&s, typ, t)
	}
	hostIP := a.addresses[0].Address
	s.HostIP, s.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
	podIP := a.podIP(p.Name)
	s.PodIP, s.PodIPs = podIP, []corev1.PodIP{{IP: podIP}}
	if s.StartTime == nil {
		s.StartTime = &t
	}
	statuses := make([]corev1.ContainerStatus, 0, len(p.Spec.Containers))
	for _, c := range p.Spec.Containers {
		started := t
		for _, old := range p.Status.ContainerStatuses {
			if old.Name == c.Name && old.State.Running != nil {
				started = old.State.Running.StartedAt
			}
		}
		statuses = append(statuses, corev1.ContainerStatus{
			Name:         c.Name,
			State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			Ready:        true,
			Started:      ptr.To(true),
			Image:        c.Image,
			ImageID:      imageRef(c.Image) + "@sha256:" + digest(c.Image),
			ContainerID:  "containerd://" + digest(string(p.UID)+"/"+c.Name),
			RestartCount: 0,
		})
	}
	s.ContainerStatuses = statuses
	return s
}

func setPodCondition(s *corev1.PodStatus, typ corev1.PodConditionType, now metav1.Time) {
	for i := range s.Conditions {
		if c := &s.Conditions[i]; c.Type == typ {
			if c.Status != corev1.ConditionTrue {
				c.Status, c.LastTransitionTime, c.Reason, c.Message = corev1.ConditionTrue, now, "", ""
			}
			return
		}
	}
	s.Conditions = append(s.Conditions, corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: now})
}

// imageRef is an image name without its tag.
func imageRef(image string) string {
	if i := strings.LastIndexByte(image, ':'); i > strings.LastIndexByte(image, '/') {
		return image[:i]
	}
	return image
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// podStatusPatch is the kubelet's PatchPodStatus patch (pkg/util/pod in k8s.io/kubernetes): a two-way
// strategic merge patch from the old status to the new, with the pod's UID as a precondition, so
// that a pod deleted and created again under the same name is not patched.
func podStatusPatch(p *corev1.Pod, status corev1.PodStatus) ([]byte, error) {
	oldData, err := json.Marshal(corev1.Pod{Status: p.Status})
	if err != nil {
		return nil, fmt.Errorf("marshal the status of pod %s: %w", p.Name, err)
	}
	newData, err := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: p.UID}, Status: status})
	if err != nil {
		return nil, fmt.Errorf("marshal the status of pod %s: %w", p.Name, err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("patch the status of pod %s: %w", p.Name, err)
	}
	return patch, nil
}

// podStatusPending is the status the kubelet reports of a pod it admitted and whose containers it is
// creating: Pending, scheduled and initialized, not ready, each container waiting in
// ContainerCreating, no pod IP yet.
func (a *Agent) podStatusPending(p *corev1.Pod, now time.Time) corev1.PodStatus {
	t := metav1.NewTime(now.Truncate(time.Second))
	s := *p.Status.DeepCopy()
	s.Phase = corev1.PodPending
	var names []string
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	unready := fmt.Sprintf("containers with unready status: [%s]", strings.Join(names, " "))
	setPodConditionTo(&s, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", "", t)
	setPodCondition(&s, corev1.PodInitialized, t)
	setPodConditionTo(&s, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", unready, t)
	setPodConditionTo(&s, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", unready, t)
	setPodCondition(&s, corev1.PodScheduled, t)
	hostIP := a.addresses[0].Address
	s.HostIP, s.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
	if s.StartTime == nil {
		s.StartTime = &t
	}
	statuses := make([]corev1.ContainerStatus, 0, len(p.Spec.Containers))
	for _, c := range p.Spec.Containers {
		statuses = append(statuses, corev1.ContainerStatus{
			Name:    c.Name,
			State:   corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
			Started: ptr.To(false),
			Image:   c.Image,
		})
	}
	s.ContainerStatuses = statuses
	return s
}

// setPodConditionTo sets a condition's status, reason and message, its transition time if its
// status changes.
func setPodConditionTo(s *corev1.PodStatus, typ corev1.PodConditionType, status corev1.ConditionStatus, reason, message string, now metav1.Time) {
	for i := range s.Conditions {
		if c := &s.Conditions[i]; c.Type == typ {
			if c.Status != status {
				c.LastTransitionTime = now
			}
			c.Status, c.Reason, c.Message = status, reason, message
			return
		}
	}
	s.Conditions = append(s.Conditions, corev1.PodCondition{Type: typ, Status: status, Reason: reason, Message: message, LastTransitionTime: now})
}

// podStatusStopping is a running pod's status once the kubelet began to stop its containers: still
// Running, no longer ready.
func (a *Agent) podStatusStopping(p *corev1.Pod, now time.Time) corev1.PodStatus {
	t := metav1.NewTime(now.Truncate(time.Second))
	s := *p.Status.DeepCopy()
	var names []string
	for i := range s.ContainerStatuses {
		s.ContainerStatuses[i].Ready = false
		names = append(names, s.ContainerStatuses[i].Name)
	}
	unready := fmt.Sprintf("containers with unready status: [%s]", strings.Join(names, " "))
	setPodConditionTo(&s, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", unready, t)
	setPodConditionTo(&s, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", unready, t)
	return s
}

// podStatusTerminated is the terminal status the kubelet reports of a deleted pod whose containers
// stopped: each exited 0 on its SIGTERM, as pause does, so the pod Succeeded.
func (a *Agent) podStatusTerminated(p *corev1.Pod, now time.Time) corev1.PodStatus {
	t := metav1.NewTime(now.Truncate(time.Second))
	s := a.podStatusStopping(p, now)
	s.Phase = corev1.PodSucceeded
	setPodConditionTo(&s, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", "", t)
	for i := range s.ContainerStatuses {
		c := &s.ContainerStatuses[i]
		started := t
		if c.State.Running != nil {
			started = c.State.Running.StartedAt
		}
		c.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed",
			StartedAt: started, FinishedAt: t, ContainerID: c.ContainerID}}
		c.Started = ptr.To(false)
	}
	return s
}
