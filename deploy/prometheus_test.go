package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// promtool returns the path of promtool (Debian's prometheus package ships it). Without one the
// test is skipped under -short and fails otherwise: CI installs it (.ci/run).
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if testing.Short() {
			t.Skip("no promtool in $PATH; skipped under -short")
		}
		t.Fatal("no promtool in $PATH to check the Prometheus files with: install Debian's prometheus package (apt-get install prometheus), as .ci/run does")
	}
	return path
}

func runPromtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// writeLocal renders the local configuration into a new directory, with stand-in TLS files.
func writeLocal(t *testing.T, targets LocalTargets) (dir, config string) {
	t.Helper()
	dir = t.TempDir()
	pki := t.TempDir()
	for _, name := range []string{"ca.crt", "admin.crt", "admin.key"} {
		if err := os.WriteFile(filepath.Join(pki, name), []byte("PEM of "+name+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	targets.CACert, targets.ClientCert, targets.ClientKey = filepath.Join(pki, "ca.crt"), filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key")
	config, err := WriteLocalPrometheus(dir, targets)
	if err != nil {
		t.Fatal(err)
	}
	return dir, config
}

var localTargets = LocalTargets{Etcd: "127.0.0.1:2381", APIServer: "127.0.0.1:6443", ControllerManager: "127.0.0.1:10257", Scheduler: "127.0.0.1:10259", Prometheus: "127.0.0.1:9090"}

func TestPromtoolChecksLocalConfig(t *testing.T) {
	dir, config := writeLocal(t, localTargets)
	out := runPromtool(t, dir, "check", "config", config)
	if !strings.Contains(out, "rules found") {
		t.Errorf("promtool did not check the rules with the config:\n%s", out)
	}
}

func TestPromtoolChecksRules(t *testing.T) {
	runPromtool(t, "prometheus", "check", "rules", "rules.yml")
	runPromtool(t, "prometheus", "test", "rules", "rules_test.yml")
}

// The cluster variant holds kubernetes_sd_configs, which Debian's build of Prometheus leaves out:
// there promtool can only say so, and the file is checked as YAML here instead.
func TestClusterConfig(t *testing.T) {
	cmd := exec.Command(promtool(t), "check", "config", "--syntax-only", "prometheus-cluster.yml")
	cmd.Dir = "prometheus"
	out, err := cmd.CombinedOutput()
	switch {
	case err == nil:
	case strings.Contains(string(out), "field kubernetes_sd_configs not found"):
		t.Logf("this promtool has no Kubernetes service discovery (Debian's build); checked as YAML only")
	default:
		t.Errorf("promtool check config prometheus-cluster.yml: %v\n%s", err, out)
	}
	b, err := os.ReadFile("prometheus/prometheus-cluster.yml")
	if err != nil {
		t.Fatal(err)
	}
	local, cluster := jobNames(t, PrometheusConfig), jobNames(t, b)
	for _, job := range []string{JobFakelet, JobEtcd, JobAPIServer, JobControllerManager, JobScheduler} {
		if !slices.Contains(local, job) || !slices.Contains(cluster, job) {
			t.Errorf("job %s: in prometheus.yml %v, in prometheus-cluster.yml %v; the rules and dashboard need it in both",
				job, slices.Contains(local, job), slices.Contains(cluster, job))
		}
	}
}

func jobNames(t *testing.T, config []byte) []string {
	t.Helper()
	var c struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName string `yaml:"job_name"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(config, &c); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.RuleFiles, []string{RulesFile}) {
		t.Errorf("rule_files %v, want [%s]", c.RuleFiles, RulesFile)
	}
	var jobs []string
	for _, s := range c.ScrapeConfigs {
		jobs = append(jobs, s.JobName)
	}
	return jobs
}

func TestWriteLocalPrometheus(t *testing.T) {
	dir, config := writeLocal(t, localTargets)
	if config != filepath.Join(dir, ConfigFile) {
		t.Errorf("config at %s, want in %s", config, dir)
	}
	want := map[string][]string{
		JobFakelet: {DefaultFakeletTarget}, JobEtcd: {"127.0.0.1:2381"}, JobAPIServer: {"127.0.0.1:6443"},
		JobControllerManager: {"127.0.0.1:10257"}, JobScheduler: {"127.0.0.1:10259"}, JobPrometheus: {"127.0.0.1:9090"},
	}
	for job, targets := range want {
		if got := readTargets(t, dir, job); !slices.Equal(got, targets) {
			t.Errorf("%s targets %v, want %v", job, got, targets)
		}
	}
	for name, mode := range map[string]os.FileMode{"tls/admin.key": 0o600, "tls/ca.crt": 0o600, ConfigFile: 0o644, RulesFile: 0o644} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Error(err)
		} else if st.Mode().Perm() != mode {
			t.Errorf("%s has mode %v, want %v", name, st.Mode().Perm(), mode)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "tls/admin.key")); string(b) != "PEM of admin.key\n" {
		t.Errorf("tls/admin.key holds %q", b)
	}

	// Again on new ports, with two fakelets and no Prometheus self-scrape: every file replaced.
	next := LocalTargets{Fakelet: []string{"127.0.0.1:19464", "127.0.0.1:19465"}, Etcd: "127.0.0.1:1", APIServer: "127.0.0.1:2", ControllerManager: "127.0.0.1:3", Scheduler: "127.0.0.1:4",
		CACert: filepath.Join(dir, "tls/ca.crt"), ClientCert: filepath.Join(dir, "tls/admin.crt"), ClientKey: filepath.Join(dir, "tls/admin.key")}
	if _, err := WriteLocalPrometheus(dir, next); err != nil {
		t.Fatal(err)
	}
	if got := readTargets(t, dir, JobFakelet); !slices.Equal(got, next.Fakelet) {
		t.Errorf("fakelet targets %v after rewriting, want %v", got, next.Fakelet)
	}
	if got := readTargets(t, dir, JobPrometheus); len(got) != 0 {
		t.Errorf("prometheus targets %v, want none", got)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "targets"))
	if len(entries) != 6 {
		t.Errorf("targets/ holds %d files after rewriting, want 6 (no temporary files left)", len(entries))
	}

	if _, err := WriteLocalPrometheus(t.TempDir(), LocalTargets{Etcd: "x"}); err == nil {
		t.Error("WriteLocalPrometheus without the apiserver and controller manager targets succeeded")
	}
}

func readTargets(t *testing.T, dir, job string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "targets", job+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var groups []struct {
		Targets []string `json:"targets"`
	}
	if err := json.Unmarshal(b, &groups); err != nil {
		t.Fatalf("targets/%s.json: %v", job, err)
	}
	var out []string
	for _, g := range groups {
		out = append(out, g.Targets...)
	}
	return out
}
