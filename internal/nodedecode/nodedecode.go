// Package nodedecode decodes the protobuf Nodes of a fleet whose Nodes all report the same images.
// The image list (50 entries, the kubelet's cap) is most of a Node's bytes and most of what
// decoding one allocates, and every answer and watch event of the fleet's Nodes spells it alike.
package nodedecode

import (
	"bytes"
	"reflect"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
)

// The fields cut around, from k8s.io/api's core/v1 generated.proto.
const (
	nodeStatus   = 3 // Node.status
	statusImages = 8 // NodeStatus.images, repeated
)

// Decoder decodes Nodes without decoding their images when they are the Decoder's: the Nodes it
// makes share its list, which nobody may write to.
type Decoder struct {
	images  []corev1.ContainerImage
	entries []byte // images' entries as NodeStatus.Marshal writes them; nil: decode every Node whole
}

// New returns a Decoder of Nodes that report images. An empty list, or one that would not decode
// back to itself (an image with empty but not nil names), has every Node decoded whole: sharing it
// must not change what a Node decodes to.
func New(images []corev1.ContainerImage) *Decoder {
	d := &Decoder{images: images}
	if len(images) == 0 {
		return d
	}
	var entries []byte
	for i := range images {
		b, err := images[i].Marshal()
		if err != nil {
			return d
		}
		entries = protowire.AppendTag(entries, statusImages, protowire.BytesType)
		entries = protowire.AppendBytes(entries, b)
	}
	var back corev1.NodeStatus
	if back.Unmarshal(entries) == nil && reflect.DeepEqual(back.Images, images) {
		d.entries = entries
	}
	return d
}

// Unmarshal decodes the protobuf Node raw into n, replacing what n held. It makes what
// Node.Unmarshal makes of raw in a zero Node, and returns its error, except that when raw's images
// are byte for byte the Decoder's, n's are the Decoder's list itself. A nil Decoder decodes every
// Node whole.
func (d *Decoder) Unmarshal(n *corev1.Node, raw []byte) error {
	*n = corev1.Node{}
	if d != nil && d.entries != nil && d.around(n, raw) {
		return nil
	}
	*n = corev1.Node{}
	return n.Unmarshal(raw)
}

// around decodes raw into n but for its images, with the generated Unmarshal of the bytes before
// and after them: it merges each field it decodes into what n holds, as a message's fields are
// decoded in turn, so the pieces decode to what the whole does. It returns false, n partly
// written, for anything but one status whose images are the Decoder's entries in one run.
func (d *Decoder) around(n *corev1.Node, raw []byte) bool {
	from, to, ok := run(raw, nodeStatus)
	if !ok || from < 0 {
		return false
	}
	_, _, tag := protowire.ConsumeTag(raw[from:])
	status, size := protowire.ConsumeBytes(raw[from+tag:])
	if from+tag+size != to { // more than one status
		return false
	}
	start, end, ok := run(status, statusImages)
	if !ok || start < 0 || !bytes.Equal(status[start:end], d.entries) {
		return false
	}
	if n.Unmarshal(raw[:from]) != nil || n.Status.Unmarshal(status[:start]) != nil ||
		n.Status.Unmarshal(status[end:]) != nil || n.Unmarshal(raw[to:]) != nil {
		return false
	}
	n.Status.Images = d.images
	return true
}

// run returns where the entries of field num begin and end in the message b: -1 and -1 if it has
// none. ok is false for bytes that are no message, a group (the generated code skips groups in
// ways of its own), an entry of num that is not length-delimited, and entries of num apart.
func run(b []byte, num protowire.Number) (from, to int, ok bool) {
	from, to = -1, -1
	for at := 0; at < len(b); {
		n, typ, tag := protowire.ConsumeTag(b[at:])
		if tag < 0 || typ == protowire.StartGroupType || typ == protowire.EndGroupType {
			return -1, -1, false
		}
		size := protowire.ConsumeFieldValue(n, typ, b[at+tag:])
		if size < 0 {
			return -1, -1, false
		}
		next := at + tag + size
		if n == num {
			if typ != protowire.BytesType || (from >= 0 && to != at) {
				return -1, -1, false
			}
			if from < 0 {
				from = at
			}
			to = next
		}
		at = next
	}
	return from, to, true
}
