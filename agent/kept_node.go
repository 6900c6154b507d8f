package agent

import (
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// keptNode is the server's Node as an agent keeps it from one request or event to the next. A
// fleet's Nodes differ in little but their name, version and conditions' times, and a decoded Node
// is large however much of it the template's copies share (docs/performance.md, "The Node an agent
// keeps"): so a Node that is the template's shape keeps only what is its own, and node rebuilds
// the rest. One that is not (someone labelled it, or a field fakelet does not write is set) is kept
// whole. A keptNode is never written to once kept: the status loop knows a Node unchanged by its
// pointer.
type keptNode struct {
	rv  string
	uid types.UID
	// whole is the Node as the server returned it, when node would not rebuild it; nil otherwise,
	// and the fields below hold what is the Node's own.
	whole         *corev1.Node
	created       int64             // the creationTimestamp, in Unix seconds
	annotations   map[string]string // shared with other Nodes of the same (keptTables.annotations)
	conds         []keptCondition
	taints        []corev1.Taint
	podCIDR       string
	podCIDRs      []string
	unschedulable bool
}

// keptCondition is a NodeCondition: its texts shared with every node's of the same texts, its
// times in Unix seconds (whole seconds are all the API keeps; zeroTime for none).
type keptCondition struct {
	text                  *keptTexts
	heartbeat, transition int64
}

type keptTexts struct {
	typ     corev1.NodeConditionType
	status  corev1.ConditionStatus
	reason  string
	message string
}

// zeroTime stands for a zero metav1.Time, which has no Unix seconds of its own to keep.
const zeroTime = math.MinInt64

// keptTables are the texts and annotations a fleet's kept Nodes share. Bounded, so that Nodes
// whose conditions or annotations all differ cost a copy each, as they would unshared, and no more.
type keptTables struct {
	mu          sync.RWMutex
	texts       map[keptTexts]*keptTexts
	annotations atomic.Pointer[[]map[string]string] // copied on write, under mu
}

const (
	maxSharedTexts       = 1024
	maxSharedAnnotations = 16 // the TTL controller's annotation takes a handful of values a run
)

func (k *keptTables) text(c *corev1.NodeCondition) *keptTexts {
	t := keptTexts{typ: c.Type, status: c.Status, reason: c.Reason, message: c.Message}
	k.mu.RLock()
	shared := k.texts[t]
	k.mu.RUnlock()
	if shared != nil {
		return shared
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if shared = k.texts[t]; shared != nil {
		return shared
	}
	if k.texts == nil {
		k.texts = map[keptTexts]*keptTexts{}
	}
	shared = &keptTexts{}
	*shared = t // only here, so that a text found costs no allocation
	if len(k.texts) < maxSharedTexts {
		k.texts[t] = shared
	}
	return shared
}

// annotationsOf returns a shared map equal to m, m itself if it becomes the shared one, or m when
// no more are shared. Shared maps are never written to: nothing writes to a kept Node's.
func (k *keptTables) annotationsOf(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	find := func() map[string]string {
		if sets := k.annotations.Load(); sets != nil {
			for _, s := range *sets {
				if maps.Equal(s, m) {
					return s
				}
			}
		}
		return nil
	}
	if s := find(); s != nil {
		return s
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if s := find(); s != nil {
		return s
	}
	var sets []map[string]string
	if p := k.annotations.Load(); p != nil {
		sets = *p
	}
	if len(sets) < maxSharedAnnotations {
		sets = append(slices.Clip(sets), m)
		k.annotations.Store(&sets)
	}
	return m
}

// keep returns n, compacted (Template.Compact), as the agent keeps it. n is not written to
// afterwards by anyone: a Node kept whole is n.
func (a *Agent) keep(n *corev1.Node) *keptNode {
	k := &keptNode{rv: n.ResourceVersion, uid: n.UID, whole: n}
	if !a.templateShaped(n) {
		return k
	}
	created, ok := unixSeconds(n.CreationTimestamp)
	if !ok {
		return k
	}
	tables := a.cfg.Template.kept
	conds := make([]keptCondition, len(n.Status.Conditions))
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		beat, ok1 := unixSeconds(c.LastHeartbeatTime)
		moved, ok2 := unixSeconds(c.LastTransitionTime)
		if !ok1 || !ok2 {
			return k
		}
		conds[i] = keptCondition{text: tables.text(c), heartbeat: beat, transition: moved}
	}
	if n.Status.Conditions == nil {
		conds = nil
	}
	*k = keptNode{
		rv: n.ResourceVersion, uid: n.UID, created: created, annotations: tables.annotationsOf(n.Annotations),
		conds: conds, taints: n.Spec.Taints, podCIDR: n.Spec.PodCIDR, podCIDRs: n.Spec.PodCIDRs,
		unschedulable: n.Spec.Unschedulable,
	}
	return k
}

// node returns the Node k keeps, rebuilt if it is not kept whole: a Node of its own, which the
// caller may change at the top level but not in what it shares (maps and slices). Agent.mu need not
// be held.
func (a *Agent) node(k *keptNode) *corev1.Node {
	if k.whole != nil {
		return k.whole
	}
	t := a.cfg.Template
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: a.name, UID: k.uid, ResourceVersion: k.rv, CreationTimestamp: timeOf(k.created),
			Labels: t.labels(a.shape, a.name, a.zone), Annotations: k.annotations,
		},
		Spec: corev1.NodeSpec{
			ProviderID: providerID(a.name), Taints: k.taints, Unschedulable: k.unschedulable,
			PodCIDR: k.podCIDR, PodCIDRs: k.podCIDRs,
		},
	}
	var conds []corev1.NodeCondition
	if k.conds != nil {
		conds = make([]corev1.NodeCondition, len(k.conds))
		for i, c := range k.conds {
			conds[i] = corev1.NodeCondition{
				Type: c.text.typ, Status: c.text.status, Reason: c.text.reason, Message: c.text.message,
				LastHeartbeatTime: timeOf(c.heartbeat), LastTransitionTime: timeOf(c.transition),
			}
		}
	}
	t.setStatus(a, &n.Status, conds)
	return n
}

// podCIDROf is the Node's spec.podCIDR.
func (k *keptNode) podCIDROf() string {
	if k.whole != nil {
		return k.whole.Spec.PodCIDR
	}
	return k.podCIDR
}

func providerID(name string) string { return "fakelet://" + name }

// templateShaped reports whether node(keep(n)) would be n: every field the template writes is the
// template's for this agent (the shared lists among them, as Compact leaves them), and every field
// fakelet neither writes nor keeps is empty. A field added to Node in a later API is in the second
// kind until keep learns of it, so such a Node is kept whole, never rebuilt without it.
func (a *Agent) templateShaped(n *corev1.Node) bool {
	rest := *n
	rest.TypeMeta = metav1.TypeMeta{} // not sent in the status patch, whose two Nodes both lack it
	m, s, st := &rest.ObjectMeta, &rest.Spec, &rest.Status
	m.Name, m.UID, m.ResourceVersion, m.CreationTimestamp, m.Labels, m.Annotations = "", "", "", metav1.Time{}, nil, nil
	s.ProviderID, s.Taints, s.Unschedulable, s.PodCIDR, s.PodCIDRs = "", nil, false, "", nil
	st.Capacity, st.Allocatable, st.Conditions, st.Addresses = nil, nil, nil, nil
	st.DaemonEndpoints, st.NodeInfo, st.Images = corev1.NodeDaemonEndpoints{}, corev1.NodeSystemInfo{}, nil
	if !reflect.ValueOf(&rest).Elem().IsZero() {
		return false
	}
	t := a.cfg.Template
	id, ok := strings.CutPrefix(n.Spec.ProviderID, "fakelet://")
	return ok && id == a.name && n.Name == a.name && t.labelsAre(n.Labels, a.shape, a.name, a.zone) &&
		sameMap(n.Status.Capacity, a.shape.capacity) && sameMap(n.Status.Allocatable, a.shape.allocatable) &&
		slices.Equal(n.Status.Addresses, a.addresses) &&
		n.Status.DaemonEndpoints == (corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}}) &&
		a.sameNodeInfo(&n.Status.NodeInfo) && sameSlice(n.Status.Images, t.Images) && (n.Status.Images == nil) == (t.Images == nil)
}

// sameNodeInfo reports whether ni is what setStatus writes for the agent.
func (a *Agent) sameNodeInfo(ni *corev1.NodeSystemInfo) bool {
	want := a.cfg.Template.nodeInfo
	want.MachineID, want.SystemUUID, want.BootID = a.ids[0], a.ids[1], a.ids[2]
	if ni.Swap == nil && ni.RunningInUserNamespace == nil && want.Swap == nil && want.RunningInUserNamespace == nil {
		return *ni == want
	}
	return equality.Semantic.DeepEqual(*ni, want)
}

// unixSeconds is t as keptNode keeps it, and false if t has a fraction of a second (no decoded
// metav1.Time has).
func unixSeconds(t metav1.Time) (int64, bool) {
	if t.IsZero() {
		return zeroTime, true
	}
	return t.Unix(), t.Nanosecond() == 0
}

// timeOf is a time kept by unixSeconds as decoding gives it: in the local zone.
func timeOf(s int64) metav1.Time {
	if s == zeroTime {
		return metav1.Time{}
	}
	return metav1.Time{Time: time.Unix(s, 0).Local()}
}
