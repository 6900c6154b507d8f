package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
)

// TestCleanupDeletesAKilledRunsWorkloadNamespace: with the deployed grants (fakelet.yaml, pods.yaml,
// workloads.yaml and its policy), `fakelet cleanup` deletes the namespace of workloads a killed run
// of the fleet left, and leaves a namespace with the fleet's label and no run's, another fleet's run's,
// and the deploy's fakelet-pods.
func TestCleanupDeletesAKilledRunsWorkloadNamespace(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	ctx := context.Background()
	const sa = "cleanup-namespaces"
	applyWorkloadsPolicy(t, c, "system:serviceaccount:fakelet:"+sa)
	cfg := rbacFor(t, cp, sa, rbacFile(t, "fakelet.yaml"), rbacFile(t, "pods.yaml"), rbacFile(t, "workloads.yaml"))
	kubeconfig := writeKubeconfig(t, cfg, cfg.CAData)
	left := fleetname.WorkloadNamespace("nscleanup", "20261201-120000-abcdef")
	for name, labels := range map[string]map[string]string{
		left:                         {fleetname.Label: "nscleanup", fleet.RunLabel: "20261201-120000-abcdef"},
		"nscleanup-team":             {fleetname.Label: "nscleanup"},
		"fakelet-other-20261201-run": {fleetname.Label: "other", fleet.RunLabel: "20261201-run"},
	} {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}},
			metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	// The policy takes a moment to reach the admission plugin; until then a refused delete would be
	// RBAC's or nothing's: wait for it to refuse what it must.
	s, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the policy refusing nscleanup-team's deletion", func() (bool, error) {
		err := s.CoreV1().Namespaces().Delete(ctx, "nscleanup-team", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), nil
	})

	p := startFakelet(t, "cleanup", "--kubeconfig", kubeconfig, "--fleet", "nscleanup")
	if code := p.wait(2 * time.Minute); code != 0 {
		t.Fatalf("fakelet cleanup: exit code %d", code)
	}
	if !strings.Contains(p.stdout.String(), "deleted namespace/"+left) || strings.Count(p.stdout.String(), "namespace/") != 1 {
		t.Errorf("fakelet cleanup printed %q, want only namespace/%s deleted", p.stdout.String(), left)
	}
	eventually(t, time.Minute, "namespace "+left+" deleted", func() (bool, error) {
		ns, err := c.CoreV1().Namespaces().Get(ctx, left, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || err == nil && ns.DeletionTimestamp != nil, nil
	})
	for _, name := range []string{"nscleanup-team", "fakelet-other-20261201-run", fleetname.PodNamespace} {
		if ns, err := c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err != nil || ns.DeletionTimestamp != nil {
			t.Errorf("namespace %s after the cleanup: %v, %v; want it untouched", name, err, ns.DeletionTimestamp)
		}
	}
}
