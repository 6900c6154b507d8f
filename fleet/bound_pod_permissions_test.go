package fleet

import (
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes/fake"

	"fakelet.dev/fakelet/access"
	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/fleettest"
)

// TestPreflightNamesBoundPodsFile: a credential refused the heartbeat footprint's watch of bound
// pods is told which deploy/rbac file grants it.
func TestPreflightNamesBoundPodsFile(t *testing.T) {
	client := fake.NewClientset()
	reviewer(client, "erin", func(r *authorizationv1.ResourceAttributes) bool { return r.Resource != "pods" })
	err := access.Check(t.Context(), client, Permissions(fleettest.Resolve(t, Config{Nodes: 3, Footprint: agent.FootprintHeartbeat})))
	for _, want := range []string{"missing 2 permission(s): list pods (the fleet's watch of the pods bound to its nodes (heartbeat footprint)), watch pods",
		"deploy/rbac/bound-pods.yaml for --footprint heartbeat"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("heartbeat footprint without pod reads: %v, want an error containing %q", err, want)
		}
	}
}
