package controlplane

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// With AuditNodes the apiserver logs a kubelet's own requests and a node impersonated through the
// admin credential (the policy matches the admin, the event names the node); the controller
// manager's requests are not logged.
func TestE2EAuditNodes(t *testing.T) {
	requireBinaries(t)
	t.Parallel()
	dir := privateTempDir(t)
	cp := upForTest(t, dir, Options{AuditNodes: true})

	kubelet, err := cp.ClientConfig(NodeUser("audit-a"), NodesGroup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clientset(t, kubelet).CoreV1().Nodes().Get(t.Context(), "audit-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("kubelet GET of its absent Node: %v, want 404", err)
	}
	impersonated := cp.AdminConfig()
	impersonated.Impersonate = rest.ImpersonationConfig{UserName: NodeUser("audit-b"), Groups: []string{NodesGroup}}
	if _, err := clientset(t, impersonated).CoreV1().Nodes().Get(t.Context(), "audit-b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("impersonated GET of an absent Node: %v, want 404", err)
	}

	f, err := os.Open(AuditLogPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sawKubelet, sawImpersonated bool
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Level, RequestURI string
			User              struct{ Username string }
			ImpersonatedUser  *struct{ Username string }
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if ev.Level != "Metadata" {
			t.Errorf("level %s, want Metadata: %s", ev.Level, sc.Text())
		}
		if strings.HasPrefix(ev.User.Username, "system:serviceaccount:") || ev.User.Username == kcmUser {
			t.Errorf("the controller manager's request was logged: %s", sc.Text())
		}
		switch {
		case ev.User.Username == NodeUser("audit-a") && ev.RequestURI == "/api/v1/nodes/audit-a":
			sawKubelet = true
		case ev.ImpersonatedUser != nil && ev.ImpersonatedUser.Username == NodeUser("audit-b") && ev.User.Username == AdminUser:
			sawImpersonated = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !sawKubelet || !sawImpersonated {
		t.Errorf("logged the kubelet's request: %v, the impersonated node's: %v; want both", sawKubelet, sawImpersonated)
	}
}
