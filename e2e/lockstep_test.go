package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/internal/lockstep"
)

// lockstepProfile is short: the test is about when the phases begin.
const lockstepProfile = `apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: e2e-lockstep}
spec:
  nodes: 9
  zones: 1
  seed: 3
  groups:
    victims: {count: 2}
  phases:
  - {name: warmup, duration: 3s}
  - name: outage
    duration: 5s
    actions:
    - {group: victims, do: stop}
`

// TestThreeShardsAgreeOnTheStartByLease: three `fakelet run --shard i/3 --start-at auto` processes
// started at once agree through the start Lease: one creates it, two join it, their first phases
// begin within a second of each other and of the Lease's time; a fourth shard with another seed is
// refused while it exists; and at the end the Lease is gone.
func TestThreeShardsAgreeOnTheStartByLease(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	cp := controlPlane(t)
	cs := admin(t, cp)
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "fakelet-start-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(t.Context(), ns.Name, metav1.DeleteOptions{}) })
	dir := t.TempDir()
	bin := fakeletBinary(t)
	profile := writeFile(t, dir, "profile.yaml", lockstepProfile)
	args := func(shard, seed, reportDir string) []string {
		return []string{"run", "--kubeconfig", cp.Kubeconfig, "--profile", profile, "--seed", seed,
			"--shard", shard, "--start-at", "auto", "--start-delay", "25s", "--coordination-namespace", ns.Name,
			"--name-prefix", "e2estart", "--fleet", "e2e-start", "--metrics-addr", "", "--out", reportDir}
	}
	shards := startShards(t, bin, 3, func(i int) []string {
		return args(fmt.Sprintf("%d/3", i), "3", filepath.Join(dir, fmt.Sprint("shard-", i)))
	})

	leases := cs.CoordinationV1().Leases(ns.Name)
	var startAt time.Time
	for deadline := time.Now().Add(20 * time.Second); startAt.IsZero() && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		l, err := leases.Get(t.Context(), lockstep.LeaseName("e2e-start"), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if startAt, err = time.Parse(time.RFC3339Nano, l.Annotations["fakelet.dev/start-at"]); err != nil {
			t.Fatalf("start Lease annotations %v: %v", l.Annotations, err)
		}
		t.Logf("start Lease held by %q: phase 0 at %s", *l.Spec.HolderIdentity, startAt.Format(time.RFC3339Nano))
	}
	if startAt.IsZero() {
		t.Fatalf("no start Lease in %s", ns.Name)
	}

	// Another run of the same fleet (another seed, so other groups) is refused, and writes nothing.
	other := startShards(t, bin, 1, func(int) []string { return args("1/3", "4", filepath.Join(dir, "other")) })[0]
	select {
	case <-other.exited:
		if other.err == nil || !strings.Contains(other.out.String(), "is for another run") {
			t.Errorf("a shard with another seed: %v\n%s", other.err, other.out.String())
		}
	case <-time.After(time.Until(startAt)):
		t.Errorf("a shard with another seed still runs at the start\n%s", other.out.String())
	}

	waitShards(t, shards, time.Until(startAt)+2*time.Minute)
	checkLockstep(t, shardReports(t, shards, 3), startAt)
	created, joined := 0, 0
	for _, s := range shards {
		created += strings.Count(s.out.String(), "start: created Lease")
		joined += strings.Count(s.out.String(), "start: joined Lease")
	}
	if created != 1 || joined != 2 {
		t.Errorf("%d shards created the start Lease and %d joined it, want 1 and 2", created, joined)
	}
	if _, err := leases.Get(t.Context(), lockstep.LeaseName("e2e-start"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the start Lease after the run: %v, want deleted", err)
	}
}
