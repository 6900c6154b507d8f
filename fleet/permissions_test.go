package fleet

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"fakelet.dev/fakelet/access"
	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/fleettest"
)

// reviewer makes a fake clientset answer SelfSubjectAccessReviews: allowed says which are granted.
func reviewer(client *fake.Clientset, user string, allowed func(*authorizationv1.ResourceAttributes) bool) {
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		r.Status.Allowed = allowed(r.Spec.ResourceAttributes)
		return true, r, nil
	})
	client.PrependReactor("create", "selfsubjectreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{
			UserInfo: authenticationv1.UserInfo{Username: user}}}, nil
	})
}

func TestCheckPermissionsListsEverythingMissing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		id       Identity
		fp       agent.Footprint
		allowed  func(*authorizationv1.ResourceAttributes) bool
		want     []string
		wantNone []string
	}{
		{
			name:    "everything granted",
			id:      IdentityNode,
			allowed: func(*authorizationv1.ResourceAttributes) bool { return true },
		},
		{
			name:    "nothing granted",
			id:      IdentityNode,
			allowed: func(*authorizationv1.ResourceAttributes) bool { return false },
			want: []string{"user alice may not", "missing 12 permission(s)", "list nodes (check that the fleet's names are free)",
				"watch nodes", "delete nodes fakelet-00000 (cleanup)", "delete leases.coordination.k8s.io fakelet-00000 in kube-node-lease",
				"impersonate users system:node:fakelet-00000", "impersonate groups system:nodes", "Nothing was written"},
		},
		{
			name: "read-only credential",
			id:   IdentityNode,
			allowed: func(r *authorizationv1.ResourceAttributes) bool {
				return r.Verb == "get" || r.Verb == "list" || r.Verb == "watch"
			},
			want:     []string{"missing 7 permission(s)", "delete nodes", "delete leases", "impersonate users", "impersonate groups"},
			wantNone: []string{"list nodes", "watch nodes"},
		},
		{
			name:    "fleet identity needs the kubelet's verbs, not impersonation",
			id:      IdentityFleet,
			fp:      agent.FootprintHeartbeat,
			allowed: func(r *authorizationv1.ResourceAttributes) bool { return r.Verb != "create" && r.Verb != "update" },
			want: []string{"missing 4 permission(s)", "create nodes (kubelets register their Nodes)",
				"create leases.coordination.k8s.io in kube-node-lease", "update leases.coordination.k8s.io fakelet-00000 in kube-node-lease"},
			wantNone: []string{"impersonate"},
		},
		{
			name:    "fleet identity in the kubelet footprint needs its CSINode and Events too",
			id:      IdentityFleet,
			fp:      agent.FootprintKubelet,
			allowed: func(r *authorizationv1.ResourceAttributes) bool { return r.Verb != "create" && r.Verb != "update" },
			want: []string{"missing 6 permission(s)", "create nodes (kubelets register their Nodes)",
				"create leases.coordination.k8s.io in kube-node-lease", "update leases.coordination.k8s.io fakelet-00000 in kube-node-lease",
				"create csinodes.storage.k8s.io (kubelets create their CSINodes)", "create events in default (kubelets record their Nodes' Events)"},
			wantNone: []string{"impersonate"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			reviewer(client, "alice", tc.allowed)
			err := access.Check(t.Context(), client, Permissions(fleettest.Resolve(t, Config{Nodes: 1, Identity: tc.id, Footprint: tc.fp})))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			for _, w := range tc.wantNone {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error names %q, which was granted:\n%v", w, err)
				}
			}
		})
	}
}

// TestImpersonationOfEveryNodeIsChecked: RBAC grants the impersonation of kubelets by name
// (deploy/rbac.go), so a credential granted fewer nodes than the run's is refused, naming the last.
func TestImpersonationOfEveryNodeIsChecked(t *testing.T) {
	client := fake.NewClientset()
	reviewer(client, "alice", func(r *authorizationv1.ResourceAttributes) bool {
		index, ok := fleetname.NodeIndex("fakelet", strings.TrimPrefix(r.Name, "system:node:"))
		return r.Resource != "users" || ok && index < 1000
	})
	if err := access.Check(t.Context(), client, RunPermissions(IdentityNode, "fakelet-00000", "fakelet-00999")); err != nil {
		t.Errorf("1000 nodes with 1000 granted: %v", err)
	}
	err := access.Check(t.Context(), client, RunPermissions(IdentityNode, "fakelet-00000", "fakelet-01999"))
	if err == nil || !strings.Contains(err.Error(), "missing 1 permission(s): impersonate users system:node:fakelet-01999") {
		t.Errorf("2000 nodes with 1000 granted: %v, want the last node's kubelet missing", err)
	}
	// The node's kubelet, its Node's and Lease's deletion, and the group.
	if n := len(RunPermissions(IdentityNode, "fakelet-00000", "fakelet-00000")); n != len(adminPermissions)+4 {
		t.Errorf("a fleet of one node checks %d permissions, want %d", n, len(adminPermissions)+4)
	}
}

func TestCleanupPermissions(t *testing.T) {
	var got []string
	for _, p := range CleanupPermissions() {
		got = append(got, p.String())
	}
	want := "list nodes, list leases.coordination.k8s.io in kube-node-lease"
	if strings.Join(got, ", ") != want {
		t.Errorf("cleanup needs %v, want %s", got, want)
	}
}

func TestPreflightRefusesARestrictedCredentialBeforeAnyWrite(t *testing.T) {
	client := fake.NewClientset()
	reviewer(client, "bob", func(r *authorizationv1.ResourceAttributes) bool { return r.Verb != "impersonate" })
	f, err := NewWithClients(fleettest.Resolve(t, Config{Nodes: 3}), client, []agent.Clients{{Core: client.CoreV1(), Coordination: client.CoordinationV1()}})
	if err != nil {
		t.Fatal(err)
	}
	f.checkPermissions = true // as New sets it
	err = f.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "user bob may not do what fakelet needs; missing 3 permission(s): impersonate users system:node:fakelet-00000") {
		t.Fatalf("run error %v, want the missing impersonation named", err)
	}
	for _, a := range client.Actions() {
		if r := a.GetResource().Resource; r == "nodes" || r == "leases" {
			if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
				t.Errorf("the refused run sent %s %s", v, r)
			}
		}
	}
}

// TestPermissionsAreWhatTheAgentsSend: with --identity=fleet the preflight checks, besides the
// fleet's own permissions, each kind of request the agents of the run's footprint send, with pods or
// without (agent.Requests, which agent's TestRequestsAreWhatAgentsSend holds to what agents send), in
// the fleet's namespaces, and nothing more; with --identity=node it checks none of them (the Node
// authorizer grants them to the impersonated kubelets).
func TestPermissionsAreWhatTheAgentsSend(t *testing.T) {
	for _, fp := range []agent.Footprint{agent.FootprintHeartbeat, agent.FootprintKubelet} {
		for _, pods := range []int{0, 2} {
			t.Run(fmt.Sprintf("%s footprint, %d pods", fp, pods), func(t *testing.T) {
				own := Permissions(fleettest.Resolve(t, Config{Nodes: 3, PodsPerNode: pods, Footprint: fp, Identity: IdentityFleet}))
				var want []string
				for _, p := range append(RunPermissions(IdentityFleet, "fakelet-00000", "fakelet-00002"), ClaimPermissions(fleetname.ClaimName(fleetname.DefaultNamePrefix, fleetname.Shard{}))...) {
					want = append(want, p.String())
				}
				if pods > 0 {
					for _, p := range PodPermissions() {
						want = append(want, p.String())
					}
				}
				if fp == agent.FootprintHeartbeat {
					want = append(want, "list pods", "watch pods") // the fleet's watch of bound pods
				}
				for _, k := range agent.Requests(fp, pods > 0) {
					p := access.Permission{Verb: k.Verb, Group: k.Group, Resource: k.Resource, Subresource: k.Subresource}
					switch k.Scope {
					case agent.ScopeLeases:
						p.Namespace = "kube-node-lease"
					case agent.ScopeNodeEvents:
						p.Namespace = "default"
					case agent.ScopePods:
						p.Namespace = "fakelet-pods"
					}
					// Granted by name only: the fleet's own Nodes' status and Leases, checked for
					// its first and last node, and the pods' ServiceAccount's tokens.
					switch {
					case p.Resource == "nodes" && p.Subresource == "status", p.Resource == "leases" && p.Verb == "update":
						for _, n := range []string{"fakelet-00000", "fakelet-00002"} {
							p.Name = n
							want = append(want, p.String())
						}
						continue
					case p.Resource == "serviceaccounts":
						p.Name = "default"
					}
					want = append(want, p.String())
				}
				slices.Sort(want)
				want = slices.Compact(want)
				var got []string
				for _, p := range own {
					got = append(got, p.String())
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("--identity=fleet checks\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				if fp == agent.FootprintHeartbeat && slices.ContainsFunc(own, func(p access.Permission) bool {
					return p.Resource == "events" || p.Resource == "csinodes" || p.Verb == "watch" && p.Resource != "nodes" && p.Resource != "pods"
				}) {
					t.Errorf("the heartbeat footprint checks a kubelet footprint's permission: %v", got)
				}

				byNode := Permissions(fleettest.Resolve(t, Config{Nodes: 3, PodsPerNode: pods, Footprint: fp}))
				for _, p := range byNode {
					if p.For == claimPermission {
						continue // the fleet's own, for its claim
					}
					if p.Verb == "create" && p.Resource != "pods" || p.Verb == "update" || p.Verb == "patch" {
						t.Errorf("--identity=node checks %s, which the impersonated kubelets send", p)
					}
				}
			})
		}
	}
	// The kubelet footprint's watches of pods and Services span every namespace, as a kubelet's do;
	// its pods' ConfigMap watches and Events are in the pods' namespace.
	var kubelet []string
	for _, p := range Permissions(fleettest.Resolve(t, Config{Nodes: 1, PodsPerNode: 1, Identity: IdentityFleet})) {
		kubelet = append(kubelet, p.String())
	}
	for _, want := range []string{"watch pods", "watch services", "watch configmaps in fakelet-pods", "create events in default",
		"create events in fakelet-pods", "get csinodes.storage.k8s.io", "watch podcertificaterequests.certificates.k8s.io",
		"delete pods in fakelet-pods", "create serviceaccounts/token default in fakelet-pods"} {
		if !slices.Contains(kubelet, want) {
			t.Errorf("the default footprint with pods and --identity=fleet does not check %q: %v", want, kubelet)
		}
	}
}

// TestPreflightChecksPermissions: the preflight reviews exactly Permissions, each once.
func TestPreflightChecksPermissions(t *testing.T) {
	for _, cfg := range []Config{
		{Nodes: 3, Identity: IdentityFleet, Footprint: agent.FootprintHeartbeat},
		{Nodes: 3, Identity: IdentityFleet, Footprint: agent.FootprintKubelet, PodsPerNode: 1},
		{Nodes: 3, Footprint: agent.FootprintKubelet},
	} {
		client := fake.NewClientset()
		var reviewed []string
		reviewer(client, "dave", func(r *authorizationv1.ResourceAttributes) bool {
			p := access.Permission{Verb: r.Verb, Group: r.Group, Resource: r.Resource, Subresource: r.Subresource, Namespace: r.Namespace, Name: r.Name}
			reviewed = append(reviewed, p.String())
			return true
		})
		f, err := NewWithClients(fleettest.Resolve(t, cfg), client, []agent.Clients{{Core: client.CoreV1(), Coordination: client.CoordinationV1()}})
		if err != nil {
			t.Fatal(err)
		}
		f.checkPermissions = true // as New sets it
		if err := f.Preflight(t.Context()); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, p := range Permissions(fleettest.Resolve(t, cfg)) {
			want = append(want, p.String())
		}
		if !slices.Equal(reviewed, want) {
			t.Errorf("%s footprint, identity %s, %d pods: the preflight reviewed\n%v\nwant\n%v", cfg.Footprint, cfg.Identity, cfg.PodsPerNode, reviewed, want)
		}
	}
}
