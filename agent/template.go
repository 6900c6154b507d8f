package agent

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/nodedecode"
	"fakelet.dev/fakelet/nodeshape"
)

// KubeletVersion is the kubelet release whose behaviour agents reproduce.
const KubeletVersion = "v1.37.2"

// ZoneLabel is the well-known topology label the node lifecycle controller groups zones by.
const ZoneLabel = corev1.LabelTopologyZone

// Template is the part of a Node all agents of a fleet share. Agents read it and never change it,
// so its maps and slices (the image list above all) are stored once for the whole fleet.
type Template struct {
	Fleet       string
	RunID       string            // the RunAnnotation's value; empty writes none
	Labels      map[string]string // extra labels, after the kubelet's own
	Taints      []corev1.Taint    // --register-with-taints
	Capacity    corev1.ResourceList
	Allocatable corev1.ResourceList
	Images      []corev1.ContainerImage
	// FirstIP is node 0's InternalIP; node i gets FirstIP + i. The addresses are never contacted.
	FirstIP netip.Addr

	// base is the fleet's shape (Labels, Taints, Capacity, Allocatable); groups are those of
	// TemplateOptions.Groups, and groupOf says which one a node index has.
	base    shape
	groups  []*shape
	groupOf func(index int) int
	shapes  []*shape // base, then groups

	nodeInfo    corev1.NodeSystemInfo
	labelText   map[string]string // one copy of every label key and of the values all nodes share
	annotations map[string]string // the one copy of the registration annotations compacted Nodes share; read-only
	// leaseAnnotations are those of a Lease the agent creates: the run's, or none. Read-only.
	leaseAnnotations map[string]string
	// leaseFields is the first managed fields' set a Lease of the fleet came back with, which the
	// agents' Leases share while theirs are the same bytes.
	leaseFields sharedFields
	kept        *keptTables // what the agents' kept Nodes share (kept_node.go)
	nodes       *nodedecode.Decoder
}

// TemplateOptions are the user-facing knobs of a Template.
type TemplateOptions struct {
	Fleet       string
	RunID       string
	Labels      map[string]string
	Taints      []corev1.Taint
	Capacity    corev1.ResourceList // nil: DefaultCapacity
	Allocatable corev1.ResourceList // nil: DefaultAllocatable
	Images      int                 // how many images each node reports; negative means none
	// Groups are the shapes of some of the fleet's nodes (a profile's groups that set labels, taints
	// or allocatable), each laid over Labels, Taints and Allocatable (nodeshape.Shape.Over, Lists);
	// GroupOf says which of them node index has, or -1 for none.
	Groups  []nodeshape.Shape
	GroupOf func(index int) int
}

// DefaultCapacity is a common general-purpose VM: 8 cores, 32 GiB, 110 pods.
func DefaultCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("8"),
		corev1.ResourceMemory:           resource.MustParse("32879408Ki"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("101430960Ki"),
		"hugepages-1Gi":                 resource.MustParse("0"),
		"hugepages-2Mi":                 resource.MustParse("0"),
	}
}

// DefaultAllocatable is DefaultCapacity less the kubelet's default eviction thresholds.
func DefaultAllocatable() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("8"),
		corev1.ResourceMemory:           resource.MustParse("32777008Ki"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("93478772582"),
		"hugepages-1Gi":                 resource.MustParse("0"),
		"hugepages-2Mi":                 resource.MustParse("0"),
	}
}

// NewTemplate builds a fleet's shared node template.
func NewTemplate(o TemplateOptions) (*Template, error) {
	if o.Fleet == "" {
		return nil, fmt.Errorf("fleet name is empty")
	}
	if err := checkShape(o.Labels, o.Taints, nil); err != nil {
		return nil, err
	}
	t := &Template{
		Fleet:       o.Fleet,
		RunID:       o.RunID,
		Labels:      o.Labels,
		Taints:      o.Taints,
		Capacity:    o.Capacity,
		Allocatable: o.Allocatable,
		FirstIP:     netip.MustParseAddr("10.128.0.1"),
		kept:        &keptTables{},
		nodeInfo: corev1.NodeSystemInfo{
			KernelVersion:           "6.1.0-40-cloud-amd64",
			OSImage:                 "Debian GNU/Linux 12 (bookworm)",
			ContainerRuntimeVersion: "containerd://2.1.4",
			KubeletVersion:          KubeletVersion,
			OperatingSystem:         "linux",
			Architecture:            "amd64",
		},
	}
	if t.Capacity == nil {
		t.Capacity = DefaultCapacity()
	}
	if t.Allocatable == nil {
		t.Allocatable = DefaultAllocatable()
	}
	t.base = shape{labels: t.Labels, taints: t.Taints, capacity: t.Capacity, allocatable: t.Allocatable}
	groups, err := groupShapes(o, &t.base)
	if err != nil {
		return nil, err
	}
	t.groups, t.groupOf = groups, o.GroupOf
	t.shapes = append([]*shape{&t.base}, groups...)
	if o.Images > 0 {
		t.Images = Images(o.Images)
	}
	t.nodes = nodedecode.New(t.Images)
	t.annotations = t.registrationAnnotations()
	if t.RunID != "" {
		t.leaseAnnotations = map[string]string{fleetname.RunAnnotation: t.RunID}
	}
	t.labelText = map[string]string{}
	for _, s := range t.shapes {
		for k, v := range t.labels(s, "", "") {
			t.labelText[k] = k
			t.labelText[v] = v
		}
	}
	return t, nil
}

// Owns reports whether node carries this fleet's label.
func (t *Template) Owns(node *corev1.Node) bool {
	return node != nil && node.Labels[fleetname.Label] == t.Fleet
}

// labels are the kubelet's own labels for a node, the fleet label, the zone and the extra labels
// of its shape.
func (t *Template) labels(s *shape, name, zone string) map[string]string {
	l := make(map[string]string, 7+len(s.labels))
	t.eachLabel(s, name, zone, func(k, v string) { l[k] = v })
	return l
}

// labelsAre reports whether l is labels(s, name, zone), without building it.
func (t *Template) labelsAre(l map[string]string, s *shape, name, zone string) bool {
	n, same := 0, true
	t.eachLabel(s, name, zone, func(k, v string) {
		n++
		if got, ok := l[k]; !ok || got != v {
			same = false
		}
	})
	return same && len(l) == n
}

// eachLabel calls f with each of labels(s, name, zone), the kubelet's own after the shape's, so
// that a shape's label of the same key gives way.
func (t *Template) eachLabel(s *shape, name, zone string, f func(k, v string)) {
	for k, v := range s.labels {
		switch k {
		case corev1.LabelHostname, corev1.LabelOSStable, corev1.LabelArchStable, "beta.kubernetes.io/os", "beta.kubernetes.io/arch", fleetname.Label:
			continue
		case ZoneLabel:
			if zone != "" {
				continue
			}
		}
		f(k, v)
	}
	f(corev1.LabelHostname, name)
	f(corev1.LabelOSStable, "linux")
	f(corev1.LabelArchStable, "amd64")
	f("beta.kubernetes.io/os", "linux")
	f("beta.kubernetes.io/arch", "amd64")
	f(fleetname.Label, t.Fleet)
	if zone != "" {
		f(ZoneLabel, zone)
	}
}

// attachDetachAnnotation is the annotation a kubelet sets at registration (with "true").
const attachDetachAnnotation = "volumes.kubernetes.io/controller-managed-attach-detach"

// registrationAnnotations are those a kubelet sets at registration, and the run's.
func (t *Template) registrationAnnotations() map[string]string {
	m := map[string]string{attachDetachAnnotation: "true"}
	if t.RunID != "" {
		m[fleetname.RunAnnotation] = t.RunID
	}
	return m
}

// HeldBy is the run that created or last adopted an object, from its RunAnnotation ("" for none).
func HeldBy(m metav1.Object) string { return m.GetAnnotations()[fleetname.RunAnnotation] }

// initialNode is the Node a kubelet POSTs at registration: metadata, spec and full status.
func (t *Template) initialNode(a *Agent, now metav1.Time, conds []corev1.NodeCondition) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        a.name,
			Labels:      t.labels(a.shape, a.name, a.zone),
			Annotations: t.registrationAnnotations(),
		},
		Spec: corev1.NodeSpec{
			ProviderID: "fakelet://" + a.name,
			Taints:     a.shape.taints,
		},
	}
	t.setStatus(a, &n.Status, conds)
	return n
}

// setStatus writes everything but the conditions' content, as the kubelet's status setters do.
// Shared maps and slices are assigned, not copied: nobody writes to them.
func (t *Template) setStatus(a *Agent, s *corev1.NodeStatus, conds []corev1.NodeCondition) {
	s.Capacity = a.shape.capacity
	s.Allocatable = a.shape.allocatable
	s.Conditions = conds
	s.Addresses = a.addresses
	s.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}}
	s.NodeInfo = t.nodeInfo
	s.NodeInfo.MachineID, s.NodeInfo.SystemUUID, s.NodeInfo.BootID = a.ids[0], a.ids[1], a.ids[2]
	s.Images = t.Images
}

// ipFor returns node index's InternalIP.
func (t *Template) ipFor(index int) string {
	base := t.FirstIP.As4()
	v := binary.BigEndian.Uint32(base[:]) + uint32(index)
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b).String()
}

// machineIDs derives stable machine, system and boot IDs from the node name.
func machineIDs(name string) [3]string {
	sum := sha256.Sum256([]byte(name))
	uuid := func(b []byte) string {
		h := hex.EncodeToString(b)
		return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	}
	return [3]string{hex.EncodeToString(sum[:16]), uuid(sum[16:32]), uuid(sum[8:24])}
}

// Compact drops what an agent need not keep of a Node the server returned: managed fields, and the
// decoded image list and resource lists when they equal the shared ones. A fleet of 10,000 agents
// keeps one of each, and the status loop sees them unchanged without comparing them (statusChanged).
func (t *Template) Compact(n *corev1.Node) *corev1.Node {
	if n == nil {
		return nil
	}
	n.ManagedFields = nil
	if t.Images != nil && sameImages(n.Status.Images, t.Images) {
		n.Status.Images = t.Images
	}
	n.Status.Capacity, n.Status.Allocatable = t.sharedResources(n.Status.Capacity, n.Status.Allocatable)
	for k, v := range n.Labels {
		// Assigning under an equal key stores the given key string: the decoded one can go too.
		if key, ok := t.labelText[k]; ok {
			n.Labels[key] = shared(v, t.labelText[v])
		}
	}
	if maps.Equal(n.Annotations, t.annotations) {
		n.Annotations = t.annotations
	}
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		c.Reason, c.Message = internText(c.Reason), internText(c.Message)
	}
	ni, tn := &n.Status.NodeInfo, &t.nodeInfo
	ni.KernelVersion = shared(ni.KernelVersion, tn.KernelVersion)
	ni.OSImage = shared(ni.OSImage, tn.OSImage)
	ni.ContainerRuntimeVersion = shared(ni.ContainerRuntimeVersion, tn.ContainerRuntimeVersion)
	ni.KubeletVersion = shared(ni.KubeletVersion, tn.KubeletVersion)
	ni.KubeProxyVersion = shared(ni.KubeProxyVersion, tn.KubeProxyVersion)
	ni.OperatingSystem = shared(ni.OperatingSystem, tn.OperatingSystem)
	ni.Architecture = shared(ni.Architecture, tn.Architecture)
	return n
}

// shared returns the template's copy of s if they are equal, so that the decoded one can go.
func shared(s, template string) string {
	if s == template {
		return template
	}
	return s
}

// conditionTexts holds one copy of every reason and message the agents report.
var conditionTexts = func() map[string]string {
	m := map[string]string{}
	for _, texts := range conditionText {
		for _, pair := range texts {
			m[pair[0]], m[pair[1]] = pair[0], pair[1]
		}
	}
	return m
}()

func internText(s string) string {
	if v, ok := conditionTexts[s]; ok {
		return v
	}
	return s
}

// sameResources compares resource lists as the kubelet's status comparison does (quantities by value).
func sameResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}
