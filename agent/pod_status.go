package agent

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/internal/conditions"
)

// ownPodCIDR holds the pods' IPs of a node whose Node has no spec.podCIDR (a cluster that allocates
// none): node index i gets the i-th /24 of it, wrapping after 16,384 nodes, and its pods the
// addresses .2-.254 of that block in turn. They are never contacted, and the apiserver does not
// check that they are unique.
var ownPodCIDR = netip.MustParsePrefix("100.64.0.0/10")

// podIPFor returns the n-th pod IP of the node: from its podCIDR as the host-local IPAM of a CNI
// plugin hands them out (the network address and the gateway .1 skipped, wrapping), or from
// fakelet's own range.
func (a *Agent) podIPFor(podCIDR string, n uint32) string {
	block := netip.PrefixFrom(ownBlock(a.index), 24)
	if p, err := netip.ParsePrefix(podCIDR); err == nil && p.Addr().Is4() && p.Bits() <= 30 {
		block = p.Masked()
	}
	size := uint32(1) << (32 - block.Bits())
	base := block.Addr().As4()
	v := binary.BigEndian.Uint32(base[:]) + 2 + n%(size-3)
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b).String()
}

func ownBlock(index int) netip.Addr {
	base := ownPodCIDR.Addr().As4()
	blocks := uint32(1) << (24 - ownPodCIDR.Bits())
	v := binary.BigEndian.Uint32(base[:]) + uint32(index)%blocks<<8
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

// podConditions are the conditions the kubelet generates, in its order (generateAPIPodStatus).
var podConditions = [...]corev1.PodConditionType{
	corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled,
}

func kubeletCondition(t corev1.PodConditionType) bool {
	for _, c := range podConditions {
		if c == t {
			return true
		}
	}
	return t == corev1.PodResizePending || t == corev1.PodResizeInProgress || t == "AllContainersRestarting"
}

// condition is one generated condition before its times are set.
type condition struct {
	status          bool
	reason, message string
}

// conditions generates the kubelet's conditions of view v (pkg/kubelet/status/generate.go).
func (st *podState) conditions() [len(podConditions)]condition {
	v, s := &st.view, st.spec
	var out [len(podConditions)]condition
	out[0] = condition{status: v.sandbox}
	switch {
	case v.sandbox:
	case st.terminal:
		out[0].reason, out[0].message = "PodSandboxNotReady", "pod sandbox is not ready"
	default:
		out[0].reason, out[0].message = "PodSandboxNotReady", "no pod sandbox exists"
	}
	var incomplete []string
	started := false
	for _, c := range v.ctrs {
		started = started || c.state != ctrWaiting || c.hasLast
	}
	for i, c := range v.init {
		done := s.init[i].sidecar && c.started || !s.init[i].sidecar && c.ready
		if !done {
			incomplete = append(incomplete, s.init[i].name)
		}
	}
	switch {
	case v.phase == corev1.PodSucceeded:
		out[1] = condition{status: true, reason: "PodCompleted"}
	case len(incomplete) == 0 || started:
		out[1] = condition{status: true}
	default:
		out[1] = condition{reason: "ContainersNotInitialized", message: "containers with incomplete status: [" + strings.Join(incomplete, " ") + "]"}
	}
	var unready []string
	for i, c := range v.init {
		if s.init[i].sidecar && !c.ready {
			unready = append(unready, s.init[i].name)
		}
	}
	for i, c := range v.ctrs {
		if !c.ready {
			unready = append(unready, s.ctrs[i].name)
		}
	}
	switch {
	case v.phase == corev1.PodSucceeded:
		out[3] = condition{reason: "PodCompleted"}
	case v.phase == corev1.PodFailed:
		out[3] = condition{reason: "PodFailed"}
	case len(unready) == 0:
		out[3] = condition{status: true}
	default:
		out[3] = condition{reason: "ContainersNotReady", message: "containers with unready status: [" + strings.Join(unready, " ") + "]"}
	}
	out[2] = out[3]
	out[4] = condition{status: true}
	return out
}

// settle records the transition times of the conditions that changed since the view last
// reported, at now.
func (st *podState) settle(now time.Time) {
	if st.view.reason != "" {
		return // rejected: no conditions
	}
	t := now.Unix()
	conds := st.conditions()
	var bits uint8
	for i, c := range conds {
		if c.status {
			bits |= 1 << i
		}
		if st.view.condAt[i] == 0 || (st.view.conds>>i)&1 != bits>>i&1 {
			st.view.condAt[i] = t
		}
	}
	st.view.conds = bits
}

// podStatus is the status the kubelet reports of the pod in view v: base's conditions that are
// not the kubelet's kept first (DisruptionTarget), then its own, in its order, each keeping base's
// transition time while its status is the same (the status manager's updateLastTransitionTime).
func (a *Agent) podStatus(st *podState, base *corev1.PodStatus) corev1.PodStatus {
	v, s := &st.view, st.spec
	var out corev1.PodStatus
	if base != nil {
		for _, c := range base.Conditions {
			if !kubeletCondition(c.Type) {
				out.Conditions = append(out.Conditions, c)
			}
		}
	}
	out.Phase, out.Reason, out.Message = v.phase, v.reason, v.message
	out.QOSClass = s.qos
	out.ObservedGeneration = st.generation
	start := metav1.NewTime(v.startTime.Truncate(time.Second))
	out.StartTime = &start
	hostIP := a.addresses[0].Address
	out.HostIP, out.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
	if v.reason != "" {
		return out // rejected: the kubelet's rejectPod status, nothing more
	}
	if v.sandbox && v.podIP != "" {
		out.PodIP, out.PodIPs = v.podIP, []corev1.PodIP{{IP: v.podIP}}
	}
	conds := st.conditions()
	for i, typ := range podConditions {
		c := conds[i]
		pc := corev1.PodCondition{Type: typ, Status: corev1.ConditionFalse, ObservedGeneration: st.generation,
			LastTransitionTime: metav1.NewTime(time.Unix(v.condAt[i], 0).UTC())}
		if c.status {
			pc.Status = corev1.ConditionTrue
		}
		pc.Reason, pc.Message = c.reason, c.message
		if base != nil {
			for _, old := range base.Conditions {
				if old.Type == typ && old.Status == pc.Status {
					pc.LastTransitionTime = old.LastTransitionTime
				}
			}
		}
		out.Conditions = append(out.Conditions, pc)
	}
	for i := range s.init {
		out.InitContainerStatuses = append(out.InitContainerStatuses, st.ctrStatus(&s.init[i], &v.init[i]))
	}
	for i := range s.ctrs {
		out.ContainerStatuses = append(out.ContainerStatuses, st.ctrStatus(&s.ctrs[i], &v.ctrs[i]))
	}
	sortByName(out.ContainerStatuses)
	return out
}

func sortByName(cs []corev1.ContainerStatus) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].Name < cs[j-1].Name; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// ctrStatus is one container's status: the IDs the CRI would give (a stable digest of the pod,
// the container and its attempt), its state and the one before.
func (st *podState) ctrStatus(cs *ctrSpec, c *ctrStatus) corev1.ContainerStatus {
	out := corev1.ContainerStatus{Name: cs.name, Image: cs.image, RestartCount: c.restarts, Ready: c.ready, Started: ptr.To(c.started)}
	created := c.state != ctrWaiting
	if created || c.hasLast {
		out.ImageID = imageRef(cs.image) + "@sha256:" + digest(cs.image)
	}
	id := func(attempt int32) string {
		return "containerd://" + digest(fmt.Sprintf("%s/%s/%d", st.uid, cs.name, attempt))
	}
	switch c.state {
	case ctrWaiting:
		w := &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		switch c.wait {
		case waitInitializing:
			w.Reason = "PodInitializing"
		case waitCrashLoop:
			w.Reason = "CrashLoopBackOff"
			w.Message = fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", c.backoff, cs.name, st.name, st.namespace, st.uid)
		}
		out.State.Waiting = w
	case ctrRunning:
		out.ContainerID = id(c.restarts)
		out.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.from.Truncate(time.Second))}
	case ctrExited:
		out.ContainerID = id(c.restarts)
		out.State.Terminated = terminated(c.exitCode, c.from, c.to, out.ContainerID)
	}
	if c.hasLast {
		last := c.restarts - 1 // the one before the current attempt
		if c.state == ctrWaiting {
			last = c.restarts // backing off: the attempt that exited is still the current one
			out.ContainerID = id(last)
		}
		out.LastTerminationState.Terminated = terminated(c.lastCode, c.lastFrom, c.lastTo, id(max(last, 0)))
	}
	return out
}

// terminated is a container's terminated state with the reason containerd gives.
func terminated(code int32, from, to time.Time, id string) *corev1.ContainerStateTerminated {
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, ContainerID: id,
		StartedAt: metav1.NewTime(from.Truncate(time.Second)), FinishedAt: metav1.NewTime(to.Truncate(time.Second))}
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
// that a pod deleted and created again under the same name is not patched. It returns nil when the
// UID would be all the patch holds: the status manager then sends nothing.
func podStatusPatch(p *corev1.Pod, old *corev1.PodStatus, status corev1.PodStatus) ([]byte, error) {
	oldData, err := json.Marshal(corev1.Pod{Status: *old})
	if err != nil {
		return nil, fmt.Errorf("marshal the status of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	newData, err := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: p.UID}, Status: status})
	if err != nil {
		return nil, fmt.Errorf("marshal the status of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("patch the status of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	if string(patch) == fmt.Sprintf(`{"metadata":{"uid":%q}}`, p.UID) {
		return nil, nil
	}
	return patch, nil
}

// runningReady says whether a pod's status is Running and Ready.
func runningReady(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && conditions.PodReady(p)
}
