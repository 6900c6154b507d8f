package agent

import corev1 "k8s.io/api/core/v1"

// UnmarshalNode decodes the protobuf Node raw into n, replacing what n held, as n.Unmarshal would
// a zero Node, except that images equal to the template's, byte for byte, are not decoded: n gets
// the template's list itself, as Compact would leave it. Every answer and watch event of a fleet's
// Nodes spells the same images, most of a Node's bytes and of what decoding it allocates. A nil
// Template decodes the images too.
func (t *Template) UnmarshalNode(n *corev1.Node, raw []byte) error {
	if t == nil {
		*n = corev1.Node{}
		return n.Unmarshal(raw)
	}
	return t.nodes.Unmarshal(n, raw)
}
