package e2e

import (
	"os"
	"strings"
	"testing"
)

// TestControlPlaneReportsItsVersion: the local control plane says which Kubernetes it is (reports and
// kubectl version quote it), the version pinned in tools/kube, not a plain go build's v0.0.0-master.
func TestControlPlaneReportsItsVersion(t *testing.T) {
	cp := controlPlane(t)
	v, err := admin(t, cp).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if want := pinnedKubernetes(t); v.GitVersion != want {
		t.Errorf("the apiserver reports %s, want the pin %s (make controlplane stamps it)", v.GitVersion, want)
	}
	if v.Major != "1" || !strings.HasPrefix(strings.TrimPrefix(v.GitVersion, "v1."), v.Minor+".") {
		t.Errorf("the apiserver reports major %q minor %q for %s", v.Major, v.Minor, v.GitVersion)
	}
}

// pinnedKubernetes reads the k8s.io/kubernetes version the tools module builds the control plane from.
func pinnedKubernetes(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../tools/kube/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "require" && f[1] == "k8s.io/kubernetes" {
			return f[2]
		}
	}
	t.Fatal("tools/kube/go.mod requires no k8s.io/kubernetes")
	return ""
}
