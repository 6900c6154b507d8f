package controlplane

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"net"
	"os"
	"slices"
	"testing"

	"k8s.io/client-go/util/keyutil"
)

func TestEnsurePKI(t *testing.T) {
	dir := privateTempDir(t)
	p, ca, err := ensurePKI(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range p.files() {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatalf("PKI file missing: %v", err)
		}
		if isKey := bytes.Contains(must(os.ReadFile(f)), []byte("PRIVATE KEY")); isKey && st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	tests := []struct {
		name       string
		cert       string
		usage      x509.ExtKeyUsage
		serverName string
		wantCN     string
		wantOrg    []string
	}{
		{"apiserver on 127.0.0.1", p.APIServerCert, x509.ExtKeyUsageServerAuth, "127.0.0.1", "kube-apiserver", nil},
		{"apiserver on localhost", p.APIServerCert, x509.ExtKeyUsageServerAuth, "localhost", "kube-apiserver", nil},
		{"apiserver as the kubernetes Service", p.APIServerCert, x509.ExtKeyUsageServerAuth, serviceIP, "kube-apiserver", nil},
		{"apiserver in cluster DNS", p.APIServerCert, x509.ExtKeyUsageServerAuth, "kubernetes.default.svc", "kube-apiserver", nil},
		{"controller manager serving", p.ControllerManagerCert, x509.ExtKeyUsageServerAuth, "127.0.0.1", "kube-controller-manager", nil},
		{"controller manager client", p.ControllerManagerClientCert, x509.ExtKeyUsageClientAuth, "", "system:kube-controller-manager", nil},
		{"scheduler serving", p.SchedulerCert, x509.ExtKeyUsageServerAuth, "127.0.0.1", "kube-scheduler", nil},
		{"scheduler client", p.SchedulerClientCert, x509.ExtKeyUsageClientAuth, "", "system:kube-scheduler", nil},
		{"admin", p.AdminCert, x509.ExtKeyUsageClientAuth, "", AdminUser, []string{"system:masters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert := parseCert(t, must(os.ReadFile(tt.cert)))
			opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{tt.usage}, DNSName: tt.serverName}
			if _, err := cert.Verify(opts); err != nil {
				t.Errorf("verify: %v", err)
			}
			if cert.Subject.CommonName != tt.wantCN || !slices.Equal(cert.Subject.Organization, tt.wantOrg) {
				t.Errorf("subject = %v, want CN=%s O=%v", cert.Subject, tt.wantCN, tt.wantOrg)
			}
		})
	}
	t.Run("service account key pair", func(t *testing.T) {
		key, err := keyutil.PrivateKeyFromFile(p.ServiceAccountKey)
		if err != nil {
			t.Fatal(err)
		}
		pubs, err := keyutil.PublicKeysFromFile(p.ServiceAccountPub)
		if err != nil || len(pubs) != 1 {
			t.Fatalf("public keys = %v, %v", pubs, err)
		}
		if !publicKeysEqual(key.(crypto.Signer).Public(), pubs[0]) {
			t.Error("service account public key does not match the private key")
		}
	})
	t.Run("apiserver IPs", func(t *testing.T) {
		cert := parseCert(t, must(os.ReadFile(p.APIServerCert)))
		if !slices.ContainsFunc(cert.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.ParseIP("127.0.0.1")) }) {
			t.Errorf("IPs = %v, want 127.0.0.1 among them", cert.IPAddresses)
		}
	})
}

func TestEnsurePKIReuse(t *testing.T) {
	dir := privateTempDir(t)
	first, _, err := ensurePKI(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	caBefore := must(os.ReadFile(first.CACert))
	saBefore := must(os.ReadFile(first.ServiceAccountKey))

	if _, _, err := ensurePKI(dir, true); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(caBefore, must(os.ReadFile(first.CACert))) || !bytes.Equal(saBefore, must(os.ReadFile(first.ServiceAccountKey))) {
		t.Error("ensurePKI(reuse) replaced a complete PKI")
	}

	os.Remove(first.AdminKey)
	if _, _, err := ensurePKI(dir, true); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(caBefore, must(os.ReadFile(first.CACert))) {
		t.Error("ensurePKI(reuse) kept an incomplete PKI")
	}

	caBefore = must(os.ReadFile(first.CACert))
	if _, _, err := ensurePKI(dir, false); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(caBefore, must(os.ReadFile(first.CACert))) {
		t.Error("ensurePKI without reuse kept the old CA")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A PKI kept (--keep-data) from before the scheduler was a component keeps its CA and service
// account key, and gets the scheduler's certificates from that CA.
func TestEnsurePKIReuseIssuesWhatAnOlderPKILacks(t *testing.T) {
	dir := t.TempDir()
	first, _, err := ensurePKI(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	caBefore, saBefore := must(os.ReadFile(first.CACert)), must(os.ReadFile(first.ServiceAccountKey))
	for _, f := range []string{first.SchedulerCert, first.SchedulerKey, first.SchedulerClientCert, first.SchedulerClientKey} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	p, ca, err := ensurePKI(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(caBefore, must(os.ReadFile(p.CACert))) || !bytes.Equal(saBefore, must(os.ReadFile(p.ServiceAccountKey))) {
		t.Fatal("ensurePKI(reuse) replaced the CA and service account key of a PKI that lacked only the scheduler's certificates")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	cert := parseCert(t, must(os.ReadFile(p.SchedulerClientCert)))
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil ||
		cert.Subject.CommonName != "system:kube-scheduler" {
		t.Errorf("scheduler client certificate %v: %v", cert.Subject, err)
	}
	if _, err := os.Stat(p.SchedulerKey); err != nil {
		t.Errorf("scheduler serving key: %v", err)
	}
}
