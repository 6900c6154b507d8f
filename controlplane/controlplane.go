package controlplane

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// DefaultDir is where a control plane lives unless Options.Dir says otherwise, relative to the
// working directory.
const DefaultDir = ".fakelet/controlplane"

// ControlPlane is a running local control plane.
type ControlPlane struct {
	// Dir holds the state, logs, kubeconfigs, PKI and etcd data.
	Dir string
	// Kubeconfig is the path of the admin kubeconfig (AdminUser in system:masters).
	Kubeconfig string
	// APIServerURL is https://127.0.0.1:<port>.
	APIServerURL string
	// PKI holds the paths of the CA, serving and client certificates.
	PKI PKI

	state State
	admin credentials
	// userFile records this ControlPlane as a user of the control plane until Leave (users.go).
	userFile string

	caOnce sync.Once
	ca     *CA
	caErr  error
}

// State returns a copy of the recorded state: pids, ports, command lines, start time.
func (cp *ControlPlane) State() State {
	s := cp.state
	s.Components = append([]ComponentState(nil), cp.state.Components...)
	return s
}

// AdminConfig returns a new client configuration for AdminUser. The caller owns it (set QPS, Burst,
// UserAgent as needed); client-go's defaults apply otherwise.
func (cp *ControlPlane) AdminConfig() *rest.Config { return cp.admin.restConfig() }

// MetricsEndpoint is a component's Prometheus endpoint.
type MetricsEndpoint struct {
	Component string
	URL       string
}

// MetricsEndpoints lists the /metrics URL of each component, in start order: etcd's plain HTTP
// --listen-metrics-urls port, and the apiserver's and controller manager's secure ports, which
// need MetricsClient.
func (cp *ControlPlane) MetricsEndpoints() []MetricsEndpoint {
	var eps []MetricsEndpoint
	for _, c := range cp.state.Components {
		eps = append(eps, MetricsEndpoint{Component: c.Name, URL: c.MetricsURL})
	}
	return eps
}

// MetricsClient returns an HTTP client that can scrape every MetricsEndpoint: it trusts the
// control plane's CA and presents the admin client certificate.
func (cp *ControlPlane) MetricsClient() (*http.Client, error) {
	c, err := adminHTTPClient(cp.admin)
	if err != nil {
		return nil, err
	}
	c.Timeout = metricsTimeout
	return c, nil
}

// metricsTimeout bounds one scrape. A busy apiserver with thousands of nodes takes seconds to write
// its /metrics (megabytes of histograms): at 5000 nodes on 2 cores the probes' 2 s failed the bench.
const metricsTimeout = 30 * time.Second

// CA returns the control plane's certificate authority, to issue more client certificates.
func (cp *ControlPlane) CA() (*CA, error) {
	cp.caOnce.Do(func() { cp.ca, cp.caErr = LoadCA(cp.PKI.CACert, cp.PKI.CAKey) })
	return cp.ca, cp.caErr
}

// IssueClientCert issues a client certificate for user in groups, signed by the control plane's CA,
// valid for DefaultCertValidity. For a kubelet's identity: IssueClientCert(NodeUser(name),
// []string{NodesGroup}).
func (cp *ControlPlane) IssueClientCert(user string, groups []string) (certPEM, keyPEM []byte, err error) {
	ca, err := cp.CA()
	if err != nil {
		return nil, nil, err
	}
	return ca.IssueClientCert(user, groups, 0)
}

// ClientConfig returns a client configuration authenticating as user in groups with a new client
// certificate, for example a kubelet's: ClientConfig(NodeUser(name), NodesGroup).
func (cp *ControlPlane) ClientConfig(user string, groups ...string) (*rest.Config, error) {
	certPEM, keyPEM, err := cp.IssueClientCert(user, groups)
	if err != nil {
		return nil, fmt.Errorf("client configuration for %s: %w", user, err)
	}
	c := cp.admin
	c.user, c.certPEM, c.keyPEM = user, certPEM, keyPEM
	return c.restConfig(), nil
}

// Attach returns the control plane running in dir, as recorded by the Up that started it. It fails if
// there is none or if any of its processes is gone; it does not check health (Status does).
func Attach(dir string) (*ControlPlane, error) {
	dir, err := checkedDir(dir)
	if err != nil {
		return nil, err
	}
	st, err := readState(dir)
	if err != nil {
		return nil, fmt.Errorf("attach to control plane in %s: %w", dir, err)
	}
	if !st.complete() {
		return nil, fmt.Errorf("attach to control plane in %s: it did not finish starting; run `fakelet controlplane up`", dir)
	}
	for _, c := range st.Components {
		if s := inspect(procfs{}, c); s != procOurs && !isOptional(c.Name) {
			return nil, fmt.Errorf("attach to control plane in %s: %s (pid %d) %s; run `fakelet controlplane up`", dir, c.Name, c.PID, s)
		}
	}
	return newControlPlane(dir, st)
}

func newControlPlane(dir string, st *State) (*ControlPlane, error) {
	pki := pkiPaths(dir)
	admin, err := readCredentials(st.APIServerURL, pki.CACert, pki.AdminCert, pki.AdminKey, AdminUser)
	if err != nil {
		return nil, err
	}
	return &ControlPlane{
		Dir:          dir,
		Kubeconfig:   KubeconfigPath(dir),
		APIServerURL: st.APIServerURL,
		PKI:          pki,
		state:        *st,
		admin:        admin,
	}, nil
}

// checkedDir is absDir, refused by checkDir if it exists; one that does not exist is for the caller
// to report.
func checkedDir(dir string) (string, error) {
	dir, err := absDir(dir)
	if err != nil {
		return "", err
	}
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return dir, nil
	}
	return dir, checkDir(dir)
}

func absDir(dir string) (string, error) {
	if dir == "" {
		dir = DefaultDir
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve control plane directory %s: %w", dir, err)
	}
	return abs, nil
}
