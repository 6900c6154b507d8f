package agent

import (
	"k8s.io/apimachinery/pkg/fields"
)

// kubeletReflectors returns the reflectors a v1.37 kubelet starts with client-go's default
// (WatchListClient) behaviour, each with its selector (pkg/kubelet/kubelet.go, config/apiserver.go):
//   - its own Node, for the node lister (NewMainKubelet);
//   - the Services that are not headless, for the pods' environment variables;
//   - the pods bound to it, the apiserver pod source (config.NewSourceApiserver), whose ListWatch
//     on the REST client sends no client timeout beside timeoutSeconds;
//   - RuntimeClasses (runtimeclass.NewManager);
//   - CSIDrivers, for the CSI volume plugin (volume_host.go);
//   - its PodCertificateRequests (podcertificate.NewIssuingManager; its feature gate is on by default).
//
// The configmap and secret managers' watches, one per ConfigMap and Secret the node's pods
// reference, open and close with the pods (object_watches.go).
func (a *Agent) kubeletReflectors(r *run) []*reflector {
	name := fields.OneTermEqualSelector("metadata.name", a.name).String()
	onNode := fields.OneTermEqualSelector("spec.nodeName", a.name).String()
	notHeadless := fields.OneTermNotEqualSelector("spec.clusterIP", "None").String()
	pods := newReflector(r, "pods", "/api/v1/pods", onNode, reflectorMinWatchTimeout, false)
	pods.pods = true
	return []*reflector{
		newReflector(r, "nodes", "/api/v1/nodes", name, reflectorMinWatchTimeout, true),
		newReflector(r, "services", "/api/v1/services", notHeadless, reflectorMinWatchTimeout, true),
		pods,
		newReflector(r, "runtimeclasses", "/apis/node.k8s.io/v1/runtimeclasses", "", reflectorMinWatchTimeout, true),
		newReflector(r, "csidrivers", "/apis/storage.k8s.io/v1/csidrivers", "", reflectorMinWatchTimeout, true),
		newReflector(r, "podcertificaterequests", "/apis/certificates.k8s.io/v1/podcertificaterequests", onNode, reflectorMinWatchTimeout, true),
	}
}
