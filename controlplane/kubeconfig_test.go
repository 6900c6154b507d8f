package controlplane

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestWriteKubeconfig(t *testing.T) {
	dir := privateTempDir(t)
	p, _, err := ensurePKI(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	const server = "https://127.0.0.1:6443"
	creds, err := readCredentials(server, p.CACert, p.AdminCert, p.AdminKey, AdminUser)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kubeconfig")
	// An existing, world-readable file must end up private: it holds a system:masters key.
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeKubeconfig(path, creds); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode = %v, want 0600", st.Mode().Perm())
	}

	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != kubeconfigContext {
		t.Errorf("current context = %q, want %q", cfg.CurrentContext, kubeconfigContext)
	}
	// What a client such as kubectl builds from the file is what restConfig returns.
	fromFile, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	direct := creds.restConfig()
	if fromFile.Host != server || direct.Host != server {
		t.Errorf("hosts = %q (file), %q (direct), want %q", fromFile.Host, direct.Host, server)
	}
	for _, c := range []struct {
		name             string
		file, direct, on []byte
	}{
		{"CA", fromFile.CAData, direct.CAData, must(os.ReadFile(p.CACert))},
		{"client certificate", fromFile.CertData, direct.CertData, must(os.ReadFile(p.AdminCert))},
		{"client key", fromFile.KeyData, direct.KeyData, must(os.ReadFile(p.AdminKey))},
	} {
		if !bytes.Equal(c.file, c.on) || !bytes.Equal(c.direct, c.on) {
			t.Errorf("%s differs from the PKI file", c.name)
		}
	}
}

func TestReadCredentialsMissingFile(t *testing.T) {
	dir := privateTempDir(t)
	_, err := readCredentials("https://x", filepath.Join(dir, "ca.crt"), "a", "b", "someone")
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("someone")) {
		t.Errorf("error = %v, want one naming the user", err)
	}
}

// A hollow kubelet's kubeconfig authenticates as that node, in system:nodes, with a certificate the
// control plane's CA signed.
func TestWriteNodeKubeconfig(t *testing.T) {
	dir := privateTempDir(t)
	p, _, err := ensurePKI(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := readCredentials("https://127.0.0.1:6443", p.CACert, p.AdminCert, p.AdminKey, AdminUser)
	if err != nil {
		t.Fatal(err)
	}
	cp := &ControlPlane{Dir: dir, PKI: p, admin: admin}
	path := filepath.Join(dir, "hollow-0.kubeconfig")
	if err := cp.WriteNodeKubeconfig(path, "hollow-0"); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(cfg.CertData)
	if block == nil {
		t.Fatal("no certificate in the kubeconfig")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:node:hollow-0" || !slices.Equal(cert.Subject.Organization, []string{NodesGroup}) {
		t.Errorf("subject %v, want CN system:node:hollow-0, O system:nodes", cert.Subject)
	}
	ca, err := LoadCA(p.CACert, p.CAKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.CheckSignatureFrom(ca.cert); err != nil {
		t.Errorf("not signed by the control plane's CA: %v", err)
	}
	if !bytes.Equal(cfg.CAData, must(os.ReadFile(p.CACert))) || cfg.Host != admin.server {
		t.Errorf("server %q or its CA differ from the admin kubeconfig's", cfg.Host)
	}
}
