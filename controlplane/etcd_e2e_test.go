package controlplane

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestE2EEtcdRefusesClientsWithoutItsCertificate: etcd's client and peer ports speak TLS only and
// let in only a client certificate of etcd's own CA: plain HTTP, TLS without a certificate, and
// the admin certificate of the cluster's CA are refused; the apiserver's etcd client certificate
// is let in.
func TestE2EEtcdRefusesClientsWithoutItsCertificate(t *testing.T) {
	requireBinaries(t)
	t.Parallel()
	cp := upForTest(t, privateTempDir(t), Options{})
	st := cp.State()
	etcd, ok := st.Component(Etcd)
	if !ok {
		t.Fatal("no etcd in the state")
	}
	etcdCA := x509.NewCertPool()
	caPEM, err := os.ReadFile(cp.PKI.EtcdCACert)
	if err != nil || !etcdCA.AppendCertsFromPEM(caPEM) {
		t.Fatalf("read etcd's CA: %v", err)
	}
	pair := func(cert, key string) []tls.Certificate {
		c, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return []tls.Certificate{c}
	}
	// get returns what the server answered, or err if it refused the connection: a failed TLS
	// handshake, or Go's answer to plain HTTP on a TLS port.
	get := func(url string, certs []tls.Certificate) (string, error) {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: etcdCA, Certificates: certs}}}
		defer client.CloseIdleConnections()
		resp, err := client.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusBadRequest && strings.Contains(string(b), "HTTPS server") {
			return "", fmt.Errorf("%s: %s", resp.Status, b)
		}
		return fmt.Sprintf("%s %s", resp.Status, b), nil
	}
	for _, port := range []string{"client", "peer"} {
		addr := fmt.Sprintf("127.0.0.1:%d", etcd.Ports[port])
		if body, err := get("http://"+addr+"/health", nil); err == nil {
			t.Errorf("%s port over plain HTTP answered %q, want it refused", port, body)
		}
		if body, err := get("https://"+addr+"/health", nil); err == nil {
			t.Errorf("%s port over TLS without a client certificate answered %q, want it refused", port, body)
		} else {
			t.Logf("%s port without a client certificate: %v", port, err)
		}
		if body, err := get("https://"+addr+"/health", pair(cp.PKI.AdminCert, cp.PKI.AdminKey)); err == nil {
			t.Errorf("%s port with the cluster CA's admin certificate answered %q, want it refused", port, body)
		}
	}
	body, err := get(fmt.Sprintf("https://127.0.0.1:%d/health", etcd.Ports["client"]), pair(cp.PKI.APIServerEtcdClientCert, cp.PKI.APIServerEtcdClientKey))
	if err != nil || !strings.Contains(body, `"health":"true"`) {
		t.Errorf("client port with the apiserver's certificate: %q, %v; want it healthy", body, err)
	}
}
