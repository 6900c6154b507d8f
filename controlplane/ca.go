package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"

	"k8s.io/client-go/util/keyutil"
)

// DefaultCertValidity is how long certificates of the local control plane are valid. A control plane
// lives for a test run; a year means nobody ever meets an expired one.
const DefaultCertValidity = 365 * 24 * time.Hour

// clockSkew backdates every certificate's NotBefore, so that a certificate issued this instant is
// already valid for a process whose clock reads a little behind (a common flake with fresh CAs).
const clockSkew = time.Minute

// CA is the local control plane's certificate authority. The apiserver trusts it for client
// certificates (--client-ca-file) and it signs every serving certificate, so one CA bundle verifies
// the apiserver and the controller manager alike.
type CA struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

// newCA creates a self-signed CA with a fresh ECDSA P-256 key.
func newCA(commonName string, now time.Time) (*CA, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key for CA %s: %w", commonName, err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(10 * DefaultCertValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("self-sign CA %s: %w", commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parse new CA %s: %w", commonName, err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode key of CA %s: %w", commonName, err)
	}
	return &CA{cert: cert, key: key, certPEM: encodeCert(der)}, keyPEM, nil
}

// LoadCA reads a CA certificate and its private key from PEM files, such as ControlPlane.PKI.CACert
// and ControlPlane.PKI.CAKey.
func LoadCA(certFile, keyFile string) (*CA, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("read CA certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("read CA key: %w", err)
	}
	return parseCA(certPEM, keyPEM)
}

func parseCA(certPEM, keyPEM []byte) (*CA, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("parse CA certificate: no CERTIFICATE PEM block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("parse CA certificate %q: not a CA", cert.Subject.CommonName)
	}
	parsed, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parse CA key: %w", err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("parse CA key: %T cannot sign", parsed)
	}
	if !publicKeysEqual(key.Public(), cert.PublicKey) {
		return nil, fmt.Errorf("load CA %q: the key does not match the certificate", cert.Subject.CommonName)
	}
	return &CA{cert: cert, key: key, certPEM: certPEM}, nil
}

// CertPEM returns the CA certificate, PEM encoded: the trust bundle for the apiserver and the
// controller manager's serving certificates.
func (ca *CA) CertPEM() []byte { return append([]byte(nil), ca.certPEM...) }

// CertRequest describes a leaf certificate to issue.
type CertRequest struct {
	// CommonName is the user name for a client certificate.
	CommonName string
	// Organization holds the groups for a client certificate.
	Organization []string
	// DNSNames and IPs are the subject alternative names of a serving certificate.
	DNSNames []string
	IPs      []net.IP
	// Client and Server select the extended key usages.
	Client, Server bool
	// Validity defaults to DefaultCertValidity.
	Validity time.Duration
}

// Issue signs a new certificate for a fresh ECDSA P-256 key (what the kubelet itself generates for
// its client certificate) and returns both, PEM encoded.
func (ca *CA) Issue(req CertRequest) (certPEM, keyPEM []byte, err error) {
	if req.CommonName == "" {
		return nil, nil, errors.New("issue certificate: empty common name")
	}
	if !req.Client && !req.Server {
		return nil, nil, fmt.Errorf("issue certificate for %s: neither client nor server usage", req.CommonName)
	}
	validity := req.Validity
	if validity <= 0 {
		validity = DefaultCertValidity
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key for %s: %w", req.CommonName, err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now() // wall time: the processes that check the certificate read it
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: req.CommonName, Organization: req.Organization},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPs,
	}
	if req.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	if req.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign certificate for %s: %w", req.CommonName, err)
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode key for %s: %w", req.CommonName, err)
	}
	return encodeCert(der), keyPEM, nil
}

// IssueClientCert issues a client certificate for user in groups, the way the apiserver reads them
// (CN is the user, O the groups). For a kubelet's own identity use NodeUser and NodesGroup.
func (ca *CA) IssueClientCert(user string, groups []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	return ca.Issue(CertRequest{CommonName: user, Organization: groups, Client: true, Validity: validity})
}

// NodesGroup is the group every kubelet credential carries; the Node authorizer, NodeRestriction
// admission and the system-nodes flow schema of API Priority and Fairness key on it.
const NodesGroup = "system:nodes"

// NodeUser is the user name of the kubelet on node nodeName.
func NodeUser(nodeName string) string { return "system:node:" + nodeName }

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func randomSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generate certificate serial number: %w", err)
	}
	return serial, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}
