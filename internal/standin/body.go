package standin

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"fakelet.dev/fakelet/internal/protofield"
)

// decodeBody reads a request's object: protobuf or JSON, of r's kind.
func decodeBody(req *http.Request, r *resource) (runtime.Object, error) {
	body, err := readBody(req, maxBody+1)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return decode(body, r)
}

// decode is a body's object, the body read up to one byte over maxBody.
func decode(body []byte, r *resource) (runtime.Object, error) {
	if len(body) > maxBody {
		return nil, apierrors.NewRequestEntityTooLargeError("limit is 3145728")
	}
	if obj, ok := decodeProtobuf(body, r); ok {
		return obj, nil
	}
	obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if *gvk != r.gvk() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is a %s, not a %s", gvk, r.gvk()))
	}
	return obj, nil
}

// readBody is io.ReadAll(io.LimitReader(req.Body, limit)) in a buffer of the body's declared length,
// so that a body is read in one call and one allocation, not grown from 512 bytes.
func readBody(req *http.Request, limit int64) ([]byte, error) {
	size := int64(512)
	if n := req.ContentLength; n > 0 {
		size = n + 1 // and room to be told it ended
	}
	b := make([]byte, 0, min(size, limit))
	for int64(len(b)) < limit {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := req.Body.Read(b[len(b):min(int64(cap(b)), limit)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// decodeProtobuf decodes a protobuf body of r's kind as the universal deserializer would, without
// its copies of the envelope's fields; ok is false for anything else (JSON, another kind, a body
// that does not parse), which the deserializer then decodes or refuses as it always has.
func decodeProtobuf(body []byte, r *resource) (runtime.Object, bool) {
	apiVersion, kind, raw, ok := protofield.Envelope(body)
	if !ok || string(apiVersion) != r.apiVersion || string(kind) != r.kind {
		return nil, false
	}
	obj, err := newObject(r)
	if err != nil {
		return nil, false
	}
	if err := obj.(unmarshaler).Unmarshal(raw); err != nil {
		return nil, false
	}
	r.setKind(obj)
	return obj, true
}

type unmarshaler interface {
	Unmarshal([]byte) error
}

// deleteOptions reads a DELETE's optional body.
func deleteOptions(req *http.Request) (*metav1.DeleteOptions, error) {
	body, err := readBody(req, maxBody)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	opts := &metav1.DeleteOptions{}
	if len(body) == 0 {
		return opts, nil
	}
	if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, opts); err != nil {
		if jerr := json.Unmarshal(body, opts); jerr != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	}
	return opts, nil
}
