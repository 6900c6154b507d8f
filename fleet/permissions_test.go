package fleet

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"fakelet.dev/fakelet/agent"
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
			want: []string{"user alice may not", "missing 9 permission(s)", "list nodes (check that the fleet's names are free)",
				"watch nodes", "delete nodes (cleanup)", "delete leases.coordination.k8s.io in kube-node-lease",
				"impersonate users system:node:fakelet-00000", "impersonate groups system:nodes", "Nothing was written"},
		},
		{
			name: "read-only credential",
			id:   IdentityNode,
			allowed: func(r *authorizationv1.ResourceAttributes) bool {
				return r.Verb == "get" || r.Verb == "list" || r.Verb == "watch"
			},
			want:     []string{"missing 4 permission(s)", "delete nodes", "delete leases", "impersonate users", "impersonate groups"},
			wantNone: []string{"list nodes", "watch nodes"},
		},
		{
			name:    "fleet identity needs the kubelet's verbs, not impersonation",
			id:      IdentityFleet,
			allowed: func(r *authorizationv1.ResourceAttributes) bool { return r.Verb != "create" && r.Verb != "update" },
			want: []string{"missing 3 permission(s)", "create nodes (kubelets register their Nodes)",
				"create leases.coordination.k8s.io in kube-node-lease", "update leases.coordination.k8s.io in kube-node-lease"},
			wantNone: []string{"impersonate"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			reviewer(client, "alice", tc.allowed)
			err := CheckPermissions(t.Context(), client, RunPermissions(tc.id, "fakelet-00000"))
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
		index, ok := NodeIndex("fakelet", strings.TrimPrefix(r.Name, "system:node:"))
		return r.Resource != "users" || ok && index < 1000
	})
	if err := CheckPermissions(t.Context(), client, RunPermissions(IdentityNode, "fakelet-00000", "fakelet-00999")); err != nil {
		t.Errorf("1000 nodes with 1000 granted: %v", err)
	}
	err := CheckPermissions(t.Context(), client, RunPermissions(IdentityNode, "fakelet-00000", "fakelet-01999"))
	if err == nil || !strings.Contains(err.Error(), "missing 1 permission(s): impersonate users system:node:fakelet-01999") {
		t.Errorf("2000 nodes with 1000 granted: %v, want the last node's kubelet missing", err)
	}
	if n := len(RunPermissions(IdentityNode, "fakelet-00000", "fakelet-00000")); n != len(adminPermissions)+2 {
		t.Errorf("a fleet of one node checks %d permissions, want %d", n, len(adminPermissions)+2)
	}
}

func TestCleanupPermissions(t *testing.T) {
	var got []string
	for _, p := range CleanupPermissions() {
		got = append(got, p.String())
	}
	want := "list nodes, delete nodes, list leases.coordination.k8s.io in kube-node-lease, delete leases.coordination.k8s.io in kube-node-lease"
	if strings.Join(got, ", ") != want {
		t.Errorf("cleanup needs %v, want %s", got, want)
	}
}

// TestUnreachableClustersAreExplained points a real client at servers that cannot be talked to:
// the error says why, in words a user can act on.
func TestUnreachableClustersAreExplained(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "https://" + closed.Addr().String()
	closed.Close()

	otherCA := httptest.NewUnstartedServer(http.NotFoundHandler())
	otherCA.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	otherCA.StartTLS()
	defer otherCA.Close()

	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // accepts the request and never answers
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hung.Close()
	defer close(release)
	old := checkTimeout
	checkTimeout = 500 * time.Millisecond
	defer func() { checkTimeout = old }()

	for _, tc := range []struct {
		name string
		cfg  *rest.Config
		want string
	}{
		{"nothing listening", &rest.Config{Host: refused}, "cannot reach the apiserver"},
		// The server's certificate is from httptest's own CA; the client trusts only the system roots.
		{"certificate from another CA", &rest.Config{Host: otherCA.URL}, "not signed by the certificate authority in the kubeconfig"},
		{"never answers", &rest.Config{Host: hung.URL}, "did not answer within 500ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, err := kubernetes.NewForConfig(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			begin := time.Now()
			err = CheckPermissions(t.Context(), client, CleanupPermissions())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if d := time.Since(begin); d > 5*time.Second {
				t.Errorf("took %v to fail", d)
			}
			t.Log(err)
		})
	}
}

func TestPreflightRefusesARestrictedCredentialBeforeAnyWrite(t *testing.T) {
	client := fake.NewClientset()
	reviewer(client, "bob", func(r *authorizationv1.ResourceAttributes) bool { return r.Verb != "impersonate" })
	f, err := NewWithClients(Config{Nodes: 3}, client, []agent.Clients{{Core: client.CoreV1(), Coordination: client.CoordinationV1()}})
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
