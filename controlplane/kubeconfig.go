package controlplane

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigContext names the cluster, user and context of every kubeconfig written here.
const kubeconfigContext = "fakelet"

// credentials is one client identity of the local control plane, PEM encoded.
type credentials struct {
	server                 string
	caPEM, certPEM, keyPEM []byte
	user                   string
}

// readCredentials reads a client certificate and key issued by the CA in caFile.
func readCredentials(server, caFile, certFile, keyFile, user string) (credentials, error) {
	c := credentials{server: server, user: user}
	for _, f := range []struct {
		path string
		dst  *[]byte
	}{{caFile, &c.caPEM}, {certFile, &c.certPEM}, {keyFile, &c.keyPEM}} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			return c, fmt.Errorf("read credentials of %s: %w", user, err)
		}
		*f.dst = b
	}
	return c, nil
}

// writeKubeconfig writes a kubeconfig for c with every certificate and key embedded, so the file works
// when copied elsewhere and does not break when DIR/pki is regenerated under a running client.
func writeKubeconfig(path string, c credentials) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[kubeconfigContext] = &clientcmdapi.Cluster{
		Server:                   c.server,
		CertificateAuthorityData: c.caPEM,
	}
	cfg.AuthInfos[c.user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: c.certPEM,
		ClientKeyData:         c.keyPEM,
	}
	cfg.Contexts[kubeconfigContext] = &clientcmdapi.Context{Cluster: kubeconfigContext, AuthInfo: c.user}
	cfg.CurrentContext = kubeconfigContext
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encode kubeconfig for %s: %w", c.user, err)
	}
	// 0600 also if the file existed with looser bits: it holds a system:masters key.
	if err := writeFileNoFollow(path, b, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig for %s to %s: %w", c.user, path, err)
	}
	return nil
}

// restConfig is the client configuration for c, the same a client would build from its kubeconfig.
func (c credentials) restConfig() *rest.Config {
	return &rest.Config{
		Host: c.server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   c.caPEM,
			CertData: c.certPEM,
			KeyData:  c.keyPEM,
		},
	}
}

// WriteNodeKubeconfig writes to path a kubeconfig for the kubelet of node: a new client certificate
// for NodeUser(node) in NodesGroup signed by the control plane's CA, embedded, as a kubelet's
// bootstrap leaves it. A hollow kubelet (kubemark) started with it is authorized by the Node
// authorizer and classified by API Priority and Fairness as a real one.
func (cp *ControlPlane) WriteNodeKubeconfig(path, node string) error {
	certPEM, keyPEM, err := cp.IssueClientCert(NodeUser(node), []string{NodesGroup})
	if err != nil {
		return fmt.Errorf("kubeconfig for node %s: %w", node, err)
	}
	c := cp.admin
	c.user, c.certPEM, c.keyPEM = NodeUser(node), certPEM, keyPEM
	return writeKubeconfig(path, c)
}
