package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
)

// The fakelet binary as a user runs it: signals, credentials and certificates.

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// fakeletBinary builds cmd/fakelet once for the package's tests.
func fakeletBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binPath = filepath.Join(filepath.Dir(sharedDir), "fakelet")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", binPath, "fakelet.dev/fakelet/cmd/fakelet").CombinedOutput()
		if err != nil {
			binErr = errors.New("build fakelet: " + err.Error() + "\n" + string(out))
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// syncBuffer is a bytes.Buffer that a process writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fakeletProcess is a running fakelet.
type fakeletProcess struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	exited         chan struct{}
	err            error
}

// startFakelet runs the binary with args in a temporary directory (reports land there) and kills it
// if it is still running when the test ends.
func startFakelet(t *testing.T, args ...string) *fakeletProcess {
	t.Helper()
	p := &fakeletProcess{cmd: exec.Command(fakeletBinary(t), args...), exited: make(chan struct{})}
	p.cmd.Dir = t.TempDir()
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
		t.Logf("fakelet %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), p.stdout.String(), p.stderr.String())
	})
	return p
}

// wait waits up to timeout for the process to exit and returns its exit code, or -1 if it is still
// running.
func (p *fakeletProcess) wait(timeout time.Duration) int {
	select {
	case <-p.exited:
	case <-time.After(timeout):
		return -1
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		return exit.ExitCode()
	}
	return 0
}

// output is everything the process printed.
func (p *fakeletProcess) output() string { return p.stdout.String() + p.stderr.String() }

// readyNodes counts the Ready Nodes of fleet.
func readyNodes(t *testing.T, c kubernetes.Interface, fleetName string) int {
	n := 0
	for _, node := range fleetNodes(t, c, fleetName) {
		if readyCondition(&node).Status == corev1.ConditionTrue {
			n++
		}
	}
	return n
}

// leasesNamed counts the Leases in kube-node-lease named PREFIX-*.
func leasesNamed(t *testing.T, c kubernetes.Interface, prefix string) int {
	t.Helper()
	list, err := c.CoordinationV1().Leases(agent.LeaseNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range list.Items {
		if strings.HasPrefix(l.Name, prefix+"-") {
			n++
		}
	}
	return n
}

// foreignNode creates a Node that is not the fleet's and returns a check that it is unchanged.
func foreignNode(t *testing.T, c kubernetes.Interface, name string, labels map[string]string) func() {
	t.Helper()
	ctx := context.Background()
	n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return func() { t.Helper(); untouchedByFakelet(t, c, n) }
}

// untouchedByFakelet fails the test if fakelet deleted, replaced or wrote to the Node before. The
// node lifecycle controller may well have written to it (a Node that never posts status gets
// tainted), so its resource version is no guide: the field managers are. fakelet's requests carry
// the user agents "fakelet" and "kubelet/... fakelet", which name their field managers.
func untouchedByFakelet(t *testing.T, c kubernetes.Interface, before *corev1.Node) {
	t.Helper()
	now, err := c.CoreV1().Nodes().Get(context.Background(), before.Name, metav1.GetOptions{})
	if err != nil {
		t.Errorf("foreign node %s: %v", before.Name, err)
		return
	}
	if now.UID != before.UID {
		t.Errorf("foreign node %s was deleted and created again", before.Name)
	}
	if !maps.Equal(now.Labels, before.Labels) {
		t.Errorf("foreign node %s: labels %v, were %v", before.Name, now.Labels, before.Labels)
	}
	for _, m := range now.ManagedFields {
		if strings.HasPrefix(m.Manager, "fakelet") || strings.HasPrefix(m.Manager, "kubelet") {
			t.Errorf("foreign node %s was written by %s (%s at %v)", before.Name, m.Manager, m.Operation, m.Time)
		}
	}
}

// secrets returns what of a kubeconfig must never be printed: key and token, as in the file and as
// PEM lines.
func secrets(t *testing.T, kubeconfig string) []string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range cfg.AuthInfos {
		if a.Token != "" {
			out = append(out, a.Token)
		}
		if len(a.ClientKeyData) > 0 {
			out = append(out, base64.StdEncoding.EncodeToString(a.ClientKeyData))
			for _, line := range strings.Split(string(a.ClientKeyData), "\n") {
				if len(line) > 40 && !strings.HasPrefix(line, "-----") {
					out = append(out, line)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no secret to look for", kubeconfig)
	}
	return out
}

func noSecrets(t *testing.T, output string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(output, s) {
			t.Errorf("the output holds a credential (%d characters starting %q)", len(s), s[:8])
		}
	}
}

// TestSIGTERMStopsTheRunAndCleansUp: on SIGTERM, `fakelet run` stops within 5 s, prints its summary,
// writes its report and deletes the fleet's Nodes and Leases, and nothing but them; it serves its
// metrics on loopback and prints no credential, even with client-go's own log on.
func TestSIGTERMStopsTheRunAndCleansUp(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	untouched := foreignNode(t, c, "sigterm-00100", map[string]string{"team": "prod"})
	reportDir := filepath.Join(t.TempDir(), "report")
	p := startFakelet(t, "run", "--kubeconfig", cp.Kubeconfig, "--nodes", "10", "--fleet", "sigterm", "--name-prefix", "sigterm",
		"--images", "5", "--metrics-addr", "127.0.0.1:0", "--out", reportDir, "--client-log")
	eventually(t, 90*time.Second, "10 Ready nodes", func() (bool, error) { return readyNodes(t, c, "sigterm") == 10, nil })
	eventually(t, 30*time.Second, "10 leases", func() (bool, error) { return leasesNamed(t, c, "sigterm") == 10, nil })

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	code := p.wait(5 * time.Second)
	if code == -1 {
		t.Fatal("fakelet run still running 5 s after SIGTERM")
	}
	t.Logf("stopped %v after SIGTERM, exit code %d", time.Since(begin).Round(time.Millisecond), code)
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0: the run was asked to stop and did", code)
	}
	for _, want := range []string{"fakelet run summary", "10 registered"} {
		if !strings.Contains(p.stdout.String(), want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	for _, want := range []string{"stopping:", "metrics: http://127.0.0.1:", "deleted the fleet's Nodes and Leases"} {
		if !strings.Contains(p.stderr.String(), want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(reportDir, "report.json")); err != nil {
		t.Errorf("no report after SIGTERM: %v", err)
	}
	if n := len(fleetNodes(t, c, "sigterm")); n != 0 {
		t.Errorf("%d of the fleet's nodes left after SIGTERM", n)
	}
	if n := leasesNamed(t, c, "sigterm"); n != 0 {
		t.Errorf("%d of the fleet's leases left after SIGTERM", n)
	}
	untouched()
	secret := secrets(t, cp.Kubeconfig)
	noSecrets(t, p.output(), secret)
	files, err := os.ReadDir(reportDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if b, err := os.ReadFile(filepath.Join(reportDir, f.Name())); err == nil {
			noSecrets(t, string(b), secret)
		}
	}
}

// TestSIGINTWithKeepLeavesTheFleet: with --keep, an interrupted run leaves its Nodes and Leases.
func TestSIGINTWithKeepLeavesTheFleet(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	t.Cleanup(func() {
		fleet.DeleteFleet(context.Background(), c, fleet.CleanupOptions{Fleet: "sigkeep", Force: true})
	})
	p := startFakelet(t, "run", "--kubeconfig", cp.Kubeconfig, "--nodes", "5", "--fleet", "sigkeep", "--name-prefix", "sigkeep",
		"--images", "5", "--metrics-addr", "", "--keep")
	eventually(t, 90*time.Second, "5 Ready nodes with leases", func() (bool, error) {
		return readyNodes(t, c, "sigkeep") == 5 && leasesNamed(t, c, "sigkeep") == 5, nil
	})
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(5 * time.Second); code != 0 {
		t.Fatalf("exit code %d within 5 s of SIGINT, want 0", code)
	}
	if n, l := len(fleetNodes(t, c, "sigkeep")), leasesNamed(t, c, "sigkeep"); n != 5 || l != 5 {
		t.Errorf("%d nodes and %d leases left with --keep, want 5 and 5", n, l)
	}
}

// TestSecondSignalExitsAtOnce: a second signal while the first one's cleanup runs ends the process
// at once, with exit code 130.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	t.Cleanup(func() {
		fleet.DeleteFleet(context.Background(), c, fleet.CleanupOptions{Fleet: "sigtwice", Force: true})
	})
	// Enough nodes that the cleanup the first signal starts takes a while.
	p := startFakelet(t, "run", "--kubeconfig", cp.Kubeconfig, "--nodes", "100", "--fleet", "sigtwice", "--name-prefix", "sigtwice",
		"--images", "5", "--metrics-addr", "", "--register-qps", "200")
	eventually(t, 120*time.Second, "100 Ready nodes", func() (bool, error) { return readyNodes(t, c, "sigtwice") == 100, nil })
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// Signals of one kind are not queued: wait until the first is taken before sending the second.
	eventually(t, 5*time.Second, "the first signal taken", func() (bool, error) {
		return strings.Contains(p.stderr.String(), "stopping:"), nil
	})
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatalf("second signal: %v (the process had already exited: the cleanup was too quick to interrupt)", err)
	}
	begin := time.Now()
	code := p.wait(time.Second)
	t.Logf("exit code %d, %v after the second signal", code, time.Since(begin).Round(time.Millisecond))
	if code != 130 {
		t.Errorf("exit code %d within 1 s of the second signal, want 130", code)
	}
}

// writeKubeconfig writes a kubeconfig for cfg (token or client certificate) to dir.
func writeKubeconfig(t *testing.T, cfg *rest.Config, caData []byte) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: caData}
	kc.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	kc.CurrentContext = "e2e"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTokenIsNeverPrinted runs fakelet with fakelet.yaml's ServiceAccount token, through a whole run
// and through a refusal: neither prints the token.
func TestTokenIsNeverPrinted(t *testing.T) {
	cp := controlPlane(t)
	cfg := serviceAccountConfig(t, cp)
	kubeconfig := writeKubeconfig(t, cfg, cfg.CAData)
	secret := secrets(t, kubeconfig)

	ok := startFakelet(t, "run", "--kubeconfig", kubeconfig, "--nodes", "3", "--fleet", "token", "--name-prefix", "token",
		"--images", "5", "--metrics-addr", "", "--duration", "15s", "--client-log")
	if code := ok.wait(2 * time.Minute); code != 0 {
		t.Errorf("run with the ServiceAccount token: exit code %d", code)
	}
	if !strings.Contains(ok.stdout.String(), "3 registered") {
		t.Errorf("the run did not register its 3 nodes")
	}
	noSecrets(t, ok.output(), secret)

	refused := startFakelet(t, "run", "--kubeconfig", kubeconfig, "--nodes", "3", "--fleet", "token", "--name-prefix", "token",
		"--identity", "fleet", "--metrics-addr", "", "--client-log")
	if code := refused.wait(time.Minute); code != 1 {
		t.Errorf("--identity=fleet without fleet-identity.yaml: exit code %d, want 1", code)
	}
	if !strings.Contains(refused.stderr.String(), "missing 14 permission(s)") { // the kubelet footprint's (TestCredentialWithoutPermissionsIsRefusedBeforeAnyWrite)
		t.Errorf("the refusal does not list the missing permissions")
	}
	noSecrets(t, refused.output(), secret)
}

// TestTLSVerificationFromTheCommandLine: a kubeconfig whose CA did not sign the apiserver's
// certificate is refused with a clear error; --insecure-skip-tls-verify lets the same run through and
// says that verification is off.
func TestTLSVerificationFromTheCommandLine(t *testing.T) {
	cp := controlPlane(t)
	kubeconfig := writeKubeconfig(t, cp.AdminConfig(), otherCA(t))

	refused := startFakelet(t, "run", "--kubeconfig", kubeconfig, "--nodes", "2", "--fleet", "tls", "--name-prefix", "tls",
		"--images", "5", "--metrics-addr", "", "--duration", "10s")
	if code := refused.wait(time.Minute); code != 1 {
		t.Errorf("exit code %d with an untrusted certificate, want 1", code)
	}
	if !strings.Contains(refused.stderr.String(), "not signed by the certificate authority in the kubeconfig") {
		t.Errorf("the refusal does not say why")
	}
	nothingWritten(t, admin(t, cp), "tls")

	insecure := startFakelet(t, "run", "--kubeconfig", kubeconfig, "--insecure-skip-tls-verify", "--nodes", "2", "--fleet", "tls",
		"--name-prefix", "tls", "--images", "5", "--metrics-addr", "", "--duration", "10s")
	if code := insecure.wait(time.Minute); code != 0 {
		t.Errorf("exit code %d with --insecure-skip-tls-verify, want 0", code)
	}
	if !strings.Contains(insecure.stderr.String(), "TLS verification OFF (--insecure-skip-tls-verify)") {
		t.Errorf("the run does not say that TLS verification is off")
	}
}
