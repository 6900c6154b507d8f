package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
)

// TestFakeKubeletsAreTreatedAsKubelets: requests carry system:node:<name> in system:nodes, so API
// Priority and Fairness dispatches them as a kubelet's: those of Nodes and Leases at priority level
// node-high (FlowSchema system-node-high), the others of the kubelet footprint (its watches of
// other resources, CSINodes, Events) at priority level system (FlowSchema system-nodes); and the
// Node authorizer keeps a kubelet's credential to its own Node.
func TestFakeKubeletsAreTreatedAsKubelets(t *testing.T) {
	cp := controlPlane(t)
	beforeHigh, beforeSystem := dispatched(t, cp, "node-high"), dispatched(t, cp, "system")
	rf := startFleet(t, fleet.Config{Nodes: 20, Fleet: "ident", NamePrefix: "ident", RegisterQPS: 50})

	eventually(t, 60*time.Second, "20 registered nodes with leases", func() (bool, error) {
		return rf.Progress().Ready == 20 && rf.Tally().Requests() != nil, nil
	})
	var nodeHigh, system int64
	for _, r := range rf.Tally().Requests() {
		if r.Resource == "nodes" || r.Resource == "leases" {
			nodeHigh += r.OK
		} else {
			system += r.OK
		}
	}
	afterHigh, afterSystem := dispatched(t, cp, "node-high"), dispatched(t, cp, "system")
	// Registration alone sends 20 node POSTs, 20 status PATCHes and the lease requests.
	if grown := afterHigh - beforeHigh; grown < float64(nodeHigh)*0.9 {
		t.Errorf("node-high dispatched %v requests while the fleet sent %d of Nodes and Leases: the fleet's traffic is not classified as kubelets'", grown, nodeHigh)
	}
	if system == 0 {
		t.Error("the fleet sent nothing but Node and Lease requests: the kubelet footprint's watches, CSINodes and Events are missing")
	}
	if grown := afterSystem - beforeSystem; grown < float64(system)*0.9 {
		t.Errorf("system dispatched %v requests while the fleet sent %d others: the kubelet footprint's traffic is not classified as kubelets'", grown, system)
	}

	// The same identity from a client certificate: a kubelet may patch only its own Node.
	cfg, err := cp.ClientConfig(controlplane.NodeUser("ident-00000"), controlplane.NodesGroup)
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"annotations":{"e2e":"x"}}}`)
	_, err = kubelet.CoreV1().Nodes().Patch(context.Background(), "ident-00001", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if !apierrors.IsForbidden(err) {
		t.Errorf("ident-00000's credential patching ident-00001's status: %v, want 403 Forbidden", err)
	}
	if _, err := kubelet.CoreV1().Nodes().Patch(context.Background(), "ident-00000", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Errorf("ident-00000's credential patching its own status: %v", err)
	}

}

// dispatched reads apiserver_flowcontrol_dispatched_requests_total{priority_level=level}.
func dispatched(t *testing.T, cp *controlplane.ControlPlane, level string) float64 {
	t.Helper()
	families := apiserverMetrics(t, cp)
	var sum float64
	for _, m := range families["apiserver_flowcontrol_dispatched_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "priority_level" && l.GetValue() == level {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// apiserverMetrics is one scrape of the apiserver's metrics, retried for up to a minute.
func apiserverMetrics(t *testing.T, cp *controlplane.ControlPlane) map[string]*dto.MetricFamily {
	t.Helper()
	client, err := cp.MetricsClient()
	if err != nil {
		t.Fatal(err)
	}
	var families map[string]*dto.MetricFamily
	eventually(t, time.Minute, "a scrape of the apiserver's metrics", func() (bool, error) {
		resp, err := client.Get(cp.APIServerURL + "/metrics")
		if err != nil {
			return false, nil // a busy apiserver may miss the client's timeout: try again
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("scrape apiserver: %s", resp.Status)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err = parser.TextToMetricFamilies(resp.Body)
		return err == nil, nil
	})
	return families
}
