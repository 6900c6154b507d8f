package transport

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/protofield"
)

// leaseWriter sends a kubelet's lease renewal, the fleet's one request per node every 10 s, without
// client-go's request builder: its URL assembly, parameter codec, retry bookkeeping and content
// negotiation were a fifth of the fleet's CPU. It sends what client-go sends (TestLeasePutMatchesClientGo
// compares the wire and the results) through the fleet's heartbeatSender.
type leaseWriter struct {
	s      *heartbeatSender
	prefix string // the path of the leases collection of kube-node-lease, ending in "/"
}

// maxRetries is client-go's rest.Request maxRetries.
const maxRetries = 10

var leasesResource = schema.GroupResource{Group: coordinationv1.GroupName, Resource: "leases"}

func newLeaseWriter(s *heartbeatSender, coord coordinationv1client.CoordinationV1Interface) *leaseWriter {
	u := coord.RESTClient().Put().Namespace(agent.LeaseNamespace).Resource("leases").URL()
	return &leaseWriter{s: s, prefix: u.EscapedPath() + "/"}
}

// leaseTypeMeta is what the protobuf envelope of a Lease names.
var leaseTypeMeta = runtime.TypeMeta{APIVersion: coordinationv1.SchemeGroupVersion.String(), Kind: "Lease"}

// update PUTs lease and returns the server's copy.
func (w *leaseWriter) update(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	body, err := encodeLease(lease)
	if err != nil {
		return nil, err
	}
	out := &coordinationv1.Lease{}
	if err := w.s.send(ctx, http.MethodPut, w.prefix+lease.Name, Protobuf, body, leasesResource, lease.Name, protoLease{out}); err != nil {
		return nil, err
	}
	return out, nil
}

// renew is update without the wait: done gets what update would return, on the goroutine the
// answer arrives on (heartbeatSender.sendAsync). It returns false, having sent nothing, where only
// update can send.
func (w *leaseWriter) renew(ctx context.Context, lease *coordinationv1.Lease, done func(*coordinationv1.Lease, error)) bool {
	if w.s.wire == nil {
		return false
	}
	body, raw, err := encodeLeaseRaw(lease)
	if err != nil {
		done(&coordinationv1.Lease{}, err)
		return true
	}
	out := &coordinationv1.Lease{}
	answer := answerLease{out: out, sent: lease, sentRaw: raw}
	return w.s.sendAsync(ctx, http.MethodPut, w.prefix+lease.Name, Protobuf, body, leasesResource, lease.Name, answer, func(err error) {
		if err != nil {
			done(&coordinationv1.Lease{}, err) // as client-go's generated client returns
			return
		}
		done(out, nil)
	})
}

// encodeLease is the body client-go's protobuf serializer writes for lease, made in one buffer.
func encodeLease(lease *coordinationv1.Lease) ([]byte, error) {
	body, _, err := encodeLeaseRaw(lease)
	return body, err
}

// encodeLeaseRaw is encodeLease, and the Lease's own bytes within the body.
func encodeLeaseRaw(lease *coordinationv1.Lease) (body, raw []byte, err error) {
	return protofield.Encode(leaseTypeMeta.APIVersion, leaseTypeMeta.Kind, lease)
}

// protoObject is an object decode fills: from its protobuf envelope directly when the answer is
// the expected kind, else through the scheme's decoders.
type protoObject interface {
	object() runtime.Object
	typeMeta() runtime.TypeMeta
	Unmarshal([]byte) error
}

type protoLease struct{ *coordinationv1.Lease }

func (l protoLease) object() runtime.Object     { return l.Lease }
func (protoLease) typeMeta() runtime.TypeMeta   { return leaseTypeMeta }
func (l protoLease) Unmarshal(raw []byte) error { return l.Lease.Unmarshal(raw) }

// decode turns an answer into what client-go's Do().Into() returns: the object of a 2xx answer,
// the Status of an error answer as its *StatusError, or the generic error for the status code.
func decode(x exchange, method string, gr schema.GroupResource, name string, out protoObject) error {
	body := x.body
	ok := x.code >= http.StatusOK && x.code <= http.StatusPartialContent
	if ok {
		if raw, ok := rawOf(body, out.typeMeta()); ok {
			return out.Unmarshal(raw)
		}
	}
	contentType := x.contentType
	if contentType == "" {
		contentType = Protobuf
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	info, known := runtime.SerializerInfoForMediaType(scheme.Codecs.WithoutConversion().SupportedMediaTypes(), mediaType)
	if !ok {
		retry, _ := x.retryAfterSeconds()
		message := "unknown"
		if strings.HasPrefix(mediaType, "text/") || x.contentType == "" {
			message = strings.TrimSpace(string(body[:min(len(body), maxUnstructuredResponseTextBytes)]))
		}
		generic := apierrors.NewGenericServerResponse(x.code, method, gr, name, message, retry, true)
		if !known || len(body) == 0 {
			return generic
		}
		got, _, err := runtime.WithoutVersionDecoder{Decoder: info.Serializer}.Decode(body, &schema.GroupVersionKind{Version: "v1"}, nil)
		if status, isStatus := got.(*metav1.Status); err == nil && isStatus && status.Status == metav1.StatusFailure {
			return apierrors.FromObject(status)
		}
		return generic
	}
	if !known {
		return fmt.Errorf("serializer for %s doesn't exist", contentType)
	}
	if len(body) == 0 {
		return fmt.Errorf("0-length response with status code: %d and content type: %s", x.code, contentType)
	}
	got, _, err := runtime.WithoutVersionDecoder{Decoder: info.Serializer}.Decode(body, nil, out.object())
	if err != nil {
		return err
	}
	if status, isStatus := got.(*metav1.Status); isStatus && status.Status != metav1.StatusSuccess {
		return apierrors.FromObject(status)
	}
	if got != out.object() {
		return fmt.Errorf("the answer to a %s of %s is not a %s", method, gr.Resource, out.typeMeta().Kind)
	}
	return nil
}

// rawOf returns the object's bytes of a body's envelope, read in place, if its type is tm; false if
// it is another's, or not an envelope.
func rawOf(body []byte, tm runtime.TypeMeta) ([]byte, bool) {
	apiVersion, kind, raw, ok := protofield.Envelope(body)
	return raw, ok && string(apiVersion) == tm.APIVersion && string(kind) == tm.Kind
}

// maxUnstructuredResponseTextBytes is client-go's cap on the text of an error answer it quotes.
const maxUnstructuredResponseTextBytes = 2048

// leanCoordination hands agents a Leases client whose plain Update is a leaseWriter's.
type leanCoordination struct {
	coordinationv1client.CoordinationV1Interface
	w *leaseWriter
}

func (c leanCoordination) Leases(namespace string) coordinationv1client.LeaseInterface {
	return leanLeases{c.CoordinationV1Interface.Leases(namespace), c.w}
}

type leanLeases struct {
	coordinationv1client.LeaseInterface
	w *leaseWriter
}

func (l leanLeases) Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if lease.Namespace != agent.LeaseNamespace || !isZero(opts) {
		return l.LeaseInterface.Update(ctx, lease, opts)
	}
	out, err := l.w.update(ctx, lease)
	if err != nil {
		return &coordinationv1.Lease{}, err // as client-go's generated client returns
	}
	return out, nil
}

// RenewLease implements agent.LeaseRenewer: Update's PUT of a kube-node-lease Lease, answered on
// the goroutine the answer arrives on.
func (c leanCoordination) RenewLease(ctx context.Context, lease *coordinationv1.Lease, done func(*coordinationv1.Lease, error)) bool {
	if lease.Namespace != agent.LeaseNamespace {
		return false
	}
	return c.w.renew(ctx, lease, done)
}

func isZero(o metav1.UpdateOptions) bool {
	return len(o.DryRun) == 0 && o.FieldManager == "" && o.FieldValidation == "" && o.TypeMeta == (metav1.TypeMeta{})
}
