package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/util/keyutil"
)

// Identities of the control plane's clients. The apiserver maps a client certificate's CN to the
// user and O to the groups.
const (
	// AdminUser is in system:masters, which RBAC lets do anything and API Priority and Fairness
	// classifies as exempt: an admin client never queues behind the fleet it observes.
	AdminUser  = "fakelet-admin"
	AdminGroup = "system:masters"
	kcmUser    = "system:kube-controller-manager" // the bootstrap RBAC policy binds this user
	// schedulerUser is bound by the bootstrap RBAC policy (system:kube-scheduler and
	// system:volume-scheduler) and classified by API Priority and Fairness's suggested FlowSchema
	// kube-scheduler, at priority level workload-high: the scheduler's requests queue apart from the
	// kubelets' (node-high, system) whose share fakelet measures.
	schedulerUser = "system:kube-scheduler"
	caName        = "fakelet-ca"
	etcdCAName    = "fakelet-etcd-ca"
	serviceCIDR   = "10.96.0.0/12" // kubeadm's default
	serviceIP     = "10.96.0.1"    // the first address of serviceCIDR: the kubernetes Service
	// clusterCIDR and nodeCIDRMaskSize are the pod network the controller manager cuts into one
	// podCIDR per Node: a /24 each (the controller manager's default, 254 pods), from the lower half
	// of 10.0.0.0/8, clear of the nodes' own addresses (10.128.0.1 on, agent.Template.FirstIP) and
	// less the service range inside it: 32,768 - 4,096 = 28,672 Nodes, about three times the largest
	// fleet the local control plane has registered (docs/performance.md). Nodes past that get no
	// podCIDR (the controller manager records CIDRNotAvailable); the README's `fakelet controlplane`
	// says how to make room for more.
	clusterCIDR      = "10.0.0.0/9"
	nodeCIDRMaskSize = 24
)

// PKI holds the paths of the control plane's certificates and keys, PEM files under DIR/pki.
type PKI struct {
	CACert, CAKey string
	// APIServerCert is the apiserver's serving certificate (127.0.0.1, localhost and the in-cluster
	// names of the kubernetes Service).
	APIServerCert, APIServerKey string
	// ControllerManagerCert is kube-controller-manager's serving certificate, signed by the same CA
	// so that a scraper of its /metrics needs one trust bundle.
	ControllerManagerCert, ControllerManagerKey string
	// ControllerManagerClientCert is the controller manager's identity, system:kube-controller-manager.
	ControllerManagerClientCert, ControllerManagerClientKey string
	// SchedulerCert is kube-scheduler's serving certificate, from the same CA for the same reason.
	SchedulerCert, SchedulerKey string
	// SchedulerClientCert is the scheduler's identity, system:kube-scheduler.
	SchedulerClientCert, SchedulerClientKey string
	// EtcdCACert is the CA of etcd's serving certificate and of the only client certificate etcd
	// accepts, the apiserver's. It is not the cluster's CA: the controller manager signs
	// certificate requests with that one, and no certificate it signs may reach etcd.
	EtcdCACert, EtcdCAKey string
	// EtcdCert is etcd's serving certificate (127.0.0.1), also its peer certificate.
	EtcdCert, EtcdKey string
	// APIServerEtcdClientCert is the apiserver's client certificate for etcd.
	APIServerEtcdClientCert, APIServerEtcdClientKey string
	// AdminCert is the client certificate of AdminUser in AdminGroup.
	AdminCert, AdminKey string
	// ServiceAccountKey signs service account tokens (apiserver and the token controller);
	// ServiceAccountPub verifies them.
	ServiceAccountKey, ServiceAccountPub string
}

func pkiPaths(dir string) PKI {
	p := func(name string) string { return filepath.Join(dir, "pki", name) }
	return PKI{
		CACert: p("ca.crt"), CAKey: p("ca.key"),
		APIServerCert: p("apiserver.crt"), APIServerKey: p("apiserver.key"),
		ControllerManagerCert: p("controller-manager.crt"), ControllerManagerKey: p("controller-manager.key"),
		ControllerManagerClientCert: p("controller-manager-client.crt"), ControllerManagerClientKey: p("controller-manager-client.key"),
		SchedulerCert: p("scheduler.crt"), SchedulerKey: p("scheduler.key"),
		SchedulerClientCert: p("scheduler-client.crt"), SchedulerClientKey: p("scheduler-client.key"),
		EtcdCACert: p("etcd-ca.crt"), EtcdCAKey: p("etcd-ca.key"),
		EtcdCert: p("etcd.crt"), EtcdKey: p("etcd.key"),
		APIServerEtcdClientCert: p("apiserver-etcd-client.crt"), APIServerEtcdClientKey: p("apiserver-etcd-client.key"),
		AdminCert: p("admin.crt"), AdminKey: p("admin.key"),
		ServiceAccountKey: p("sa.key"), ServiceAccountPub: p("sa.pub"),
	}
}

func (p PKI) files() []string {
	return []string{
		p.CACert, p.CAKey, p.APIServerCert, p.APIServerKey, p.ControllerManagerCert, p.ControllerManagerKey,
		p.ControllerManagerClientCert, p.ControllerManagerClientKey, p.SchedulerCert, p.SchedulerKey,
		p.SchedulerClientCert, p.SchedulerClientKey, p.AdminCert, p.AdminKey,
		p.EtcdCACert, p.EtcdCAKey, p.EtcdCert, p.EtcdKey, p.APIServerEtcdClientCert, p.APIServerEtcdClientKey,
		p.ServiceAccountKey, p.ServiceAccountPub,
	}
}

// ensurePKI creates every certificate and key of a control plane in DIR/pki. With reuse, a PKI
// already there is kept, its missing leaf pairs issued from its CA (completeLeaves): service account
// tokens and the kube-root-ca.crt ConfigMaps in a kept etcd stay valid only with the same keys.
// Otherwise it is created anew.
func ensurePKI(dir string, reuse bool) (PKI, *CA, error) {
	p := pkiPaths(dir)
	if reuse {
		if ca, err := LoadCA(p.CACert, p.CAKey); err == nil {
			complete, err := completeLeaves(p, ca)
			if err != nil {
				return p, nil, err
			}
			if complete {
				return p, ca, nil
			}
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, "pki")); err != nil {
		return p, nil, fmt.Errorf("remove old PKI: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "pki"), 0o700); err != nil {
		return p, nil, fmt.Errorf("create PKI directory: %w", err)
	}
	ca, caKey, err := newCA(caName, time.Now()) // wall time: the processes that check it read it
	if err != nil {
		return p, nil, err
	}
	if err := writePair(p.CACert, ca.certPEM, p.CAKey, caKey); err != nil {
		return p, nil, err
	}
	for _, l := range leaves(p) {
		certPEM, keyPEM, err := ca.Issue(l.req)
		if err != nil {
			return p, nil, err
		}
		if err := writePair(l.cert, certPEM, l.key, keyPEM); err != nil {
			return p, nil, err
		}
	}
	if err := writeEtcdPKI(p); err != nil {
		return p, nil, err
	}
	if err := writeServiceAccountKeys(p.ServiceAccountKey, p.ServiceAccountPub); err != nil {
		return p, nil, err
	}
	return p, ca, nil
}

// leaf is a certificate the cluster CA issues for one identity, and where it goes.
type leaf struct {
	cert, key string
	req       CertRequest
}

// leaves are the certificates of the cluster CA: serving certificates and client identities.
func leaves(p PKI) []leaf {
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	return []leaf{
		{p.APIServerCert, p.APIServerKey, CertRequest{
			CommonName: "kube-apiserver", Server: true,
			IPs: append(loopback, net.ParseIP(serviceIP)),
			DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
				"kubernetes.default.svc.cluster.local"},
		}},
		{p.ControllerManagerCert, p.ControllerManagerKey, CertRequest{
			CommonName: "kube-controller-manager", Server: true, IPs: loopback, DNSNames: []string{"localhost"},
		}},
		{p.ControllerManagerClientCert, p.ControllerManagerClientKey, CertRequest{CommonName: kcmUser, Client: true}},
		{p.SchedulerCert, p.SchedulerKey, CertRequest{
			CommonName: "kube-scheduler", Server: true, IPs: loopback, DNSNames: []string{"localhost"},
		}},
		{p.SchedulerClientCert, p.SchedulerClientKey, CertRequest{CommonName: schedulerUser, Client: true}},
		{p.AdminCert, p.AdminKey, CertRequest{CommonName: AdminUser, Organization: []string{AdminGroup}, Client: true}},
	}
}

// completeLeaves completes a kept PKI whose leaf pairs are each there or wholly missing, as one
// kept from before a component was added (kube-scheduler's) is: it issues the missing pairs from
// the kept CA, so that the kept etcd's service account tokens and CA bundles stay valid. It tells
// whether the PKI is complete; a half pair or a missing key of the CAs' means starting afresh.
func completeLeaves(p PKI, ca *CA) (bool, error) {
	var missing []leaf
	inLeaves := map[string]bool{}
	for _, l := range leaves(p) {
		inLeaves[l.cert], inLeaves[l.key] = true, true
		switch haveCert, haveKey := allExist([]string{l.cert}), allExist([]string{l.key}); {
		case haveCert && haveKey:
		case !haveCert && !haveKey:
			missing = append(missing, l)
		default:
			return false, nil
		}
	}
	for _, f := range p.files() {
		if !inLeaves[f] && !allExist([]string{f}) {
			return false, nil
		}
	}
	for _, l := range missing {
		certPEM, keyPEM, err := ca.Issue(l.req)
		if err != nil {
			return false, err
		}
		if err := writePair(l.cert, certPEM, l.key, keyPEM); err != nil {
			return false, err
		}
	}
	return true, nil
}

// writeEtcdPKI creates etcd's CA, its serving and peer certificate and the apiserver's client
// certificate for it.
func writeEtcdPKI(p PKI) error {
	ca, caKey, err := newCA(etcdCAName, time.Now()) // wall time: etcd reads it
	if err != nil {
		return err
	}
	if err := writePair(p.EtcdCACert, ca.certPEM, p.EtcdCAKey, caKey); err != nil {
		return err
	}
	for _, l := range []struct {
		cert, key string
		req       CertRequest
	}{
		// Client too: a peer certificate is presented both ways.
		{p.EtcdCert, p.EtcdKey, CertRequest{CommonName: "etcd", Server: true, Client: true,
			IPs: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}},
		{p.APIServerEtcdClientCert, p.APIServerEtcdClientKey, CertRequest{CommonName: "kube-apiserver-etcd-client", Client: true}},
	} {
		certPEM, keyPEM, err := ca.Issue(l.req)
		if err != nil {
			return err
		}
		if err := writePair(l.cert, certPEM, l.key, keyPEM); err != nil {
			return err
		}
	}
	return nil
}

// writeServiceAccountKeys creates the ES256 key pair that signs and verifies service account tokens.
func writeServiceAccountKeys(keyFile, pubFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate service account key: %w", err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return fmt.Errorf("encode service account key: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return fmt.Errorf("encode service account public key: %w", err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	return writePair(pubFile, pubPEM, keyFile, keyPEM)
}

func writePair(certFile string, certPEM []byte, keyFile string, keyPEM []byte) error {
	if err := writeFileNoFollow(certFile, certPEM, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(certFile), err)
	}
	if err := writeFileNoFollow(keyFile, keyPEM, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(keyFile), err)
	}
	return nil
}

func allExist(paths []string) bool {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}
