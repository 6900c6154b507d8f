package controlplane

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestWriteKubeconfig(t *testing.T) {
	dir := t.TempDir()
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
	dir := t.TempDir()
	_, err := readCredentials("https://x", filepath.Join(dir, "ca.crt"), "a", "b", "someone")
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("someone")) {
		t.Errorf("error = %v, want one naming the user", err)
	}
}
