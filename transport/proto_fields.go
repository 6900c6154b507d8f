package transport

// The protobuf fields that the transport reads itself rather than through the generated code: a
// watch event's, as far as an agent needs it (watch_proto.go), and a renewal's answer
// (lease_answer.go); a body's envelope is internal/protofield's. From k8s.io/apimachinery's and
// k8s.io/api's generated.proto files.
const (
	watchEventType   = 1 // metav1.WatchEvent.type
	watchEventObject = 2 // metav1.WatchEvent.object, a RawExtension
	rawExtensionRaw  = 1 // runtime.RawExtension.raw

	objectMetadata = 1 // every object's metadata
	leaseSpec      = 2 // coordinationv1.Lease.spec

	metaName              = 1 // metav1.ObjectMeta.name
	metaGenerateName      = 2
	metaNamespace         = 3
	metaSelfLink          = 4
	metaUID               = 5
	metaRV                = 6
	metaGeneration        = 7
	metaCreationTimestamp = 8
	metaLabels            = 11
	metaAnnotations       = 12
	metaOwnerReferences   = 13
	metaFinalizers        = 14
	metaManagedFields     = 17

	specHolderIdentity       = 1 // coordinationv1.LeaseSpec.holderIdentity
	specLeaseDurationSeconds = 2
	specAcquireTime          = 3
	specRenewTime            = 4
	specLeaseTransitions     = 5
	specStrategy             = 6
	specPreferredHolder      = 7

	entryManager     = 1 // metav1.ManagedFieldsEntry.manager
	entryOperation   = 2
	entryAPIVersion  = 3
	entryTime        = 4
	entryFieldsType  = 6
	entryFieldsV1    = 7
	entrySubresource = 8
)
