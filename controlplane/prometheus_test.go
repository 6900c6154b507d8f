package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func stateWithPrometheus() *State {
	st := testState()
	st.Components = append(st.Components, ComponentState{
		Name: Prometheus, PID: 105, ProcStartTime: 1005, Args: []string{"/usr/bin/prometheus"}, Ports: map[string]int{"web": 40009},
	})
	return st
}

// The control plane's health does not depend on its Prometheus server; a running one is still
// stopped with the rest of a stale control plane.
func TestAssessLeavesPrometheusOut(t *testing.T) {
	st := stateWithPrometheus()
	running4 := fakeProcs{101: running(st.Components[0]), 102: running(st.Components[1]), 103: running(st.Components[2]),
		104: running(st.Components[3])}
	all := fakeProcs{105: running(st.Components[4])}
	for k, v := range running4 {
		all[k] = v
	}
	sick := func(_ context.Context, c ComponentState) error {
		if c.Name == Prometheus {
			return errors.New("not ready")
		}
		return nil
	}
	for _, tc := range []struct {
		name          string
		procs         fakeProcs
		wantSurvivors []string
	}{
		{"prometheus gone", running4, []string{Etcd, APIServer, ControllerManager, Scheduler}},
		{"prometheus running but not ready", all, []string{Etcd, APIServer, ControllerManager, Scheduler, Prometheus}},
	} {
		a := assess(context.Background(), st, tc.procs, sick)
		if !a.healthy {
			t.Errorf("%s: not healthy: %s", tc.name, a)
		}
		var survivors []string
		for _, c := range a.survivors {
			survivors = append(survivors, c.Name)
		}
		if !slices.Equal(survivors, tc.wantSurvivors) {
			t.Errorf("%s: survivors %v, want %v", tc.name, survivors, tc.wantSurvivors)
		}
	}
}

func TestPrometheusComponent(t *testing.T) {
	c := prometheusComponent("/usr/bin/prometheus", "/cp", 40009, []string{"--storage.tsdb.retention.time=2d"})
	want := []string{"/usr/bin/prometheus", "--config.file=/cp/prometheus/prometheus.yml", "--storage.tsdb.path=/cp/prometheus/data",
		"--web.listen-address=127.0.0.1:40009", "--storage.tsdb.retention.time=2d"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args %q, want %q", c.Args, want)
	}
	if c.HealthURL != "http://127.0.0.1:40009/-/ready" || c.MetricsURL != "http://127.0.0.1:40009/metrics" || c.Log != "/cp/prometheus.log" {
		t.Errorf("health %s, metrics %s, log %s", c.HealthURL, c.MetricsURL, c.Log)
	}
}

func TestFindPrometheusSaysHowToInstall(t *testing.T) {
	_, err := FindPrometheus(filepath.Join(t.TempDir(), "prometheus"))
	if err == nil || !strings.Contains(err.Error(), "apt-get install prometheus") {
		t.Errorf("FindPrometheus of a missing binary: %v", err)
	}
}

func TestWritePrometheusConfigFromState(t *testing.T) {
	dir := privateTempDir(t)
	pki := pkiPaths(dir)
	if err := os.MkdirAll(filepath.Dir(pki.CACert), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{pki.CACert, pki.AdminCert, pki.AdminKey} {
		if err := os.WriteFile(p, []byte(filepath.Base(p)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st := stateWithPrometheus()
	st.Components[0].MetricsURL = "http://127.0.0.1:40004/metrics"
	st.Components[1].MetricsURL = "https://127.0.0.1:40001/metrics"
	st.Components[2].MetricsURL = "https://127.0.0.1:40003/metrics"
	st.Components[3].MetricsURL = "https://127.0.0.1:40005/metrics"
	cp := &ControlPlane{Dir: dir, state: *st}
	config, err := cp.WritePrometheusConfig("", []string{"127.0.0.1:19464"})
	if err != nil {
		t.Fatal(err)
	}
	if config != filepath.Join(dir, "prometheus", "prometheus.yml") {
		t.Errorf("config written to %s", config)
	}
	for job, want := range map[string]string{
		"etcd": "127.0.0.1:40004", "kube-apiserver": "127.0.0.1:40001", "kube-controller-manager": "127.0.0.1:40003",
		"kube-scheduler": "127.0.0.1:40005",
		"fakelet":        "127.0.0.1:19464", "prometheus": "127.0.0.1:40009",
	} {
		b, err := os.ReadFile(filepath.Join(dir, "prometheus", "targets", job+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var groups []struct{ Targets []string }
		if err := json.Unmarshal(b, &groups); err != nil || len(groups) != 1 || !slices.Equal(groups[0].Targets, []string{want}) {
			t.Errorf("targets/%s.json = %s (%v), want %s", job, b, err, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "prometheus", "tls", "admin.key")); string(b) != "admin.key" {
		t.Errorf("tls/admin.key holds %q", b)
	}
	// Elsewhere, the Prometheus server beside the control plane is not scraped by the other one.
	other := t.TempDir()
	if _, err := cp.WritePrometheusConfig(other, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(other, "targets", "prometheus.json")); strings.Contains(string(b), "40009") {
		t.Errorf("targets/prometheus.json of another directory: %s", b)
	}
}
