package controlplane

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestAuditArgs(t *testing.T) {
	dir := privateTempDir(t)
	args, err := auditArgs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--audit-policy-file=" + auditPolicyPath(dir), "--audit-log-path=" + AuditLogPath(dir), "--audit-log-format=json"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
	b, err := os.ReadFile(auditPolicyPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		APIVersion string   `yaml:"apiVersion"`
		Kind       string   `yaml:"kind"`
		OmitStages []string `yaml:"omitStages"`
		Rules      []struct {
			Level      string   `yaml:"level"`
			UserGroups []string `yaml:"userGroups"`
		} `yaml:"rules"`
	}
	if err := yaml.Unmarshal(b, &policy); err != nil {
		t.Fatal(err)
	}
	if policy.APIVersion != "audit.k8s.io/v1" || policy.Kind != "Policy" || len(policy.Rules) != 2 {
		t.Fatalf("policy %+v", policy)
	}
	// Impersonated nodes are matched as the admin who impersonates them: both groups are logged,
	// and nothing else.
	if r := policy.Rules[0]; r.Level != "Metadata" || !slices.Equal(r.UserGroups, []string{NodesGroup, AdminGroup}) {
		t.Errorf("first rule %+v, want Metadata for %s and %s", r, NodesGroup, AdminGroup)
	}
	if r := policy.Rules[1]; r.Level != "None" || len(r.UserGroups) != 0 {
		t.Errorf("last rule %+v, want None for everyone else", r)
	}
}

func TestKeepPreviousAuditLog(t *testing.T) {
	dir := privateTempDir(t)
	if err := keepPreviousAuditLog(dir); err != nil {
		t.Errorf("no log yet: %v", err)
	}
	if err := os.WriteFile(AuditLogPath(dir), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := keepPreviousAuditLog(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(AuditLogPath(dir)); !os.IsNotExist(err) {
		t.Errorf("audit log still there: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "audit.previous.log")); err != nil || !strings.HasPrefix(string(b), "{}") {
		t.Errorf("previous log %q, %v", b, err)
	}
}
