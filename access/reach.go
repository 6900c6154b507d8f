package access

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// CheckTimeout bounds each request of the checks before a run or a cleanup: a server that accepts
// connections and never answers must not hold fakelet forever (the admin client has no timeout of
// its own, since it also carries the fleet's long-lived watch). A variable, so that a test can
// shorten it.
var CheckTimeout = 30 * time.Second

// ExplainUnreachable adds to err what a user can do about the usual reasons a cluster cannot be
// talked to at all: nothing listening, a certificate from another CA, a credential the server does
// not know, no answer.
func ExplainUnreachable(err error) error {
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		opErr     *net.OpError
	)
	switch {
	case errors.As(err, &unknownCA):
		return fmt.Errorf("the apiserver's certificate is not signed by the certificate authority in the kubeconfig "+
			"(another cluster, or a stale kubeconfig; --insecure-skip-tls-verify skips the check, for throwaway test clusters only): %w", err)
	case errors.As(err, &hostname), errors.As(err, &invalid):
		return fmt.Errorf("the apiserver's certificate does not hold for this address, or has expired: %w", err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the apiserver does not accept the kubeconfig's credential (expired, or another cluster's): %w", err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the apiserver did not answer within %v: %w", CheckTimeout, err)
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return fmt.Errorf("cannot reach the apiserver (is it running, and is this the right address?): %w", err)
	}
	return err
}
