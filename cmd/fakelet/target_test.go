package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeTestKubeconfig writes a kubeconfig with one context "test" for server, a CA and a token.
func writeTestKubeconfig(t *testing.T, insecure bool) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cluster := &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", InsecureSkipTLSVerify: insecure}
	if !insecure {
		cluster.CertificateAuthorityData = []byte("-----BEGIN CERTIFICATE-----\nnot used\n-----END CERTIFICATE-----\n")
	}
	cfg.Clusters["test"] = cluster
	cfg.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: "secret-token"}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTLSVerificationIsOnUnlessTheFlagSaysOtherwise(t *testing.T) {
	t.Run("verified by default", func(t *testing.T) {
		tgt, err := kubeconfigTarget(targetFlags{kubeconfig: writeTestKubeconfig(t, false)})
		if err != nil {
			t.Fatal(err)
		}
		if tgt.Config.Insecure || len(tgt.Config.CAData) == 0 {
			t.Errorf("Insecure %v, CA %d bytes: want verification against the kubeconfig's CA", tgt.Config.Insecure, len(tgt.Config.CAData))
		}
		if strings.Contains(tgt.Description, "OFF") {
			t.Errorf("description %q", tgt.Description)
		}
	})
	t.Run("--insecure-skip-tls-verify", func(t *testing.T) {
		tgt, err := kubeconfigTarget(targetFlags{kubeconfig: writeTestKubeconfig(t, false), insecure: true})
		if err != nil {
			t.Fatal(err)
		}
		if !tgt.Config.Insecure || len(tgt.Config.CAData) != 0 {
			t.Errorf("Insecure %v, CA %d bytes: want verification off", tgt.Config.Insecure, len(tgt.Config.CAData))
		}
		if !strings.Contains(tgt.Description, "TLS verification OFF (--insecure-skip-tls-verify)") {
			t.Errorf("the target's description %q does not say that TLS verification is off", tgt.Description)
		}
	})
	t.Run("a kubeconfig that skips verification is refused", func(t *testing.T) {
		_, err := kubeconfigTarget(targetFlags{kubeconfig: writeTestKubeconfig(t, true)})
		if err == nil || !strings.Contains(err.Error(), "unless --insecure-skip-tls-verify is given") {
			t.Errorf("error %v, want a refusal naming the flag", err)
		}
	})
	t.Run("unless the flag agrees", func(t *testing.T) {
		tgt, err := kubeconfigTarget(targetFlags{kubeconfig: writeTestKubeconfig(t, true), insecure: true})
		if err != nil || !tgt.Config.Insecure {
			t.Errorf("Insecure %v, %v", tgt != nil && tgt.Config.Insecure, err)
		}
	})
}

// TestPlainHTTPServerIsWarnedAbout: a kubeconfig whose server is http:// gets a warning before the
// run and its target line says so; an https:// one does not.
func TestPlainHTTPServerIsWarnedAbout(t *testing.T) {
	for _, tc := range []struct {
		server string
		plain  bool
	}{{"http://127.0.0.1:8080", true}, {"https://127.0.0.1:6443", false}} {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: tc.server}
		cfg.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: "secret-token"}
		cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
		cfg.CurrentContext = "test"
		path := filepath.Join(t.TempDir(), "kubeconfig")
		if err := clientcmd.WriteToFile(*cfg, path); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		tgt, err := resolveTarget(t.Context(), targetFlags{kubeconfig: path}, &out)
		if err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(out.String(), "warning: kubeconfig context test talks to "+tc.server+" over plain HTTP")
		if warned != tc.plain || strings.Contains(tgt.Description, "plain HTTP") != tc.plain {
			t.Errorf("%s: warning %q, target %q; want a warning and a mention: %v", tc.server, out.String(), tgt.Description, tc.plain)
		}
		if strings.Contains(out.String(), "secret-token") {
			t.Errorf("the warning printed the token")
		}
	}
}
