package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/pause"
)

// leaseWriter sends a kubelet's lease renewal, the fleet's one request per node every 10 s, without
// client-go's request builder: its URL assembly, parameter codec, retry bookkeeping and content
// negotiation were a fifth of the fleet's CPU. It sends what client-go sends (TestLeasePutMatchesClientGo
// compares the wire and the results), through the same http.Client, so the same authentication,
// impersonation and byte counting, and it retries an answer that carries Retry-After (a 429 of API
// Priority and Fairness, a 5xx) as client-go does: up to 10 times, within the client timeout.
type leaseWriter struct {
	client  *http.Client
	prefix  string // the leases collection of kube-node-lease, ending in "/"
	query   string // "?timeout=10s", as client-go adds its client timeout to every URL
	timeout time.Duration
	accept  string
	agent   string // User-Agent: set here, client-go's wrapper would copy the request to set it
}

// maxRetries is client-go's rest.Request maxRetries.
const maxRetries = 10

var leasesResource = schema.GroupResource{Group: coordinationv1.GroupName, Resource: "leases"}

func newLeaseWriter(client *http.Client, coord coordinationv1client.CoordinationV1Interface, cfg *rest.Config) *leaseWriter {
	u := coord.RESTClient().Put().Namespace(agent.LeaseNamespace).Resource("leases").URL()
	query := ""
	if u.RawQuery != "" {
		query = "?" + u.RawQuery
	}
	u.RawQuery = ""
	return &leaseWriter{client: client, prefix: u.String() + "/", query: query, timeout: cfg.Timeout,
		accept: cfg.AcceptContentTypes, agent: cfg.UserAgent}
}

// leaseTypeMeta is what the protobuf envelope of a Lease names.
var leaseTypeMeta = runtime.TypeMeta{APIVersion: coordinationv1.SchemeGroupVersion.String(), Kind: "Lease"}

// protobufMagic starts every Kubernetes protobuf body.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// update PUTs lease and returns the server's copy.
func (w *leaseWriter) update(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	body, err := encodeLease(lease)
	if err != nil {
		return nil, err
	}
	if w.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.timeout)
		defer cancel()
	}
	url := w.prefix + lease.Name + w.query
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header = http.Header{"Accept": {w.accept}, "Content-Type": {protobuf}}
		if w.agent != "" {
			req.Header["User-Agent"] = []string{w.agent}
		}
		resp, err := w.client.Do(req)
		if err != nil {
			return nil, err
		}
		buf := bodies.Get().(*bytes.Buffer)
		buf.Reset()
		_, err = buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if err != nil {
			bodies.Put(buf)
			return nil, fmt.Errorf("unexpected error when reading response body. Please retry. Original error: %w", err)
		}
		if wait, ok := retryAfter(resp); ok && attempt < maxRetries {
			bodies.Put(buf)
			if err := pause.For(ctx, wait); err != nil {
				return nil, err
			}
			continue
		}
		out, err := decodeLease(resp, buf.Bytes(), lease.Name)
		bodies.Put(buf)
		return out, err
	}
}

func encodeLease(lease *coordinationv1.Lease) ([]byte, error) {
	raw, err := lease.Marshal()
	if err != nil {
		return nil, err
	}
	u := runtime.Unknown{TypeMeta: leaseTypeMeta, Raw: raw}
	body := make([]byte, len(protobufMagic)+u.Size())
	copy(body, protobufMagic)
	if _, err := u.MarshalToSizedBuffer(body[len(protobufMagic):]); err != nil {
		return nil, err
	}
	return body, nil
}

// retryAfter says whether client-go would send the request again, and after how long: a 429 or 5xx
// answer with a Retry-After of whole seconds.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
		return 0, false
	}
	s, ok := retryAfterSeconds(resp)
	return time.Duration(s) * time.Second, ok
}

func retryAfterSeconds(resp *http.Response) (int, bool) {
	i, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	return i, err == nil
}

// decodeLease turns an answer into what client-go's Do().Into() returns: the Lease of a 2xx answer,
// the Status of an error answer as its *StatusError, or the generic error for the status code.
func decodeLease(resp *http.Response, body []byte, name string) (*coordinationv1.Lease, error) {
	ok := resp.StatusCode >= http.StatusOK && resp.StatusCode <= http.StatusPartialContent
	if ok && bytes.HasPrefix(body, protobufMagic) {
		var u runtime.Unknown
		if err := u.Unmarshal(body[len(protobufMagic):]); err == nil && u.TypeMeta == leaseTypeMeta {
			out := &coordinationv1.Lease{}
			if err := out.Unmarshal(u.Raw); err != nil {
				return nil, err
			}
			return out, nil
		}
	}
	contentType := resp.Header.Get("Content-Type")
	if contentType == "" {
		contentType = protobuf
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	info, known := runtime.SerializerInfoForMediaType(scheme.Codecs.WithoutConversion().SupportedMediaTypes(), mediaType)
	if !ok {
		retry, _ := retryAfterSeconds(resp)
		message := "unknown"
		if strings.HasPrefix(mediaType, "text/") || resp.Header.Get("Content-Type") == "" {
			message = strings.TrimSpace(string(body[:min(len(body), maxUnstructuredResponseTextBytes)]))
		}
		generic := apierrors.NewGenericServerResponse(resp.StatusCode, http.MethodPut, leasesResource, name, message, retry, true)
		if !known || len(body) == 0 {
			return nil, generic
		}
		out, _, err := runtime.WithoutVersionDecoder{Decoder: info.Serializer}.Decode(body, &schema.GroupVersionKind{Version: "v1"}, nil)
		if status, isStatus := out.(*metav1.Status); err == nil && isStatus && status.Status == metav1.StatusFailure {
			return nil, apierrors.FromObject(status)
		}
		return nil, generic
	}
	if !known {
		return nil, fmt.Errorf("serializer for %s doesn't exist", contentType)
	}
	if len(body) == 0 {
		return nil, fmt.Errorf("0-length response with status code: %d and content type: %s", resp.StatusCode, contentType)
	}
	out := &coordinationv1.Lease{}
	got, _, err := runtime.WithoutVersionDecoder{Decoder: info.Serializer}.Decode(body, nil, out)
	if err != nil {
		return nil, err
	}
	if status, isStatus := got.(*metav1.Status); isStatus && status.Status != metav1.StatusSuccess {
		return nil, apierrors.FromObject(status)
	}
	if got != out {
		return nil, errors.New("the answer to a lease update is not a Lease")
	}
	return out, nil
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

func isZero(o metav1.UpdateOptions) bool {
	return len(o.DryRun) == 0 && o.FieldManager == "" && o.FieldValidation == "" && o.TypeMeta == (metav1.TypeMeta{})
}
