package leancodec

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Client is a REST client of gv on rc's connections, credentials and rate limit that asks for
// protobuf and decodes it with c.
func (c Codecs) Client(rc *rest.RESTClient, gv schema.GroupVersion) (*rest.RESTClient, error) {
	apiPath := "/apis"
	if gv.Group == "" {
		apiPath = "/api"
	}
	return rest.NewRESTClient(rc.Get().AbsPath("/").URL(), rest.DefaultVersionedAPIPath(apiPath, gv), rest.ClientContentConfig{
		AcceptContentTypes: runtime.ContentTypeProtobuf, ContentType: runtime.ContentTypeProtobuf,
		GroupVersion: gv, Negotiator: runtime.NewClientNegotiator(c, gv),
	}, rc.GetRateLimiter(), rc.Client)
}

// Resource lists and watches a resource through a Client, as client-go's typed clients do.
type Resource struct {
	Client    *rest.RESTClient
	Namespace string // "": all, or a resource of the cluster's
	Name      string // "leases", "nodes"
	// Identity asks for answers not gzipped (Accept-Encoding: identity): kube-apiserver gzips a
	// streaming list's answer one event a gzip member, each compressed alone, for a client that
	// accepts it (client-go's transport asks by default), and a small object shrinks little.
	Identity bool
}

func (r Resource) request(o *metav1.ListOptions) *rest.Request {
	req := r.Client.Get().Namespace(r.Namespace).Resource(r.Name).VersionedParams(o, scheme.ParameterCodec)
	if o.TimeoutSeconds != nil {
		req = req.Timeout(time.Duration(*o.TimeoutSeconds) * time.Second)
	}
	if r.Identity {
		req = req.SetHeader("Accept-Encoding", "identity")
	}
	return req
}

// List lists into a list object of the resource's (a LeaseList, a NodeList).
func (r Resource) List(ctx context.Context, o metav1.ListOptions, into runtime.Object) error {
	return r.request(&o).Do(ctx).Into(into)
}

// Watch is a cache.WatchFuncWithContext.
func (r Resource) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	o.Watch = true
	return r.request(&o).Watch(ctx)
}
