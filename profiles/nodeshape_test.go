package profiles

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Every check of a group's node shape, each by its field, before anything starts.
func TestNodeShapeValidation(t *testing.T) {
	_, err := Parse("t.yaml", []byte(doc(`nodes: 10
podsPerNode: 30
groups:
  g:
    count: 2
    labels: {pool: big, "node-role.kubernetes.io/worker": "", "bad key": x, kubernetes.io/hostname: h, topology.kubernetes.io/zone: z}
    taints:
    - {key: dedicated, value: big, effect: NoSchedule}
    - {key: dedicated, value: other, effect: NoSchedule}
    - {key: dedicated, effect: Sometimes}
    - {key: node.kubernetes.io/unreachable, effect: NoExecute}
    allocatable: {cpu: four, memory: 0, pods: 20, ephemeral-storage: 1Gi}
  h:
    count: 1
    allocatable: {pods: 251}
phases: [{name: p, duration: 1m}]`)))
	assertProblems(t, err, []string{
		`11: spec.groups.g.labels.bad key: label key "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		`11: spec.groups.g.labels.kubernetes.io/hostname: label kubernetes.io/hostname is set by fakelet itself`,
		`11: spec.groups.g.labels.node-role.kubernetes.io/worker: label node-role.kubernetes.io/worker: a kubelet may not register its Node with a kubernetes.io or k8s.io label other than beta.kubernetes.io/arch, beta.kubernetes.io/instance-type, beta.kubernetes.io/os, failure-domain.beta.kubernetes.io/region, failure-domain.beta.kubernetes.io/zone, kubernetes.io/arch, kubernetes.io/hostname, kubernetes.io/os, node.kubernetes.io/instance-type, topology.kubernetes.io/region, topology.kubernetes.io/zone, or one under kubelet.kubernetes.io, node.kubernetes.io (the NodeRestriction admission plugin refuses it)`,
		`11: spec.groups.g.labels.topology.kubernetes.io/zone: label topology.kubernetes.io/zone is set by fakelet itself (from --zones, or spec.zones in a profile)`,
		`14: spec.groups.g.taints[1]: taint dedicated:NoSchedule is already taints[0]: a Node has one taint per key and effect`,
		`15: spec.groups.g.taints[2]: taint dedicated effect "Sometimes": want one of NoSchedule, PreferNoSchedule, NoExecute`,
		`16: spec.groups.g.taints[3]: taint node.kubernetes.io/unreachable: the node.kubernetes.io taints are the control plane's (the node lifecycle controller's and the kubelet's conditions), not a node's to register`,
		`17: spec.groups.g.allocatable.cpu: "four" is not a quantity (such as 4, 500m, 16Gi): quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
		`17: spec.groups.g.allocatable.ephemeral-storage: allocatable ephemeral-storage: fakelet sets only cpu, memory, pods`,
		`17: spec.groups.g.allocatable.memory: allocatable memory 0: must be more than 0`,
		`17: spec.groups.g.allocatable.pods: 20 is fewer than spec.podsPerNode 30: the fleet's own pods would not fit`,
		`20: spec.groups.h.allocatable.pods: allocatable pods 251: at most 250 (a /24 podCIDR's addresses)`,
	})
}

// A node registers with one shape: two shaped groups that share a node are refused when the groups
// are chosen, and groups that only select (for ops) may overlap with anything.
func TestShapedGroupsMustNotOverlap(t *testing.T) {
	p := mustParse(t, `nodes: 10
groups:
  a: {indexes: "0-4", labels: {pool: a}}
  b: {indexes: "4-6", taints: [{key: dedicated, effect: NoSchedule}]}
  ops: {indexes: "0-9"}
phases: [{name: p, duration: 1m}]`)
	_, err := p.Resolve(Fleet{Nodes: 10})
	assertProblems(t, err, []string{
		`9: spec.groups.b: shares 1 node(s) (node 4 first) with group a, and both shape their nodes: a node registers with one shape`,
	})
}

func TestNodeShapesOfAPlan(t *testing.T) {
	p := mustParse(t, `nodes: 10
groups:
  big: {indexes: "0-1", labels: {pool: big}, allocatable: {cpu: "64", pods: 250}}
  tainted: {indexes: "5", taints: [{key: dedicated, value: infra, effect: NoExecute}]}
  ops: {percent: 50}
phases: [{name: p, duration: 1m}]`)
	plan := mustResolve(t, p, 10, 1)
	shapes, groupOf := plan.NodeShapes()
	if len(shapes) != 2 {
		t.Fatalf("%d shapes, want big's and tainted's", len(shapes))
	}
	if !reflect.DeepEqual(shapes[0].Labels, map[string]string{"pool": "big"}) || shapes[0].Allocatable.Cpu().Cmp(resource.MustParse("64")) != 0 ||
		shapes[0].Allocatable.Pods().Value() != 250 {
		t.Errorf("big's shape %+v", shapes[0])
	}
	if want := []corev1.Taint{{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoExecute}}; !reflect.DeepEqual(shapes[1].Taints, want) {
		t.Errorf("tainted's taints %v, want %v", shapes[1].Taints, want)
	}
	for index, want := range map[int]int{0: 0, 1: 0, 2: -1, 5: 1, 9: -1} {
		if got := groupOf(index); got != want {
			t.Errorf("groupOf(%d) = %d, want %d", index, got, want)
		}
	}
	if shapes, groupOf := mustResolve(t, mustParse(t, "nodes: 3\ngroups: {g: {count: 1}}\nphases: [{name: p, duration: 1m}]"), 3, 1).NodeShapes(); shapes != nil || groupOf != nil {
		t.Error("a plan without shaped groups has node shapes")
	}
}
