package fleet

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/leancodec"
)

var nodeKind = corev1.SchemeGroupVersion.WithKind("Node")

// nodeListWatch lists and watches the Nodes of selector (the fleet's) through client. The watch
// sees every change of every Node of the fleet, and client-go's decoding of each event copied the
// Node out of it twice and decoded it whole, its 50 images above all, the fleet's own that
// Template.Compact then throws away: over client's REST client, the watch's Nodes are decoded by
// tmpl (Template.UnmarshalNode), sharing its images, and its events without a copy (leancodec). Lists
// stay client-go's: a streaming list's Nodes come as events. A client without a REST client (the
// fake clientset of tests) lists and watches through its typed client.
func nodeListWatch(client kubernetes.Interface, tmpl *agent.Template, selector string) (*cache.ListWatch, error) {
	rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		nodes := client.CoreV1().Nodes()
		return selectedListWatch(selector, nodes.List, nodes.Watch), nil
	}
	codecs := leancodec.New(nodeKind, "fakelet-node-protobuf", func(raw []byte) (runtime.Object, error) {
		n := &corev1.Node{}
		if err := tmpl.UnmarshalNode(n, raw); err != nil {
			return nil, err
		}
		return n, nil
	})
	lean, err := codecs.Client(rc, corev1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	nodes := leancodec.Resource{Client: lean, Name: "nodes"}
	list := func(ctx context.Context, o metav1.ListOptions) (*corev1.NodeList, error) {
		l := &corev1.NodeList{}
		return l, nodes.List(ctx, o, l)
	}
	return selectedListWatch(selector, list, nodes.Watch), nil
}
