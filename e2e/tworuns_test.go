package e2e

import (
	"context"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
)

// TestASecondRunLeavesALiveRunsNodes is the scenario, small: run A of a fleet heartbeats, and
// run B with the same names and default flags starts beside it. B refuses, naming A's run, and
// `fakelet cleanup` refuses too (--dry-run lists what --force would delete); A's Nodes keep their
// UIDs; A then ends and deletes its own. Before runs had IDs, B exited 0 and deleted A's live Nodes.
func TestASecondRunLeavesALiveRunsNodes(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	t.Cleanup(func() {
		fleet.DeleteFleet(context.Background(), c, fleet.CleanupOptions{Fleet: "tworuns", Force: true})
	})
	args := []string{"run", "--kubeconfig", cp.Kubeconfig, "--nodes", "5", "--fleet", "tworuns", "--name-prefix", "tworuns",
		"--images", "5", "--metrics-addr", ""}
	a := startFakelet(t, append(args, "--duration", "2m")...)
	eventually(t, 90*time.Second, "run A's 5 Ready nodes with leases", func() (bool, error) {
		return readyNodes(t, c, "tworuns") == 5 && leasesNamed(t, c, "tworuns") == 5, nil
	})
	runA := regexp.MustCompile(`fleet tworuns, run (\S+):`).FindStringSubmatch(a.stderr.String())
	if runA == nil {
		t.Fatalf("run A did not print its run ID:\n%s", a.stderr.String())
	}
	uids := map[string]types.UID{}
	for _, n := range fleetNodes(t, c, "tworuns") {
		uids[n.Name] = n.UID
		if agent.HeldBy(&n) != runA[1] {
			t.Errorf("node %s held by %q, want run A's %s", n.Name, agent.HeldBy(&n), runA[1])
		}
	}

	b := startFakelet(t, append(args, "--duration", "15s")...)
	if code := b.wait(time.Minute); code == 0 || code == -1 {
		t.Fatalf("run B beside live run A: exit code %d, want a refusal", code)
	}
	if out := b.stderr.String(); !strings.Contains(out, "shard 0/1 of fleet tworuns is held by run "+runA[1]) || !strings.Contains(out, "nothing was written") {
		t.Errorf("run B's refusal does not name run A (%s):\n%s", runA[1], out)
	}

	clean := startFakelet(t, "cleanup", "--fleet", "tworuns", "--kubeconfig", cp.Kubeconfig)
	if code := clean.wait(time.Minute); code == 0 || !strings.Contains(clean.stderr.String(), "run "+runA[1]) {
		t.Errorf("fakelet cleanup of a live fleet: exit code %d, want a refusal naming run A:\n%s", code, clean.output())
	}
	dry := startFakelet(t, "cleanup", "--fleet", "tworuns", "--kubeconfig", cp.Kubeconfig, "--force", "--dry-run")
	if code := dry.wait(time.Minute); code != 0 || !strings.Contains(dry.stdout.String(), "would delete node/tworuns-00004") ||
		!strings.Contains(dry.stdout.String(), "would delete lease/fakelet-claim.tworuns.0-of-1") ||
		!strings.Contains(dry.stdout.String(), "would delete 5 nodes and 6 leases") { // the 6th: run A's claim
		t.Errorf("fakelet cleanup --force --dry-run: exit code %d, output:\n%s", code, dry.output())
	}
	for _, n := range fleetNodes(t, c, "tworuns") {
		if uids[n.Name] != n.UID || agent.HeldBy(&n) != runA[1] {
			t.Errorf("node %s changed hands: uid %s (was %s), held by %q", n.Name, n.UID, uids[n.Name], agent.HeldBy(&n))
		}
	}
	if len(uids) != 5 || len(fleetNodes(t, c, "tworuns")) != 5 {
		t.Fatalf("run A's nodes are not all there")
	}

	if err := a.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := a.wait(time.Minute); code != 0 {
		t.Fatalf("run A: exit code %d", code)
	}
	if n, l := len(fleetNodes(t, c, "tworuns")), leasesNamed(t, c, "tworuns"); n != 0 || l != 0 {
		t.Errorf("%d nodes and %d leases left after run A's cleanup", n, l)
	}
}

// TestStatusPatchWithAnotherUIDIsRefused: what the apiserver does with the UID the agents put in
// their status patches: a strategic merge patch of nodes/status carrying metadata.uid succeeds on the
// Node of that UID and is refused (422, metadata.uid is immutable) on another Node of the same name,
// which stays as it was.
func TestStatusPatchWithAnotherUIDIsRefused(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	foreignNode(t, c, "uidpatch-00000", map[string]string{fleetname.Label: "uidpatch"})
	ctx := context.Background()
	n, err := c.CoreV1().Nodes().Get(ctx, "uidpatch-00000", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch := func(uid types.UID) error {
		body := `{"metadata":{"uid":"` + string(uid) + `"},"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}}`
		_, err := c.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{}, "status")
		return err
	}
	if err := patch("0a1b2c3d-0000-4000-8000-000000000000"); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.uid") {
		t.Fatalf("a status patch with another node's UID: %v, want 422 on metadata.uid", err)
	}
	// The node lifecycle controller writes to any new Node (taints), so look for the patch's own content.
	if now, err := c.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); err != nil || now.UID != n.UID || patchedReady(now) {
		t.Errorf("the refused patch reached the node: %v", err)
	}
	if err := patch(n.UID); err != nil {
		t.Fatalf("a status patch with the node's own UID: %v", err)
	}
	if now, err := c.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); err != nil || !patchedReady(now) {
		t.Errorf("the patch with the node's own UID did not reach it: %v", err)
	}
}

// patchedReady reports whether n has the Ready condition the test's patches send.
func patchedReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Reason == "KubeletReady" {
			return true
		}
	}
	return false
}
