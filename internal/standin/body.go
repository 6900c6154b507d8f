package standin

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
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
	if len(body) < len(protobufMagic) || string(body[:len(protobufMagic)]) != string(protobufMagic) {
		return nil, false
	}
	apiVersion, kind, raw, ok := parseUnknown(body[len(protobufMagic):])
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

// parseUnknown reads a runtime.Unknown's typeMeta and raw fields in place. ok is false for a
// message with any field runtime.Unknown does not have, or of a wire type it does not take.
func parseUnknown(b []byte) (apiVersion, kind, raw []byte, ok bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			return nil, nil, nil, false
		}
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, nil, nil, false
		}
		b = b[n:]
		switch num {
		case 1: // typeMeta
			if apiVersion, kind, ok = parseTypeMeta(v); !ok {
				return nil, nil, nil, false
			}
		case 2:
			raw = v
		case 3, 4: // contentEncoding, contentType: the deserializer reads neither
		default:
			return nil, nil, nil, false
		}
	}
	return apiVersion, kind, raw, true
}

func parseTypeMeta(b []byte) (apiVersion, kind []byte, ok bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			return nil, nil, false
		}
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, nil, false
		}
		b = b[n:]
		switch num {
		case 1:
			apiVersion = v
		case 2:
			kind = v
		default:
			return nil, nil, false
		}
	}
	return apiVersion, kind, true
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
