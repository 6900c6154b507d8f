package transport

import (
	"context"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"fakelet.dev/fakelet/agent"
)

// leanCore hands agents a core client whose status patches of a Node (the kubelet's
// PatchNodeStatus, the agent's heartbeat patch) go through the heartbeatSender, as leanCoordination
// does for lease renewals; everything else stays client-go's.
type leanCore struct {
	corev1client.CoreV1Interface
	s      *heartbeatSender
	prefix string // the path of the nodes collection, ending in "/"
}

func newLeanCore(s *heartbeatSender, core corev1client.CoreV1Interface) leanCore {
	u := core.RESTClient().Patch(types.StrategicMergePatchType).Resource("nodes").URL()
	return leanCore{core, s, u.EscapedPath() + "/"}
}

func (c leanCore) Nodes() corev1client.NodeInterface {
	return leanNodes{c.CoreV1Interface.Nodes(), c}
}

type leanNodes struct {
	corev1client.NodeInterface
	c leanCore
}

var nodesResource = schema.GroupResource{Resource: "nodes"}

// nodeTypeMeta is what the protobuf envelope of a Node names.
var nodeTypeMeta = runtime.TypeMeta{APIVersion: "v1", Kind: "Node"}

func (n leanNodes) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Node, error) {
	if pt != types.StrategicMergePatchType || len(subresources) != 1 || subresources[0] != "status" || !isZeroPatch(opts) {
		return n.NodeInterface.Patch(ctx, name, pt, data, opts, subresources...)
	}
	out := &corev1.Node{}
	if err := n.c.s.send(ctx, http.MethodPatch, n.c.prefix+name+"/status", string(pt), data, nodesResource, name, protoNode{out, agent.TemplateFrom(ctx)}); err != nil {
		return &corev1.Node{}, err // as client-go's generated client returns
	}
	return out, nil
}

func isZeroPatch(o metav1.PatchOptions) bool {
	return len(o.DryRun) == 0 && o.Force == nil && o.FieldManager == "" && o.FieldValidation == "" && o.TypeMeta == (metav1.TypeMeta{})
}

// protoNode is the Node a status patch's answer decodes into, with the images the patch sent (its
// agent's template's) shared rather than decoded again when the answer spells them alike.
type protoNode struct {
	*corev1.Node
	tmpl *agent.Template // nil: decode them
}

func (n protoNode) object() runtime.Object     { return n.Node }
func (protoNode) typeMeta() runtime.TypeMeta   { return nodeTypeMeta }
func (n protoNode) Unmarshal(raw []byte) error { return n.tmpl.UnmarshalNode(n.Node, raw) }
