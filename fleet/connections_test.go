package fleet

import (
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/internal/fleettest"
)

// TestPerNodeConnectionsNeedTLS: a per-node connection is a kubelet's TLS connection; over plain
// HTTP net/http would open several per node, so the fleet is refused before it is built.
func TestPerNodeConnectionsNeedTLS(t *testing.T) {
	_, err := New(fleettest.Resolve(t, Config{Nodes: 2, ConnectionMode: ConnectionsPerNode}), &rest.Config{Host: "http://127.0.0.1:1"})
	if err == nil || !strings.Contains(err.Error(), "reached without TLS") {
		t.Errorf("per-node connections over plain HTTP: %v, want a refusal", err)
	}
}
