package nodedecode_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/nodedecode"
)

// templateNode is a Node as the apiserver returns an agent's: the fleet's labels, resources and
// 50 images, conditions, addresses, its managed fields.
func templateNode(images []corev1.ContainerImage) *corev1.Node {
	at := metav1.NewTime(time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC))
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32879408Ki"),
		corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00042", UID: "6f1c2b10-0b9f-4c55-9d7e-1f1f6a3c6d1c", ResourceVersion: "123456",
			CreationTimestamp: at, Labels: map[string]string{"kubernetes.io/hostname": "fakelet-00042", "fakelet.dev/fleet": "f"},
			Annotations: map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				Time: &at, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{}}}`)}}}},
		Spec: corev1.NodeSpec{ProviderID: "fakelet://fakelet-00042",
			Taints: []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity: res, Allocatable: res,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: at,
				LastTransitionTime: at, Reason: "KubeletReady", Message: "kubelet is posting ready status"}},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.128.0.43"}, {Type: corev1.NodeHostName, Address: "fakelet-00042"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo:        corev1.NodeSystemInfo{MachineID: "m", KubeletVersion: agent.KubeletVersion, OperatingSystem: "linux", Architecture: "amd64"},
			Images:          images,
		},
	}
}

func marshal(t testing.TB, n *corev1.Node) []byte {
	t.Helper()
	b, err := n.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decode decodes raw with d and with Node.Unmarshal, fails unless they agree (the same Node, or
// the same error), and returns d's Node.
func decode(t testing.TB, d *nodedecode.Decoder, raw []byte) (*corev1.Node, error) {
	t.Helper()
	want := &corev1.Node{}
	wantErr := want.Unmarshal(raw)
	got := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "left over"}}
	err := d.Unmarshal(got, raw)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("decoded with error %v, Node.Unmarshal with %v", err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n%+v\nNode.Unmarshal made\n%+v", got, want)
	}
	return got, err
}

func shares(n *corev1.Node, images []corev1.ContainerImage) bool {
	return len(n.Status.Images) > 0 && len(images) > 0 && &n.Status.Images[0] == &images[0]
}

// withStatus is n's bytes with its status's replaced by edit's of them.
func withStatus(t testing.TB, n *corev1.Node, edit func(status []byte) []byte) []byte {
	t.Helper()
	var raw []byte
	for num, m := range []interface{ Marshal() ([]byte, error) }{&n.ObjectMeta, &n.Spec, &n.Status} {
		b, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if num == 2 {
			b = edit(b)
		}
		raw = protowire.AppendTag(raw, protowire.Number(num+1), protowire.BytesType)
		raw = protowire.AppendBytes(raw, b)
	}
	return raw
}

func unknownField(b []byte) []byte {
	b = protowire.AppendTag(b, 99, protowire.BytesType)
	return protowire.AppendString(b, "a field of a later release")
}

// TestDecoderSharesTheImagesItIsGiven: a Node whose images are the template's decodes to what
// Node.Unmarshal makes of it, its images the template's own list.
func TestDecoderSharesTheImagesItIsGiven(t *testing.T) {
	images := agent.Images(agent.MaxImages)
	d := nodedecode.New(images)
	n := templateNode(images)
	for name, raw := range map[string][]byte{
		"as marshalled":             marshal(t, n),
		"an unknown field after":    withStatus(t, n, unknownField),
		"an unknown field before":   withStatus(t, n, func(s []byte) []byte { return append(unknownField(nil), s...) }),
		"volumes after the images":  marshal(t, withVolumes(n)),
		"the status first":          reorder(t, marshal(t, n)),
		"with an unknown top field": unknownField(marshal(t, n)),
	} {
		got, err := decode(t, d, raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !shares(got, images) {
			t.Errorf("%s: the images are decoded, not the template's", name)
		}
	}
}

func withVolumes(n *corev1.Node) *corev1.Node {
	m := *n
	m.Status.VolumesInUse = []corev1.UniqueVolumeName{"kubernetes.io/csi/disk^vol-1"}
	return &m
}

// reorder puts a Node's status field first.
func reorder(t testing.TB, raw []byte) []byte {
	t.Helper()
	var first, rest []byte
	for b := raw; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if n < 0 || m < 0 {
			t.Fatal("no message")
		}
		if num == 3 {
			first = append(first, b[:n+m]...)
		} else {
			rest = append(rest, b[:n+m]...)
		}
		b = b[n+m:]
	}
	return append(first, rest...)
}

// TestDecoderDecodesOtherImages: a Node whose images are not the template's, byte for byte, is
// decoded whole, to what Node.Unmarshal makes of it.
func TestDecoderDecodesOtherImages(t *testing.T) {
	images := agent.Images(agent.MaxImages)
	d := nodedecode.New(images)
	oneByte := slices.Clone(images)
	oneByte[7].SizeBytes++
	otherName := slices.Clone(images)
	otherName[49].Names = []string{images[49].Names[0], images[49].Names[1] + "x"}
	reversed := slices.Clone(images)
	slices.Reverse(reversed)
	cases := map[string][]byte{
		"a size one off":  marshal(t, templateNode(oneByte)),
		"a name one off":  marshal(t, templateNode(otherName)),
		"another order":   marshal(t, templateNode(reversed)),
		"no images":       marshal(t, templateNode(nil)),
		"fewer images":    marshal(t, templateNode(images[:49])),
		"more images":     marshal(t, templateNode(append(slices.Clone(images), images[0]))),
		"no status":       marshal(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}),
		"empty":           {},
		"two statuses":    twoStatuses(t, templateNode(images)),
		"the Node twice":  slices.Concat(marshal(t, templateNode(images)), marshal(t, templateNode(images))),
		"a field between": withStatus(t, templateNode(images), func(s []byte) []byte { return insertAfterImage(t, s, 10, unknownField(nil)) }),
		"an image apart":  withStatus(t, templateNode(images), func(s []byte) []byte { return insertAfterImage(t, s, 49, unknownField(nil)) }),
		"images not length-delimited": withStatus(t, templateNode(images), func(s []byte) []byte {
			return protowire.AppendVarint(protowire.AppendTag(s, 8, protowire.VarintType), 1)
		}),
		"a group": withStatus(t, templateNode(images), func(s []byte) []byte {
			return protowire.AppendTag(protowire.AppendTag(s, 20, protowire.StartGroupType), 20, protowire.EndGroupType)
		}),
	}
	for name, raw := range cases {
		if got, _ := decode(t, d, raw); shares(got, images) {
			t.Errorf("%s: the Node has the template's images", name)
		}
	}
}

// twoStatuses is n's bytes with its status field twice, one after the other: Node.Unmarshal merges
// them, the images of both in one list.
func twoStatuses(t testing.TB, n *corev1.Node) []byte {
	t.Helper()
	status, err := n.Status.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return protowire.AppendBytes(protowire.AppendTag(marshal(t, n), 3, protowire.BytesType), status)
}

// insertAfterImage inserts field, and an empty image after it, after the i-th image (from 0) of
// status's bytes: images apart.
func insertAfterImage(t testing.TB, status []byte, i int, field []byte) []byte {
	t.Helper()
	seen := 0
	for at := 0; at < len(status); {
		num, typ, n := protowire.ConsumeTag(status[at:])
		m := protowire.ConsumeFieldValue(num, typ, status[at+n:])
		if n < 0 || m < 0 {
			t.Fatal("no message")
		}
		at += n + m
		if num == 8 {
			if seen == i {
				last := protowire.AppendBytes(protowire.AppendTag(nil, 8, protowire.BytesType), nil) // an empty image after it
				return slices.Concat(status[:at], field, last, status[at:])
			}
			seen++
		}
	}
	t.Fatal("too few images")
	return nil
}

// TestDecoderRefusesWhatNodeUnmarshalRefuses: bytes cut anywhere, or with a byte changed anywhere,
// decode to Node.Unmarshal's Node or error, and never panic.
func TestDecoderRefusesWhatNodeUnmarshalRefuses(t *testing.T) {
	images := agent.Images(agent.MaxImages)
	d := nodedecode.New(images)
	raw := marshal(t, templateNode(images))
	for i := range raw {
		decode(t, d, raw[:i])
	}
	for i := 0; i < len(raw); i += 7 {
		for _, b := range []byte{0x00, 0x08, 0x80, 0xff} {
			bad := slices.Clone(raw)
			bad[i] = b
			decode(t, d, bad)
		}
	}
}

// An image list that does not survive its encoding (names empty but not nil decode as nil) is not
// shared, nor is an empty one: what a Node decodes to must not change.
func TestDecoderOfImagesThatDoNotDecodeBack(t *testing.T) {
	for name, images := range map[string][]corev1.ContainerImage{
		"empty names": {{Names: []string{}, SizeBytes: 1}},
		"empty list":  {},
	} {
		d := nodedecode.New(images)
		if got, _ := decode(t, d, marshal(t, templateNode(images))); shares(got, images) {
			t.Errorf("%s: shared", name)
		}
	}
	var nilDecoder *nodedecode.Decoder
	decode(t, nilDecoder, marshal(t, templateNode(agent.Images(3))))
}

// FuzzDecoder holds the Decoder to Node.Unmarshal for any bytes.
func FuzzDecoder(f *testing.F) {
	images := agent.Images(agent.MaxImages)
	n := templateNode(images)
	f.Add(marshal(f, n))
	f.Add(withStatus(f, n, unknownField))
	f.Add(marshal(f, templateNode(images[:3])))
	f.Add([]byte{0x1a, 0x00})
	d := nodedecode.New(images)
	f.Fuzz(func(t *testing.T, raw []byte) { decode(t, d, raw) })
}

// BenchmarkDecodeNode decodes an agent's Node with the fleet's 50 images, with Node.Unmarshal as
// client-go does and with the Decoder.
func BenchmarkDecodeNode(b *testing.B) {
	images := agent.Images(agent.MaxImages)
	raw := marshal(b, templateNode(images))
	d := nodedecode.New(images)
	b.Run("Node.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var n corev1.Node
			if err := n.Unmarshal(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Decoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var n corev1.Node
			if err := d.Unmarshal(&n, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
