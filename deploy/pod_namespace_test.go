package deploy

import (
	"slices"
	"testing"

	"fakelet.dev/fakelet/fleetname"
)

// TestPodGrantsStayInThePodsNamespace: deploy's RBAC grants pods, ConfigMaps and tokens in the
// fleet's own pod namespace only, never in default or any namespace that holds someone else's
// Secrets, and tokens of the pods' ServiceAccount only. Before, the ServiceAccount could create pods in
// default mounting any Secret there, bind them to a fleet node and read the Secret as that node, and
// create a token for any ServiceAccount of default.
func TestPodGrantsStayInThePodsNamespace(t *testing.T) {
	if fleetname.PodNamespace == "default" || fleetname.PodNamespace == "kube-system" {
		t.Fatalf("the fleet's pods are in %s", fleetname.PodNamespace)
	}
	// bound-pods.yaml and workloads.yaml read pods in every namespace (the heartbeat footprint's
	// watch of bound pods, the report's of the workloads' pods, whose namespace has no name before
	// the run): reads, which their own files grant apart.
	readsPods := map[string]bool{"rbac/bound-pods.yaml": true, "rbac/workloads.yaml": true}
	for _, file := range []string{"rbac/fakelet.yaml", "rbac/pods.yaml", "rbac/fleet-identity.yaml", "rbac/fleet-identity-pods.yaml",
		"rbac/bound-pods.yaml", "rbac/workloads.yaml"} {
		for _, o := range readObjects(t, file) {
			for _, r := range o.Rules {
				for _, res := range r.Resources {
					switch res {
					case "pods", "pods/status", "configmaps", "secrets", "serviceaccounts", "serviceaccounts/token":
					default:
						continue
					}
					if o.Kind == "ClusterRole" && readsPods[file] && res == "pods" && slices.Equal(r.Verbs, []string{"list", "watch"}) {
						continue
					}
					if o.Kind == "ClusterRole" && !slices.Equal(r.Verbs, []string{"watch"}) {
						// A kubelet watches its pods across namespaces; nothing else of these may
						// span them.
						t.Errorf("%s: ClusterRole %s grants %v %s in every namespace", file, o.Metadata.Name, r.Verbs, res)
					}
					if o.Kind == "Role" && o.Metadata.Namespace != fleetname.PodNamespace {
						t.Errorf("%s: Role %s grants %v %s in namespace %s, not the pods' %s", file, o.Metadata.Name, r.Verbs, res, o.Metadata.Namespace, fleetname.PodNamespace)
					}
					if res == "serviceaccounts/token" && !slices.Equal(r.ResourceNames, []string{fleetname.PodServiceAccount}) {
						t.Errorf("%s: %s %s grants tokens of ServiceAccounts %q, want only the pods' %s", file, o.Kind, o.Metadata.Name, r.ResourceNames, fleetname.PodServiceAccount)
					}
					if res == "secrets" || res == "serviceaccounts" {
						t.Errorf("%s: %s %s grants %v %s", file, o.Kind, o.Metadata.Name, r.Verbs, res)
					}
				}
			}
		}
	}
}
