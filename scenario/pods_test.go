package scenario

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"fakelet.dev/fakelet/fleet"
)

const podsProfile = `
apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: pods}
spec:
  nodes: 2
  podsPerNode: 2
  phases:
  - {name: only, duration: 10s}
`

func withPods(fc *fleet.Config, rc *Config, _ *fake.Clientset) {
	fc.PodsPerNode = 2
	rc.ReadyTimeout = 30 * time.Second
}

// The phases begin once the nodes and their pods are Ready.
func TestPhasesWaitForThePods(t *testing.T) {
	h := newHarness(t, podsProfile, withPods)
	start := h.waitForPhases()
	if p := h.fleet.Progress(); p.PodsReady != 4 {
		t.Errorf("the phases began at +%v with %d of 4 pods Ready", start.Sub(t0), p.PodsReady)
	}
	if rec := h.runner.Record(); rec.ReadyTimedOut {
		t.Error("the wait timed out")
	}
	if !strings.Contains(h.log.String(), "4 of 4 pods Ready") {
		t.Errorf("log does not count the pods:\n%s", h.log)
	}
}

// Pods that never get Ready hold the phases back until the ready timeout, and the log says so.
func TestPhasesBeginWithoutReadyPodsAfterTheTimeout(t *testing.T) {
	refuseStatus := func(fc *fleet.Config, rc *Config, client *fake.Clientset) {
		withPods(fc, rc, client)
		client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, a.(k8stesting.PatchAction).GetName(), nil)
		})
	}
	h := newHarness(t, podsProfile, refuseStatus)
	start := h.waitForPhases()
	if waited := start.Sub(t0); waited < 30*time.Second {
		t.Errorf("phases began %v after the run did, want after the 30 s ready timeout", waited)
	}
	if !h.runner.Record().ReadyTimedOut || !strings.Contains(h.log.String(), ", 0 of 4 pods Ready after") {
		t.Errorf("the record or the log does not say the pods were not Ready:\n%s", h.log)
	}
}
