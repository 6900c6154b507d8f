package deploy

import (
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"fakelet.dev/fakelet/fleetname"
)

// RBAC writes deploy/rbac/fakelet.yaml for a fleet of nodes named prefix-00000 up to nodes-1: the
// fleet's own grants (rbacHeader, baseRoles) and KubeletRBAC for those names. deploy/rbac/fakelet.yaml and
// deploy/kubernetes/base/rbac.yaml are RBAC(w, "fakelet", 1000); `fakelet rbac` prints it for other
// fleets.
func RBAC(w io.Writer, prefix string, nodes int) error {
	if err := writeFleetRoles(w, prefix, nodes, rbacHeader, baseRoles); err != nil {
		return err
	}
	if err := KubeletRBAC(w, prefix, 0, nodes); err != nil {
		return err
	}
	return ClaimsRBAC(w, prefix)
}

// FleetIdentityRBAC writes deploy/rbac/fleet-identity.yaml for the same fleet: what the agents send
// with --identity=fleet (fleetIdentityHeader, fleetIdentityRoles), and the patches of their Nodes' status and the renewals
// of their Leases for those names only. deploy/rbac/fleet-identity.yaml is
// FleetIdentityRBAC(w, "fakelet", 1000); `fakelet rbac --identity fleet` prints it for other fleets.
func FleetIdentityRBAC(w io.Writer, prefix string, nodes int) error {
	if err := writeFleetRoles(w, prefix, nodes, fleetIdentityHeader, fleetIdentityRoles); err != nil {
		return err
	}
	return byName(w, prefix, 0, nodes, fleetIdentityChunk)
}

// writeFleetRoles checks the fleet's names and writes header and the roles that grant what every
// fleet needs whatever its names, before the roles by name that follow them.
func writeFleetRoles(w io.Writer, prefix string, nodes int, header string, roles []role) error {
	if err := checkFleet(prefix, 0, nodes); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(header)
	writeRoles(&b, roles...)
	_, err := io.WriteString(w, b.String())
	return err
}

// KubeletChunk is how many user names one ClusterRole of KubeletRBAC holds: about 150 KB of YAML,
// within the 256 KB that `kubectl apply` can copy into its last-applied annotation. The names of
// Nodes and Leases of the same nodes are in roles of their own, for the same reason.
const KubeletChunk = 5000

// KubeletRBAC writes the roles, bound to the ServiceAccount fakelet/fakelet, that allow the
// impersonation of the users system:node:<name> for the nodes first to first+nodes-1 named with
// prefix, and of no other user, and the deletion of those nodes' Nodes and their Leases in
// kube-node-lease, and of no other Node or Lease. RBAC has no prefix match for resource names, so
// each name is listed; a role holds KubeletChunk of them and is named for its first and last node,
// so that the roles of two fleets, or of two sizes of one fleet, apply side by side.
func KubeletRBAC(w io.Writer, prefix string, first, nodes int) error {
	if err := checkFleet(prefix, first, nodes); err != nil {
		return err
	}
	return byName(w, prefix, first, nodes, kubeletChunk)
}

// ClaimsRBAC writes the Role, bound to the ServiceAccount fakelet/fakelet, that lets the fleet whose
// nodes are named with prefix renew and delete its runs' claims on their shards (fleetname.ClaimName),
// and no other Lease. RBAC writes it for its fleet; a fleet of another prefix whose kubelets are
// granted with KubeletRBAC alone needs it too.
func ClaimsRBAC(w io.Writer, prefix string) error {
	if err := checkFleet(prefix, 0, 1); err != nil {
		return err
	}
	var b strings.Builder
	claims(&b, prefix)
	_, err := io.WriteString(w, b.String())
	return err
}

// MaxClaimShards is the most shards a fleet may run in with the claims KubeletRBAC grants: its
// renewals and deletion are granted by name, for every split of the fleet into 1 to MaxClaimShards
// shards (deploy/kubernetes' large overlay has 10).
const MaxClaimShards = 16

// claims writes the Role that lets the fleet's credential renew and delete its runs' claims on their
// shards (fleetname.ClaimName), and no other Lease; creating one cannot be limited by name (rbacHeader, baseRoles).
func claims(b *strings.Builder, prefix string) {
	var names []string
	for n := 1; n <= MaxClaimShards; n++ {
		for i := range n {
			names = append(names, fleetname.ClaimName(prefix, fleetname.Shard{Index: i, Count: n}))
		}
	}
	role{
		comment: fmt.Sprintf("A run's claim on its shard of the fleet (a Lease fakelet-claim.%s.I-of-N): renewed and deleted by\nname, for fleets of 1 to %d shards, and no other Lease.", prefix, MaxClaimShards),
		name:    "fakelet-claims-" + prefix, namespace: "kube-node-lease",
		rules: []rule{{group: "coordination.k8s.io", resources: []string{"leases"}, verbs: []string{"update", "delete"}, names: names, listed: true}},
	}.write(b)
}

// checkFleet refuses a fleet whose names RBAC cannot list.
func checkFleet(prefix string, first, nodes int) error {
	if nodes <= 0 || first < 0 {
		return fmt.Errorf("kubelet RBAC for %d nodes from node %d: want one node or more, numbered from 0", nodes, first)
	}
	if errs := validation.IsDNS1123Label(prefix); len(errs) > 0 {
		return fmt.Errorf("kubelet RBAC: name prefix %q: %s", prefix, strings.Join(errs, "; "))
	}
	return nil
}

// byName writes chunk for the nodes first to first+nodes-1, KubeletChunk at a time.
func byName(w io.Writer, prefix string, first, nodes int, chunk func(b *strings.Builder, prefix string, lo, hi int)) error {
	for lo := first; lo < first+nodes; lo += KubeletChunk {
		hi := min(lo+KubeletChunk, first+nodes) - 1
		var b strings.Builder
		chunk(&b, prefix, lo, hi)
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// chunkName names the roles of kind for the nodes lo to hi: fakelet-KIND-PREFIX-LO-HI.
func chunkName(kind, prefix string, lo, hi int) string {
	return "fakelet-" + kind + "-" + fleetname.NodeName(prefix, lo) + strings.TrimPrefix(fleetname.NodeName(prefix, hi), prefix)
}

// kubeletChunk writes KubeletRBAC's roles for the nodes lo to hi.
func kubeletChunk(b *strings.Builder, prefix string, lo, hi int) {
	from, to := fleetname.NodeName(prefix, lo), fleetname.NodeName(prefix, hi)
	nodeRole(b, "Impersonation of the kubelets of nodes "+from+" to "+to+", and of no other user.",
		chunkName("kubelets", prefix, lo, hi), "", "users", "impersonate", "system:node:", prefix, lo, hi)
	nodeRole(b, "The cleanup and churn delete the Nodes "+from+" to "+to+", and no other Node.",
		chunkName("nodes", prefix, lo, hi), "", "nodes", "delete", "", prefix, lo, hi)
	nodeRole(b, "... and the Leases of those nodes, named as the nodes, and no other Lease.",
		chunkName("leases", prefix, lo, hi), "coordination.k8s.io", "leases", "delete", "", prefix, lo, hi)
}

// fleetIdentityChunk writes FleetIdentityRBAC's roles for the nodes lo to hi.
func fleetIdentityChunk(b *strings.Builder, prefix string, lo, hi int) {
	from, to := fleetname.NodeName(prefix, lo), fleetname.NodeName(prefix, hi)
	nodeRole(b, "The kubelets of nodes "+from+" to "+to+" patch their Nodes' status, and no other Node's.",
		chunkName("fleet-identity-nodes", prefix, lo, hi), "", "nodes/status", "patch", "", prefix, lo, hi)
	nodeRole(b, "... and renew their Leases, and no other Lease.",
		chunkName("fleet-identity-leases", prefix, lo, hi), "coordination.k8s.io", "leases", "update", "", prefix, lo, hi)
}

// nodeRole writes a role of one rule, verb on resource of group, for the names of the nodes lo to hi
// (each with namePrefix), bound to the ServiceAccount: a ClusterRole, or a Role in kube-node-lease
// for its Leases.
func nodeRole(b *strings.Builder, comment, name, group, resource, verb, namePrefix, prefix string, lo, hi int) {
	namespace := ""
	if resource == "leases" {
		namespace = "kube-node-lease"
	}
	names := make([]string, 0, hi-lo+1)
	for i := lo; i <= hi; i++ {
		names = append(names, namePrefix+fleetname.NodeName(prefix, i))
	}
	role{comment: comment, name: name, namespace: namespace,
		rules: []rule{{group: group, resources: []string{resource}, verbs: []string{verb}, names: names, listed: true}},
	}.write(b)
}

// rbacHeader and baseRoles are what every fleet's credential needs whatever its names, bound to the
// ServiceAccount fakelet/fakelet.
const rbacHeader = `# RBAC for running fakelet against a cluster (kind, kwokctl, or any other), bound to the ServiceAccount
# fakelet/fakelet; to bind a user instead, change the subjects. Least privilege for
# ` + "`fakelet run --identity=node`" + ` (the default), the rules fleet.RunPermissions checks: the fleet's own
# credential lists, watches and gets Nodes and Leases in kube-node-lease (reads, of any name: the
# checks before a run, the shared watch, churn), deletes its own Nodes and their Leases and no others
# (cleanup and churn, by name in the fakelet-nodes-* and fakelet-leases-* roles at the end), creates
# its run's claim on its shard of the fleet (a Lease in kube-node-lease: RBAC cannot limit a create by
# name, and a create changes no Lease that exists) and renews and deletes only the claims, by name (the
# fakelet-claims-* Role at the end), and creates, reads and deletes the shards' start Lease in
# namespace fakelet (--start-at auto). Pods are not granted here (deploy/rbac/pods.yaml).
#
# Every kubelet request is impersonated as system:node:<name> in group system:nodes, so the Node
# authorizer and NodeRestriction admission decide what each fake kubelet may do, exactly as for real
# kubelets. Impersonation is limited to the group system:nodes and to the user names of the fleet's
# nodes, listed one by one in the fakelet-kubelets-* ClusterRoles at the end: RBAC has no prefix match,
# and impersonating any user would let this credential act as system:kube-controller-manager or an
# administrator. Generated by ` + "`fakelet rbac --name-prefix fakelet --nodes 1000`" + `; run it with your
# fleet's --name-prefix and --nodes for another fleet (deploy/rbac.go).
apiVersion: v1
kind: Namespace
metadata:
  name: fakelet
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: fakelet
  namespace: fakelet
`

var baseRoles = []role{
	{name: "fakelet", rules: []rule{
		{group: "", resources: []string{"nodes"}, verbs: []string{"get", "list", "watch"}},
		{group: "", resources: []string{"groups"}, verbs: []string{"impersonate"}, names: []string{"system:nodes"}},
	}},
	{comment: "Node Leases live in kube-node-lease: the Role and its binding are there.",
		name: "fakelet", namespace: "kube-node-lease", rules: []rule{
			{group: "coordination.k8s.io", resources: []string{"leases"}, verbs: []string{"get", "list", "create"}},
		}},
	{comment: "--start-at auto: the shards agree on their start through a Lease in this namespace, which the first\nshard creates and deletes at the end of its run (docs/distributed.md).",
		name: "fakelet-start", namespace: "fakelet", rules: []rule{
			{group: "coordination.k8s.io", resources: []string{"leases"}, verbs: []string{"get", "create", "delete"}},
		}},
}
