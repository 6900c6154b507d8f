package deploy

import (
	"bytes"
	"flag"
	"os"
	"slices"
	"testing"

	"fakelet.dev/fakelet/fleetname"
)

var updateRBAC = flag.Bool("update-rbac", false, "rewrite the generated RBAC files (deploy/rbac.go)")

// The files RBAC, FleetIdentityRBAC and KubeletRBAC generate: deploy/rbac/fakelet.yaml and the
// StatefulSet's copy for its 1000 nodes, deploy/rbac/fleet-identity.yaml, and the large overlay's
// kubelets for its 50,000.
func generatedRBAC(t *testing.T) map[string][]byte {
	t.Helper()
	var small, large, fleetIdentity bytes.Buffer
	if err := RBAC(&small, fleetname.DefaultNamePrefix, 1000); err != nil {
		t.Fatal(err)
	}
	if err := FleetIdentityRBAC(&fleetIdentity, fleetname.DefaultNamePrefix, 1000); err != nil {
		t.Fatal(err)
	}
	if err := KubeletRBAC(&large, fleetname.DefaultNamePrefix, 0, 50000); err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		"rbac/fakelet.yaml":                       small.Bytes(),
		"rbac/fleet-identity.yaml":                fleetIdentity.Bytes(),
		"kubernetes/base/rbac.yaml":               small.Bytes(),
		"kubernetes/overlays/large/kubelets.yaml": large.Bytes(),
	}
}

// TestRBACFilesAreGenerated: the RBAC files are what deploy/rbac.go generates (go test ./deploy
// -run TestRBACFilesAreGenerated -update-rbac rewrites them).
func TestRBACFilesAreGenerated(t *testing.T) {
	for path, want := range generatedRBAC(t) {
		if *updateRBAC {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("deploy/%s is not what deploy/rbac.go generates: run go test ./deploy -run TestRBACFilesAreGenerated -update-rbac", path)
		}
	}
}

// TestImpersonationIsLimitedToTheFleet: deploy/rbac/fakelet.yaml lets its ServiceAccount impersonate
// the group system:nodes and the kubelets of the fleet's 1000 nodes, each by name, and no other user
// or group: not system:kube-controller-manager, not an administrator, not a node of another name.
// No rule has a wildcard.
func TestImpersonationIsLimitedToTheFleet(t *testing.T) {
	var users, groups []string
	for _, o := range readObjects(t, "rbac/fakelet.yaml") {
		for _, r := range o.Rules {
			for _, list := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.ResourceNames} {
				if slices.Contains(list, "*") {
					t.Errorf("%s %s: a rule with a wildcard: %+v", o.Kind, o.Metadata.Name, r)
				}
			}
			if !slices.Contains(r.Verbs, "impersonate") {
				continue
			}
			if len(r.ResourceNames) == 0 {
				t.Errorf("%s %s allows impersonating any of %v: want resourceNames", o.Kind, o.Metadata.Name, r.Resources)
			}
			for _, res := range r.Resources {
				switch res {
				case "users":
					users = append(users, r.ResourceNames...)
				case "groups":
					groups = append(groups, r.ResourceNames...)
				default:
					t.Errorf("%s %s allows impersonating %s", o.Kind, o.Metadata.Name, res)
				}
			}
		}
	}
	if !slices.Equal(groups, []string{"system:nodes"}) {
		t.Errorf("impersonated groups %q, want only system:nodes", groups)
	}
	var want []string
	for i := range 1000 {
		want = append(want, "system:node:"+fleetname.NodeName(fleetname.DefaultNamePrefix, i))
	}
	slices.Sort(users)
	if !slices.Equal(users, want) {
		t.Errorf("impersonated users: %d names from %q, want the 1000 kubelets of fakelet-00000 to fakelet-00999", len(users), users[:min(len(users), 3)])
	}
	for _, u := range []string{"system:kube-controller-manager", "system:admin", "system:node:other-00000", "system:node:fakelet-01000"} {
		if slices.Contains(users, u) {
			t.Errorf("%s may be impersonated", u)
		}
	}
}

func TestKubeletRBACRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		prefix       string
		first, nodes int
	}{{"fakelet", 0, 0}, {"fakelet", -1, 10}, {"Fake_let", 0, 10}, {"a b", 0, 1}, {"", 0, 1}} {
		if err := KubeletRBAC(&bytes.Buffer{}, tc.prefix, tc.first, tc.nodes); err == nil {
			t.Errorf("KubeletRBAC(%q, %d, %d) gave no error", tc.prefix, tc.first, tc.nodes)
		}
	}
}
