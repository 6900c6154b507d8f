package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/deploy"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/fleettest"
	"fakelet.dev/fakelet/internal/lockstep"
)

// Bad input from the cluster side: credentials, certificates and names that a run must refuse
// before it writes anything, saying what is wrong.

// runOnce runs a fleet with restConfig until ctx ends and returns Run's error.
func runOnce(t *testing.T, cfg fleet.Config, restConfig *rest.Config) error {
	t.Helper()
	f, err := fleet.New(fleettest.Resolve(t, cfg), restConfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return f.Run(ctx)
}

// nothingWritten fails the test if the cluster holds a Node or Lease named PREFIX-*.
func nothingWritten(t *testing.T, c kubernetes.Interface, prefix string) {
	t.Helper()
	ctx := context.Background()
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leases, err := c.CoordinationV1().Leases(agent.LeaseNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if strings.HasPrefix(n.Name, prefix+"-") && n.Labels[fleetname.Label] != "" {
			t.Errorf("node %s was created", n.Name)
		}
	}
	for _, l := range leases.Items {
		if strings.HasPrefix(l.Name, prefix+"-") {
			t.Errorf("lease %s was created", l.Name)
		}
	}
}

func TestCredentialWithoutPermissionsIsRefusedBeforeAnyWrite(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)

	t.Run("no RBAC at all", func(t *testing.T) {
		cfg, err := cp.ClientConfig("fakelet-e2e-nobody")
		if err != nil {
			t.Fatal(err)
		}
		err = runOnce(t, fleet.Config{Nodes: 3, Fleet: "nobody", NamePrefix: "nobody"}, cfg)
		t.Log(err)
		for _, want := range []string{
			"user fakelet-e2e-nobody may not do what fakelet needs; missing 15 permission(s)",
			"list nodes (check that the fleet's names are free)", "watch nodes", "delete nodes nobody-00000 (cleanup)",
			"delete nodes nobody-00002 (cleanup)", "delete leases.coordination.k8s.io nobody-00002 in kube-node-lease (cleanup)",
			"list leases.coordination.k8s.io in kube-node-lease (cleanup)", "impersonate users system:node:nobody-00000", "impersonate users system:node:nobody-00002",
			"impersonate groups system:nodes", "Nothing was written", "deploy/rbac/fakelet.yaml",
		} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q", want)
			}
		}
		nothingWritten(t, c, "nobody")
	})

	t.Run("read-only", func(t *testing.T) {
		const user = "fakelet-e2e-readonly"
		grant(t, c, user, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}})
		cfg, err := cp.ClientConfig(user)
		if err != nil {
			t.Fatal(err)
		}
		err = runOnce(t, fleet.Config{Nodes: 3, Fleet: "readonly", NamePrefix: "readonly"}, cfg)
		t.Log(err)
		// The Leases' get and list, the first and last node's Node and Lease deletions, their
		// kubelets and the group, and the claim's create, update and delete.
		if err == nil || !strings.Contains(err.Error(), "missing 12 permission(s): get leases.coordination.k8s.io in kube-node-lease") {
			t.Fatalf("error %v, want the 12 missing permissions starting with get leases", err)
		}
		if strings.Contains(err.Error(), "list nodes") || strings.Contains(err.Error(), "watch nodes") {
			t.Errorf("the error names permissions the credential has")
		}
		nothingWritten(t, c, "readonly")
	})

	t.Run("deploy/rbac/fakelet.yaml is enough for --identity=node", func(t *testing.T) {
		rf := runFleet(t, serviceAccountConfig(t, cp), fleet.Config{Nodes: 3, Fleet: "rbac", NamePrefix: "rbac", Template: smallNodes})
		rf.waitReady(t, 3, 60*time.Second)
		if err := rf.stop(); err != nil {
			t.Errorf("run and cleanup with fakelet.yaml's credential: %v", err)
		}
		if n := len(fleetNodes(t, c, "rbac")); n != 0 {
			t.Errorf("%d nodes left after cleanup with fakelet.yaml's credential", n)
		}
	})

	t.Run("--identity=fleet needs deploy/rbac/fleet-identity.yaml too", func(t *testing.T) {
		err := runOnce(t, fleet.Config{Nodes: 3, Fleet: "rbacfleet", NamePrefix: "rbacfleet", Identity: fleet.IdentityFleet}, serviceAccountConfig(t, cp))
		t.Log(err)
		// What the kubelet footprint, the default, sends beside the Node and Lease requests of the
		// heartbeat footprint: watches, CSINodes and Events (agent.Requests).
		// The status patches and renewals are granted by name: checked for the first and last node.
		// Creating Leases in kube-node-lease is fakelet.yaml's already (the run's claim).
		for _, want := range []string{"user system:serviceaccount:fakelet:fakelet may not", "missing 14 permission(s)",
			"create nodes (kubelets register their Nodes)", "patch nodes/status rbacfleet-00000", "patch nodes/status rbacfleet-00002",
			"update leases.coordination.k8s.io rbacfleet-00002 in kube-node-lease",
			"watch services", "watch pods (kubelets watch their pods)", "watch podcertificaterequests.certificates.k8s.io",
			"create csinodes.storage.k8s.io", "create events in default", "patch events in default"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q", want)
			}
		}
		nothingWritten(t, c, "rbacfleet")
	})

	t.Run("deploy/rbac/fleet-identity.yaml is enough for --identity=fleet", func(t *testing.T) {
		// A ServiceAccount of its own, so that the grant does not reach the tests that expect the
		// refusal above.
		cfg := rbacFor(t, cp, "fleetid", generated(t, deploy.RBAC, "fleetid", 3), generated(t, deploy.FleetIdentityRBAC, "fleetid", 3))
		const nodes = 3
		rf := runFleet(t, cfg, fleet.Config{Nodes: nodes, Fleet: "fleetid", NamePrefix: "fleetid", Identity: fleet.IdentityFleet, Template: smallNodes})
		rf.waitReady(t, nodes, 60*time.Second)
		// Each node's six watches listed, its CSINode created and its Events written, with no
		// request refused.
		eventually(t, 60*time.Second, "every node's watches listed and its startup requests sent", func() (bool, error) {
			var lists int64
			for _, ws := range rf.Tally().Watches() {
				lists += ws.Lists
			}
			var csiNodes, events int64
			for _, r := range rf.Tally().Requests() {
				switch {
				case r.Verb == "create" && r.Resource == "csinodes":
					csiNodes += r.OK
				case r.Verb == "create" && r.Resource == "events":
					events += r.OK
				}
			}
			return lists >= 6*nodes && csiNodes == nodes && events >= 6*nodes || rf.Tally().Errors() > 0, nil
		})
		if errs := rf.Tally().Errors(); errs != 0 {
			t.Errorf("%d requests failed with fleet-identity.yaml's grants: %+v", errs, rf.Tally().Requests())
		}
		if err := rf.stop(); err != nil {
			t.Errorf("run and cleanup with fleet-identity.yaml's credential: %v", err)
		}
		if n := len(fleetNodes(t, c, "fleetid")); n != 0 {
			t.Errorf("%d nodes left after cleanup with fleet-identity.yaml's credential", n)
		}
	})
}

// generated is what write (deploy.RBAC, deploy.FleetIdentityRBAC) writes for a fleet of nodes named
// with prefix, as `fakelet rbac` prints it.
func generated(t *testing.T, write func(io.Writer, string, int) error, prefix string, nodes int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b, prefix, nodes); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// rbacFile is deploy/rbac/name.
func rbacFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../deploy/rbac/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rbacFor applies the namespaces and roles of files (deploy/rbac's YAML) to the ServiceAccount
// fakelet/sa instead of fakelet/fakelet, each role and binding named NAME-sa, and returns a client
// configuration with a token of that ServiceAccount once the apiserver's authorizer applies them.
func rbacFor(t *testing.T, cp *controlplane.ControlPlane, sa string, files ...[]byte) *rest.Config {
	t.Helper()
	c := admin(t, cp)
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fakelet"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().ServiceAccounts("fakelet").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: "fakelet"}}
	var last authorizationv1.ResourceAttributes // of the last role created, to wait for
	for f, b := range files {
		docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := docs.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(string(doc)) == "" {
				continue
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("decode RBAC file %d: %v", f, err)
			}
			switch o := obj.(type) {
			case *corev1.Namespace:
				createNamespace(t, c, o.Name)
			case *rbacv1.ClusterRole:
				o.Name += "-" + sa
				last = firstGrant(o.Rules, "")
				_, err = c.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
			case *rbacv1.ClusterRoleBinding:
				o.Name += "-" + sa
				o.RoleRef.Name += "-" + sa
				o.Subjects = subjects
				_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
			case *rbacv1.Role:
				o.Name += "-" + sa
				last = firstGrant(o.Rules, o.Namespace)
				_, err = c.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
			case *rbacv1.RoleBinding:
				o.Name += "-" + sa
				o.RoleRef.Name += "-" + sa
				o.Subjects = subjects
				_, err = c.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
			}
			if err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
	}
	user := "system:serviceaccount:fakelet:" + sa
	eventually(t, 30*time.Second, "RBAC for "+user+" applied", func() (bool, error) {
		r, err := c.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts"}, ResourceAttributes: &last,
		}}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, nil
	})
	tr, err := c.CoreV1().ServiceAccounts("fakelet").CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := cp.AdminConfig()
	cfg.CertData, cfg.KeyData = nil, nil
	cfg.BearerToken = tr.Status.Token
	return cfg
}

// firstGrant is what the first of rules grants, in namespace.
func firstGrant(rules []rbacv1.PolicyRule, namespace string) authorizationv1.ResourceAttributes {
	r := rules[0]
	a := authorizationv1.ResourceAttributes{Verb: r.Verbs[0], Group: r.APIGroups[0], Namespace: namespace}
	a.Resource, a.Subresource, _ = strings.Cut(r.Resources[0], "/")
	if len(r.ResourceNames) > 0 {
		a.Name = r.ResourceNames[0]
	}
	return a
}

// createNamespace creates namespace name unless it exists; one still being deleted (a fleet's
// cleanup deletes the pods' namespace it created) is waited for and created again.
func createNamespace(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	eventually(t, 2*time.Minute, "namespace "+name+" created", func() (bool, error) {
		_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return err == nil, err
		}
		ns, err := c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && ns.DeletionTimestamp == nil, err
	})
}

// grant binds a ClusterRole with rule to user and waits until the apiserver's authorizer applies it.
func grant(t *testing.T, c kubernetes.Interface, user string, rule rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	name := "e2e-" + user
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}}
	if _, err := c.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "RBAC for "+user+" applied", func() (bool, error) {
		r, err := c.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: rule.Verbs[0], Group: rule.APIGroups[0], Resource: rule.Resources[0]},
		}}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, nil
	})
}

var (
	saOnce  sync.Once
	saToken string
	saErr   error
)

// serviceAccountFleets are the name prefixes and sizes of the fleets other than fakelet-00000 to
// fakelet-00999 that the tests run with fakelet.yaml's ServiceAccount: serviceAccountConfig grants
// their kubelets and their claims as `fakelet rbac --name-prefix P --nodes N` does.
var serviceAccountFleets = []struct {
	prefix string
	nodes  int
}{{"rbac", 3}, {"rbacpods", 2}, {"token", 3}, {"rbacfleet", 3}, {"pernode", 20}}

// serviceAccountConfig applies deploy/rbac/fakelet.yaml, and the kubelets of serviceAccountFleets, to
// the shared control plane (once) and returns a client configuration with a token of its
// ServiceAccount, fakelet/fakelet.
func serviceAccountConfig(t *testing.T, cp *controlplane.ControlPlane) *rest.Config {
	t.Helper()
	saOnce.Do(func() { saToken, saErr = applyFakeletRBAC(admin(t, cp)) })
	if saErr != nil {
		t.Fatal(saErr)
	}
	cfg := cp.AdminConfig()
	cfg.CertData, cfg.KeyData = nil, nil
	cfg.BearerToken = saToken
	return cfg
}

func applyFakeletRBAC(c kubernetes.Interface) (string, error) {
	ctx := context.Background()
	file, err := os.ReadFile("../deploy/rbac/fakelet.yaml")
	if err != nil {
		return "", err
	}
	all := bytes.NewBuffer(file)
	for _, f := range serviceAccountFleets {
		if err := deploy.KubeletRBAC(all, f.prefix, 0, f.nodes); err != nil {
			return "", err
		}
		if err := deploy.ClaimsRBAC(all, f.prefix); err != nil {
			return "", err
		}
	}
	docs := utilyaml.NewYAMLReader(bufio.NewReader(all))
	var rules []runtime.Object
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(string(doc)) == "" {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return "", fmt.Errorf("decode deploy/rbac/fakelet.yaml: %w", err)
		}
		rules = append(rules, obj)
	}
	for _, obj := range rules {
		var err error
		switch o := obj.(type) {
		case *corev1.Namespace:
			_, err = c.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ServiceAccount:
			_, err = c.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = c.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = c.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = c.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		default:
			err = fmt.Errorf("unexpected %T in deploy/rbac/fakelet.yaml", obj)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return "", err
		}
	}
	tr, err := c.CoreV1().ServiceAccounts("fakelet").CreateToken(ctx, "fakelet", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for fakelet/fakelet: %w", err)
	}
	// RBAC reaches the authorizer through an informer: wait until the rules apply.
	sa := "system:serviceaccount:fakelet:fakelet"
	last := serviceAccountFleets[len(serviceAccountFleets)-1]
	deadline := time.Now().Add(30 * time.Second)
	for {
		allowed := true
		for _, attrs := range []authorizationv1.ResourceAttributes{
			{Verb: "delete", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, Name: fleetname.NodeName(last.prefix, last.nodes-1)},
			{Verb: "impersonate", Resource: "users", Name: controlplane.NodeUser(fleetname.NodeName(last.prefix, last.nodes-1))},
		} {
			r, rerr := c.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: sa, Groups: []string{"system:serviceaccounts"}, ResourceAttributes: &attrs,
			}}, metav1.CreateOptions{})
			if rerr != nil {
				err = rerr
			}
			allowed = allowed && rerr == nil && r.Status.Allowed
		}
		if allowed {
			return tr.Status.Token, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("RBAC of deploy/rbac/fakelet.yaml not applied after 30 s: %v", err)
		}
		time.Sleep(200 * time.Millisecond) // the authorizer's informer has no event to offer
	}
}

func TestUnreachableOrUntrustedClusterIsRefusedClearly(t *testing.T) {
	cp := controlPlane(t)

	t.Run("nothing listening", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg := cp.AdminConfig()
		cfg.Host = "https://" + l.Addr().String()
		l.Close()
		err = runOnce(t, fleet.Config{Nodes: 2, Fleet: "unreachable", NamePrefix: "unreachable"}, cfg)
		t.Log(err)
		if err == nil || !strings.Contains(err.Error(), "cannot reach the apiserver") {
			t.Errorf("error %v, want one saying the apiserver cannot be reached", err)
		}
	})

	t.Run("certificate authority of another cluster", func(t *testing.T) {
		cfg := cp.AdminConfig()
		cfg.CAData = otherCA(t)
		err := runOnce(t, fleet.Config{Nodes: 2, Fleet: "wrongca", NamePrefix: "wrongca"}, cfg)
		t.Log(err)
		if err == nil || !strings.Contains(err.Error(), "not signed by the certificate authority in the kubeconfig") {
			t.Errorf("error %v, want one about the certificate authority", err)
		}
		nothingWritten(t, admin(t, cp), "wrongca")
	})
}

// otherCA returns a CA certificate (PEM) that signed nothing of the control plane's: httptest's.
func otherCA(t *testing.T) []byte {
	t.Helper()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// TestForeignNodeWithOurNameIsRefusedAndUntouched: a Node named as one of the fleet's but without its
// label stops the run before any write, is named in the error, and is left exactly as it was.
func TestForeignNodeWithOurNameIsRefusedAndUntouched(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	ctx := context.Background()
	squatter, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: "squat-00001", Labels: map[string]string{"team": "prod"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CoreV1().Nodes().Delete(context.Background(), squatter.Name, metav1.DeleteOptions{}) })
	other, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: "squat-00002", Labels: map[string]string{fleetname.Label: "someone-else"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CoreV1().Nodes().Delete(context.Background(), other.Name, metav1.DeleteOptions{}) })

	err = runOnce(t, fleet.Config{Nodes: 5, Fleet: "squat", NamePrefix: "squat"}, cp.AdminConfig())
	t.Log(err)
	for _, want := range []string{"2 node(s) with the fleet's names already exist and are not fleet \"squat\"'s",
		"squat-00001 (no fleet label)", "squat-00002 (fakelet.dev/fleet=someone-else)", "choose another --name-prefix"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q", want)
		}
	}
	for _, before := range []*corev1.Node{squatter, other} {
		untouchedByFakelet(t, c, before)
	}
	sel := labels.SelectorFromSet(labels.Set{fleetname.Label: "squat"}).String()
	if nodes, _ := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel}); len(nodes.Items) != 0 {
		t.Errorf("the refused run registered %d nodes", len(nodes.Items))
	}
}

// TestBadRunFlagsTouchNothing: the fakelet binary refuses bad flag values before it starts the local
// control plane (its directory is never created) or writes to a cluster (no start Lease, no Node),
// naming the flag. Each of these once failed late, panicked, ran out of memory or silently wrapped.
func TestBadRunFlagsTouchNothing(t *testing.T) {
	cp := controlPlane(t)
	binDir, err := filepath.Abs("../bin")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--scrape-interval=0"}, "--scrape-interval 0s: at least 1s"},
		{[]string{"--nodes=9223372036854775807"}, "--nodes 9223372036854775807: more than the largest fleet"},
		{[]string{"--nodes=100000000"}, "--nodes 100000000: more than the largest fleet"},
		{[]string{"--nodes=999999"}, "--nodes 999999: needs about 61.0 GiB at 64 KiB per node"}, // on a machine with less
		{[]string{"--register-qps=NaN"}, "--register-qps must be positive and finite, got NaN"},
		{[]string{"--lease-duration=5000000000s"}, "--lease-duration 5000000000s: at most 2147483647s"},
		{[]string{"--renew-interval=1ms"}, "--renew-interval 1ms: at least 250ms"},
		{[]string{"--status-update-frequency=1ms"}, "--status-update-frequency 1ms: at least 1s"},
	} {
		t.Run("local "+strings.Join(tc.flags, " "), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "controlplane")
			args := append([]string{"run", "--controlplane-dir", dir, "--bin-dir", binDir, "--metrics-addr", "", "--duration", "5s"}, tc.flags...)
			p := startFakelet(t, args...)
			if code := p.wait(time.Minute); code != 1 {
				t.Fatalf("exit code %d, want 1", code)
			}
			if !strings.Contains(p.output(), tc.want) {
				t.Errorf("output lacks %q", tc.want)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the refused run left %s (%v)", dir, err)
			}
			if strings.Contains(p.output(), "target:") {
				t.Errorf("the refused run reached a target")
			}
		})
	}

	t.Run("start lease", func(t *testing.T) {
		c := admin(t, cp)
		// The namespace exists, so that nothing but the check stops the first shard creating the Lease.
		const ns = "badflags"
		if _, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		p := startFakelet(t, "run", "--kubeconfig", cp.Kubeconfig, "--profile", "steady", "--nodes", "3", "--start-at", "auto",
			"--coordination-namespace", ns, "--fleet", "badflags", "--name-prefix", "badflags", "--metrics-addr", "", "--scrape-interval", "0")
		if code := p.wait(time.Minute); code != 1 {
			t.Fatalf("exit code %d, want 1", code)
		}
		if !strings.Contains(p.output(), "--scrape-interval 0s: at least 1s") {
			t.Errorf("output lacks the --scrape-interval error")
		}
		_, err := c.CoordinationV1().Leases(ns).Get(context.Background(), lockstep.LeaseName("badflags"), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("start Lease %s/%s: %v, want it never created", ns, lockstep.LeaseName("badflags"), err)
		}
		nothingWritten(t, c, "badflags")
	})
}
