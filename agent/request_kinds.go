package agent

// RequestKind is one kind of request agents send, as the apiserver's authorizer sees it. With
// --identity fleet the fleet's own credential sends them, and must be allowed each: the fleet's
// preflight and the deploy RBAC derive what they check and grant from Requests, and
// TestRequestsAreWhatAgentsSend holds this table to what agents of each footprint send, with and
// without pods, so that the three cannot drift apart.
type RequestKind struct {
	Verb, Group, Resource, Subresource string
	Scope                              Scope
	// Kubelet: sent in the kubelet footprint only; the others are sent in both.
	Kubelet bool
	// Pods: sent only for pods bound to the node.
	Pods bool
	// For says why an agent sends it.
	For string
}

// Scope is the namespace a kind of request is sent in.
type Scope uint8

const (
	// ScopeCluster is no namespace: a cluster-scoped resource, or a collection watched across every
	// namespace (a kubelet watches its pods and the Services of the whole cluster).
	ScopeCluster Scope = iota
	// ScopeLeases is LeaseNamespace.
	ScopeLeases
	// ScopeNodeEvents is metav1.NamespaceDefault, where a kubelet records the Events of its Node.
	ScopeNodeEvents
	// ScopePods is the namespace of the node's pods.
	ScopePods
)

const (
	groupCoordination = "coordination.k8s.io"
	groupStorage      = "storage.k8s.io"
)

// requestKinds is every kind of request an agent sends (request.go, pod_request.go, csinode.go,
// events.go, and the watches of watches.go and object_watches.go). The fleet's pods reference one
// ConfigMap, kube-root-ca.crt, through the service account token volume the ServiceAccount
// admission plugin adds; a pod that referenced Secrets (a service account with image pull secrets)
// would have them watched too, which no fleet's pod does.
var requestKinds = []RequestKind{
	{Verb: "create", Resource: "nodes", For: "kubelets register their Nodes"},
	{Verb: "get", Resource: "nodes", For: "kubelets read their Nodes"},
	{Verb: "patch", Resource: "nodes", Subresource: "status", For: "kubelets patch their node status"},
	{Verb: "get", Group: groupCoordination, Resource: "leases", Scope: ScopeLeases, For: "kubelets read their Leases"},
	{Verb: "create", Group: groupCoordination, Resource: "leases", Scope: ScopeLeases, For: "kubelets create their Leases"},
	{Verb: "update", Group: groupCoordination, Resource: "leases", Scope: ScopeLeases, For: "kubelets renew their Leases"},
	{Verb: "patch", Resource: "pods", Subresource: "status", Scope: ScopePods, Pods: true, For: "kubelets report their pods"},
	{Verb: "delete", Resource: "pods", Scope: ScopePods, Pods: true, For: "kubelets finish the deletion of their pods"},
	// The heartbeat footprint's agents GET a pod only after someone else changed its status.
	{Verb: "get", Resource: "pods", Scope: ScopePods, Pods: true, For: "kubelets read a pod before each status patch"},

	{Verb: "watch", Resource: "nodes", Kubelet: true, For: "kubelets watch their Nodes"},
	{Verb: "watch", Resource: "services", Kubelet: true, For: "kubelets watch Services"},
	{Verb: "watch", Resource: "pods", Kubelet: true, For: "kubelets watch their pods"},
	{Verb: "watch", Group: "node.k8s.io", Resource: "runtimeclasses", Kubelet: true, For: "kubelets watch RuntimeClasses"},
	{Verb: "watch", Group: groupStorage, Resource: "csidrivers", Kubelet: true, For: "kubelets watch CSIDrivers"},
	{Verb: "watch", Group: "certificates.k8s.io", Resource: "podcertificaterequests", Kubelet: true, For: "kubelets watch their PodCertificateRequests"},
	{Verb: "get", Group: groupStorage, Resource: "csinodes", Kubelet: true, For: "kubelets read their CSINodes"},
	{Verb: "create", Group: groupStorage, Resource: "csinodes", Kubelet: true, For: "kubelets create their CSINodes"},
	{Verb: "create", Resource: "events", Scope: ScopeNodeEvents, Kubelet: true, For: "kubelets record their Nodes' Events"},
	{Verb: "patch", Resource: "events", Scope: ScopeNodeEvents, Kubelet: true, For: "kubelets count their Nodes' repeated Events"},
	{Verb: "watch", Resource: "configmaps", Scope: ScopePods, Kubelet: true, Pods: true, For: "kubelets watch the kube-root-ca.crt their pods' token volumes read"},
	{Verb: "create", Resource: "events", Scope: ScopePods, Kubelet: true, Pods: true, For: "kubelets record their containers' Events"},
	{Verb: "patch", Resource: "events", Scope: ScopePods, Kubelet: true, Pods: true, For: "kubelets count their containers' repeated Events"},
	{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Scope: ScopePods, Kubelet: true, Pods: true, For: "kubelets request their pods' service account tokens"},
}

// Requests returns the kinds of request agents of footprint fp send: with pods, those for the pods
// bound to their nodes too.
func Requests(fp Footprint, pods bool) []RequestKind {
	var out []RequestKind
	for _, k := range requestKinds {
		if (!k.Kubelet || fp.Kubelet()) && (!k.Pods || pods) {
			out = append(out, k)
		}
	}
	return out
}
