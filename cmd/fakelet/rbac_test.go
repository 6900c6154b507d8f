package main

import (
	"bytes"
	"strings"
	"testing"

	"fakelet.dev/fakelet/deploy"
)

// TestRBACCommandWritesEachIdentitysFile: fakelet rbac prints fakelet.yaml's rules for the fleet it
// is given, and with --identity fleet fleet-identity.yaml's; another identity is refused.
func TestRBACCommandWritesEachIdentitysFile(t *testing.T) {
	var node, fleetID bytes.Buffer
	if err := deploy.RBAC(&node, "scale", 3); err != nil {
		t.Fatal(err)
	}
	if err := deploy.FleetIdentityRBAC(&fleetID, "scale", 3); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
		err  string
	}{
		{[]string{"--name-prefix=scale", "--nodes=3"}, node.String(), ""},
		{[]string{"--name-prefix=scale", "--nodes=3", "--identity=fleet"}, fleetID.String(), ""},
		{[]string{"--identity=root"}, "", `--identity "root": want node`},
		{[]string{"--nodes=0"}, "", "want one node or more"},
	} {
		root := newRootCommand()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&bytes.Buffer{})
		root.SetArgs(append([]string{"rbac"}, tc.args...))
		err := root.Execute()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("rbac %q: error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || out.String() != tc.want {
			t.Errorf("rbac %q: %v, and not the file deploy writes", tc.args, err)
		}
	}
}
