package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The apiserver's audit log of node requests (Options.AuditNodes), which the kubemark reference
// (bench, docs/fidelity.md) reads to count each node's requests by verb and resource.

// AuditLogPath is where the apiserver of the control plane in dir writes its audit log when started
// with Options.AuditNodes: one JSON audit.k8s.io/v1 Event a line.
func AuditLogPath(dir string) string { return filepath.Join(dir, "audit.log") }

func auditPolicyPath(dir string) string { return filepath.Join(dir, "audit-policy.yaml") }

// auditPolicy logs the requests of kubelet credentials (system:nodes) and of admin ones
// (system:masters) at Metadata level: no bodies, which a count by verb and resource does not need.
// The admin group is there because fakelet's agents impersonate system:node:<name> through the
// admin credential, and the apiserver matches its policy against the authenticated user, before
// impersonation; the event's impersonatedUser names the node. The controller manager's requests and
// the apiserver's own are not logged. The RequestReceived stage is omitted: every request is still
// logged once it is answered (ResponseComplete), and a watch once more when it starts (ResponseStarted).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["system:nodes", "system:masters"]
- level: None
`

// auditArgs writes the policy into dir and returns the apiserver's flags for it. The log is not
// rotated (--audit-log-maxsize 0): a reference run is minutes long and is read whole.
func auditArgs(dir string) ([]string, error) {
	if err := writeFileNoFollow(auditPolicyPath(dir), []byte(auditPolicy), 0o600); err != nil {
		return nil, fmt.Errorf("write audit policy: %w", err)
	}
	return []string{
		"--audit-policy-file=" + auditPolicyPath(dir),
		"--audit-log-path=" + AuditLogPath(dir),
		"--audit-log-format=json",
		"--audit-log-maxsize=0",
	}, nil
}

// keepPreviousAuditLog moves the audit log of the control plane before out of the way, as its
// components' logs are, so that a new control plane's log holds its own requests only.
func keepPreviousAuditLog(dir string) error {
	err := os.Rename(AuditLogPath(dir), filepath.Join(dir, "audit.previous.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("keep previous audit log: %w", err)
	}
	return nil
}
