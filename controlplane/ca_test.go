package controlplane

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func testCA(t *testing.T) (*CA, []byte) {
	t.Helper()
	ca, keyPEM, err := newCA("test-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ca, keyPEM
}

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("no PEM block in %q", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestIssue(t *testing.T) {
	ca, _ := testCA(t)
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	tests := []struct {
		name      string
		req       CertRequest
		usage     x509.ExtKeyUsage
		dnsName   string // verified as a server name when set
		wantErr   string
		wantOrg   []string
		wantValid time.Duration
	}{
		{
			name:      "kubelet client",
			req:       CertRequest{CommonName: NodeUser("fakelet-00001"), Organization: []string{NodesGroup}, Client: true},
			usage:     x509.ExtKeyUsageClientAuth,
			wantOrg:   []string{"system:nodes"},
			wantValid: DefaultCertValidity,
		},
		{
			name:      "short-lived client",
			req:       CertRequest{CommonName: "alice", Client: true, Validity: time.Hour},
			usage:     x509.ExtKeyUsageClientAuth,
			wantValid: time.Hour,
		},
		{
			name:      "serving for localhost",
			req:       CertRequest{CommonName: "srv", Server: true, DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}},
			usage:     x509.ExtKeyUsageServerAuth,
			dnsName:   "localhost",
			wantValid: DefaultCertValidity,
		},
		{
			name:      "serving for 127.0.0.1",
			req:       CertRequest{CommonName: "srv", Server: true, IPs: []net.IP{net.ParseIP("127.0.0.1")}},
			usage:     x509.ExtKeyUsageServerAuth,
			dnsName:   "127.0.0.1",
			wantValid: DefaultCertValidity,
		},
		{name: "no common name", req: CertRequest{Client: true}, wantErr: "empty common name"},
		{name: "no usage", req: CertRequest{CommonName: "x"}, wantErr: "neither client nor server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certPEM, keyPEM, err := ca.Issue(tt.req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Issue() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(keyPEM), "PRIVATE KEY") {
				t.Errorf("key PEM = %q", keyPEM)
			}
			cert := parseCert(t, certPEM)
			if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{tt.usage}, DNSName: tt.dnsName}); err != nil {
				t.Errorf("verify against the CA: %v", err)
			}
			if cert.Subject.CommonName != tt.req.CommonName || !slices.Equal(cert.Subject.Organization, tt.wantOrg) {
				t.Errorf("subject = %v, want CN=%s O=%v", cert.Subject, tt.req.CommonName, tt.wantOrg)
			}
			if got := cert.NotAfter.Sub(cert.NotBefore) - clockSkew; got < tt.wantValid-time.Minute || got > tt.wantValid+time.Minute {
				t.Errorf("validity = %s, want %s", got, tt.wantValid)
			}
			if !cert.NotBefore.Before(time.Now()) {
				t.Errorf("NotBefore %s is not in the past", cert.NotBefore)
			}
		})
	}
}

func TestLoadCA(t *testing.T) {
	ca, keyPEM := testCA(t)
	other, otherKeyPEM := testCA(t)
	leaf, leafKey, err := ca.IssueClientCert("bob", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := privateTempDir(t)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name       string
		cert, key  []byte
		wantErr    string
		wantSubjCN string
	}{
		{name: "matching pair", cert: ca.certPEM, key: keyPEM, wantSubjCN: "test-ca"},
		{name: "key of another CA", cert: ca.certPEM, key: otherKeyPEM, wantErr: "does not match"},
		{name: "leaf certificate", cert: leaf, key: leafKey, wantErr: "not a CA"},
		{name: "not PEM", cert: []byte("hello"), key: keyPEM, wantErr: "no CERTIFICATE"},
		{name: "bad key", cert: other.certPEM, key: []byte("junk"), wantErr: "parse CA key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadCA(write("ca.crt", tt.cert), write("ca.key", tt.key))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadCA() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.cert.Subject.CommonName != tt.wantSubjCN {
				t.Errorf("CA CN = %q, want %q", got.cert.Subject.CommonName, tt.wantSubjCN)
			}
			// A loaded CA must still sign what the original verifies.
			certPEM, _, err := got.IssueClientCert("carol", []string{"g"}, 0)
			if err != nil {
				t.Fatal(err)
			}
			roots := x509.NewCertPool()
			roots.AddCert(ca.cert)
			if _, err := parseCert(t, certPEM).Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("verify certificate from loaded CA: %v", err)
			}
		})
	}
	if _, err := LoadCA(filepath.Join(dir, "missing.crt"), filepath.Join(dir, "ca.key")); err == nil {
		t.Error("LoadCA of a missing file succeeded")
	}
}

// BenchmarkIssueClientCert measures what per-node kubelet credentials cost a fleet at start.
func BenchmarkIssueClientCert(b *testing.B) {
	ca, _, err := newCA("bench-ca", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		if _, _, err := ca.IssueClientCert(NodeUser("fakelet-"+strconv.Itoa(i)), []string{NodesGroup}, 0); err != nil {
			b.Fatal(err)
		}
	}
}
