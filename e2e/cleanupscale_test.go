package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
)

// TestCleanupAtScale times `fakelet cleanup` of FAKELET_CLEANUP_NODES Nodes (default 200) with a
// Lease each, left by a stopped run (Leases expired), at the default --cleanup-qps. The Nodes and
// Leases are written directly with the admin credential, so that the measurement is the cleanup's
// alone. docs/reliability.md has the 10,000-node figure:
//
//	FAKELET_CLEANUP_NODES=10000 go test -p 1 -count=1 -timeout 30m -run TestCleanupAtScale -v ./e2e/
func TestCleanupAtScale(t *testing.T) {
	n := 200
	if v := os.Getenv("FAKELET_CLEANUP_NODES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			t.Fatalf("FAKELET_CLEANUP_NODES=%q: want a positive number", v)
		}
	}
	cp := controlPlane(t)
	cfg := cp.AdminConfig()
	cfg.QPS = -1
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fleet.DeleteFleet(context.Background(), c, fleet.CleanupOptions{Fleet: "scale", Force: true, QPS: 1000})
	})
	begin := time.Now()
	seedStoppedFleet(t, c, "scale", n)
	t.Logf("created %d Nodes and %d Leases in %v", n, n, time.Since(begin).Round(time.Second))

	fakeletBinary(t) // built before the clock starts
	begin = time.Now()
	p := startFakelet(t, "cleanup", "--fleet", "scale", "--kubeconfig", cp.Kubeconfig)
	code := p.wait(30 * time.Minute)
	took := time.Since(begin)
	if code != 0 {
		t.Fatalf("fakelet cleanup: exit code %d", code)
	}
	t.Logf("fakelet cleanup of %d Nodes and %d Leases: %v", n, n, took.Round(100*time.Millisecond))
	// A Lease whose Node went first may be the garbage collector's to delete: count what is left.
	want := fmt.Sprintf("fleet scale: deleted %d nodes and ", n)
	if !strings.Contains(p.stdout.String(), want) {
		t.Errorf("cleanup output lacks %q", want)
	}
	if nodes, leases := len(fleetNodes(t, c, "scale")), leasesNamed(t, c, "scale"); nodes+leases != 0 {
		t.Errorf("%d nodes and %d leases left", nodes, leases)
	}
}

// seedStoppedFleet creates n small Nodes of fleet, each with a Lease it owns, last renewed an hour
// ago: what a stopped run leaves.
func seedStoppedFleet(t *testing.T, c kubernetes.Interface, fleetName string, n int) {
	t.Helper()
	ctx := context.Background()
	work := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				name := fleetname.NodeName(fleetName, i)
				node, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
					Labels:      map[string]string{fleetname.Label: fleetName},
					Annotations: map[string]string{fleetname.RunAnnotation: "seeded"}}}, metav1.CreateOptions{})
				if err == nil {
					_, err = c.CoordinationV1().Leases(agent.LeaseNamespace).Create(ctx, &coordinationv1.Lease{
						ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: agent.LeaseNamespace,
							OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID}}},
						Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
							RenewTime: &metav1.MicroTime{Time: time.Now().Add(-time.Hour)}},
					}, metav1.CreateOptions{})
				}
				if err != nil {
					select {
					case errs <- fmt.Errorf("seed node %s: %w", name, err):
					default:
					}
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}
