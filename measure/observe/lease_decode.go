package observe

import (
	"errors"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"fakelet.dev/fakelet/internal/leancodec"
	"fakelet.dev/fakelet/internal/protofield"
)

// newLeaseCodecs returns client-go's protobuf codecs with a decoder of Leases that reads only what
// the Lease watch compares (name, namespace, uid, resourceVersion and renewTime, and the
// initial-events-end annotation of a streaming list's bookmark), from the fields' bytes: the watch
// sees every renewal of the fleet, and client-go's decoding of each Lease whole, its managedFields
// included, was most of the watch's cost.
func newLeaseCodecs() leancodec.Codecs {
	return leancodec.New(leaseKind, "fakelet-lease-protobuf", func(raw []byte) (runtime.Object, error) {
		l, err := decodeLease(raw)
		if err != nil {
			return nil, err
		}
		return l, nil
	})
}

var leaseKind = coordinationv1.SchemeGroupVersion.WithKind("Lease")

// The fields read, from k8s.io/apimachinery's and k8s.io/api's generated.proto.
const (
	leaseMetadata   = 1 // Lease.metadata
	leaseSpec       = 2 // Lease.spec
	metaName        = 1 // ObjectMeta.name
	metaNamespace   = 3
	metaUID         = 5
	metaRV          = 6
	metaAnnotations = 12
	specRenewTime   = 4 // LeaseSpec.renewTime, a MicroTime
	timeSeconds     = 1 // MicroTime.seconds
	timeNanos       = 2
)

var errBadLease = errors.New("undecodable protobuf Lease")

// decodeLease reads a Lease's name, namespace, uid, resourceVersion, renewTime and the
// initial-events-end annotation.
func decodeLease(b []byte) (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{}
	err := eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case leaseMetadata:
			return decodeMeta(v, &l.ObjectMeta)
		case leaseSpec:
			return eachField(v, func(num protowire.Number, v []byte) error {
				if num != specRenewTime {
					return nil
				}
				t, err := decodeMicroTime(v)
				l.Spec.RenewTime = &t
				return err
			})
		}
		return nil
	})
	return l, err
}

func decodeMeta(b []byte, m *metav1.ObjectMeta) error {
	return eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case metaName:
			m.Name = string(v)
		case metaNamespace:
			m.Namespace = leaseNamespace
			if string(v) != leaseNamespace {
				m.Namespace = string(v)
			}
		case metaUID:
			m.UID = types.UID(v)
		case metaRV:
			m.ResourceVersion = string(v)
		case metaAnnotations:
			key, value, err := protofield.MapEntry(v, errBadLease)
			if err != nil {
				return err
			}
			if string(key) == metav1.InitialEventsAnnotationKey {
				m.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: string(value)}
			}
		}
		return nil
	})
}

// decodeMicroTime reads a MicroTime's seconds and nanoseconds, its two varint fields.
func decodeMicroTime(b []byte) (metav1.MicroTime, error) {
	var sec, nsec int64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return metav1.MicroTime{}, errBadLease
		}
		b = b[n:]
		if typ != protowire.VarintType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return metav1.MicroTime{}, errBadLease
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return metav1.MicroTime{}, errBadLease
		}
		b = b[n:]
		switch num {
		case timeSeconds:
			sec = int64(v)
		case timeNanos:
			nsec = int64(int32(v))
		}
	}
	return metav1.NewMicroTime(time.Unix(sec, nsec).Local()), nil
}

func eachField(b []byte, f func(protowire.Number, []byte) error) error {
	return protofield.Each(b, f, errBadLease)
}
