package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// LocalTargets is what a Prometheus server next to a local control plane scrapes.
type LocalTargets struct {
	// Fakelet are the host:port of each fakelet process's --metrics-addr; nil means
	// DefaultFakeletTarget.
	Fakelet []string
	// Etcd, APIServer, ControllerManager and Scheduler are each component's metrics host:port.
	// Etcd serves plain HTTP, the other three HTTPS.
	Etcd, APIServer, ControllerManager, Scheduler string
	// Prometheus is the server's own host:port, so that it scrapes itself; empty leaves it out.
	Prometheus string
	// CACert verifies the apiserver's, the controller manager's and the scheduler's serving certificates;
	// ClientCert and ClientKey authenticate the scrapes. PEM files, copied into tls/.
	CACert, ClientCert, ClientKey string
}

// Job names of prometheus.yml, and the files under targets/ that list their targets.
const (
	JobFakelet           = "fakelet"
	JobEtcd              = "etcd"
	JobAPIServer         = "kube-apiserver"
	JobControllerManager = "kube-controller-manager"
	JobScheduler         = "kube-scheduler"
	JobPrometheus        = "prometheus"
)

// Files of a rendered configuration, relative to its directory.
const (
	ConfigFile = "prometheus.yml"
	RulesFile  = "rules.yml"
)

// WriteLocalPrometheus writes into dir what prometheus.yml needs to scrape t: prometheus.yml,
// rules.yml, targets/<job>.json for each job and tls/ with the CA and client certificate. It returns
// the path of prometheus.yml. Writing again (the control plane came up on new ports) replaces
// each file atomically; a running Prometheus picks the new targets up by itself.
func WriteLocalPrometheus(dir string, t LocalTargets) (string, error) {
	if t.Etcd == "" || t.APIServer == "" || t.ControllerManager == "" || t.Scheduler == "" {
		return "", errors.New("write Prometheus configuration: etcd, kube-apiserver, kube-controller-manager and kube-scheduler targets are all required")
	}
	if len(t.Fakelet) == 0 {
		t.Fakelet = []string{DefaultFakeletTarget}
	}
	for _, sub := range []string{"targets", "tls"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return "", fmt.Errorf("write Prometheus configuration: %w", err)
		}
	}
	var self []string
	if t.Prometheus != "" {
		self = []string{t.Prometheus}
	}
	for job, targets := range map[string][]string{
		JobFakelet:           t.Fakelet,
		JobEtcd:              {t.Etcd},
		JobAPIServer:         {t.APIServer},
		JobControllerManager: {t.ControllerManager},
		JobScheduler:         {t.Scheduler},
		JobPrometheus:        self,
	} {
		b, err := fileSD(targets)
		if err != nil {
			return "", err
		}
		if err := writeFile(filepath.Join(dir, "targets", job+".json"), b, 0o644); err != nil {
			return "", err
		}
	}
	for name, src := range map[string]string{"ca.crt": t.CACert, "admin.crt": t.ClientCert, "admin.key": t.ClientKey} {
		b, err := os.ReadFile(src)
		if err != nil {
			return "", fmt.Errorf("write Prometheus configuration: %w", err)
		}
		if err := writeFile(filepath.Join(dir, "tls", name), b, 0o600); err != nil {
			return "", err
		}
	}
	if err := writeFile(filepath.Join(dir, RulesFile), PrometheusRules, 0o644); err != nil {
		return "", err
	}
	config := filepath.Join(dir, ConfigFile)
	return config, writeFile(config, PrometheusConfig, 0o644)
}

// fileSD is Prometheus's file-based service discovery format: one group of targets, no extra labels.
func fileSD(targets []string) ([]byte, error) {
	type group struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels,omitempty"`
	}
	groups := []group{}
	if len(targets) > 0 {
		groups = append(groups, group{Targets: targets})
	}
	b, err := json.MarshalIndent(groups, "", "  ")
	return append(b, '\n'), err
}

// writeFile replaces path atomically: Prometheus never reads half a target list.
func writeFile(path string, b []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
