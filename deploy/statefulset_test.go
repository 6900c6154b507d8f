package deploy

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"fakelet.dev/fakelet/fleet"
)

// reportVolumeLimit bounds the reports' emptyDir. Every series of a report is bounded whatever the
// run's size and length (docs/report.md: timelines of at most 600 points, at most 10,000 latency
// samples per reaction, at most 20 storms of 600 seconds), so that the files of even a large shard
// are far below it; it is there for a fault, so that the pod is evicted before the node's disk fills.
var reportVolumeLimit = resource.MustParse("256Mi")

// stopMargin is what a shard does on SIGTERM besides its cleanup: stop its agents, write its summary
// and report.
const stopMargin = 30 * time.Second

func readStatefulSet(t *testing.T) appsv1.StatefulSet {
	t.Helper()
	b, err := os.ReadFile("kubernetes/base/statefulset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sts appsv1.StatefulSet
	if err := utilyaml.Unmarshal(b, &sts); err != nil {
		t.Fatal(err)
	}
	return sts
}

// TestStatefulSetOutlastsItsCleanup: a shard of the size its requests are sized for (its
// fakelet.dev/nodes-per-shard) gets the time its cleanup may take (fleet.CleanupDeadline for its Nodes
// and their Leases at its --cleanup-qps) and stopMargin before the kubelet kills it: killed earlier,
// it would leave Nodes and Leases behind.
func TestStatefulSetOutlastsItsCleanup(t *testing.T) {
	sts := readStatefulSet(t)
	n, err := strconv.Atoi(sts.Annotations[sizedForAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	qps := float64(fleet.DefaultCleanupQPS)
	for _, a := range sts.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--cleanup-qps="); ok {
			if qps, err = strconv.ParseFloat(v, 64); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := int64((fleet.CleanupDeadline(2*n, qps) + stopMargin + time.Second - 1) / time.Second)
	if got := sts.Spec.Template.Spec.TerminationGracePeriodSeconds; got == nil || *got != want {
		t.Errorf("terminationGracePeriodSeconds %s for %d nodes per shard at %v deletions a second, want %d: the cleanup's deadline %v and %v to stop",
			fmtSeconds(got), n, qps, want, fleet.CleanupDeadline(2*n, qps), stopMargin)
	}
}

// TestStatefulSetReportVolumeIsBounded: the reports' emptyDir has a sizeLimit, so that a report that
// grew past its bound is evicted instead of filling the node's disk.
func TestStatefulSetReportVolumeIsBounded(t *testing.T) {
	sts := readStatefulSet(t)
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name != "reports" {
			continue
		}
		if v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Cmp(reportVolumeLimit) != 0 {
			t.Errorf("volume reports %+v, want an emptyDir with sizeLimit %s", v.VolumeSource, reportVolumeLimit.String())
		}
		return
	}
	t.Error("no volume reports")
}

// TestMetricsPortOnlyForPrometheus: the StatefulSet binds its metrics port on every address, and a
// NetworkPolicy in the base lets only Prometheus's pods, in Prometheus's namespace, connect to it:
// it selects the StatefulSet's pods, is of Ingress, and its one rule names the port and both a
// namespace and a pod selector (either alone would let a namespace's every pod, or every namespace's
// pods so labelled, read the metrics and the report).
func TestMetricsPortOnlyForPrometheus(t *testing.T) {
	sts := readStatefulSet(t)
	if !slices.Contains(sts.Spec.Template.Spec.Containers[0].Args, "--metrics-addr=0.0.0.0:9464") {
		t.Skip("the metrics port is not on every address: nothing to guard")
	}
	k, err := os.ReadFile("kubernetes/base/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(k), "- networkpolicy.yaml\n") {
		t.Fatal("kubernetes/base/kustomization.yaml does not list networkpolicy.yaml")
	}
	b, err := os.ReadFile("kubernetes/base/networkpolicy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var np networkingv1.NetworkPolicy
	if err := utilyaml.Unmarshal(b, &np); err != nil {
		t.Fatal(err)
	}
	sel, err := labels.ValidatedSelectorFromSet(np.Spec.PodSelector.MatchLabels)
	if err != nil || len(np.Spec.PodSelector.MatchLabels) == 0 || !sel.Matches(labels.Set(sts.Spec.Template.Labels)) {
		t.Errorf("the NetworkPolicy selects %v, not the StatefulSet's pods %v", np.Spec.PodSelector.MatchLabels, sts.Spec.Template.Labels)
	}
	if np.Namespace != sts.Namespace || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("NetworkPolicy in %q of %v, want in %q of Ingress", np.Namespace, np.Spec.PolicyTypes, sts.Namespace)
	}
	if len(np.Spec.Ingress) != 1 {
		t.Fatalf("%d ingress rules, want 1", len(np.Spec.Ingress))
	}
	rule := np.Spec.Ingress[0]
	if len(rule.Ports) != 1 || rule.Ports[0].Port == nil || rule.Ports[0].Port.String() != "metrics" {
		t.Errorf("ingress to ports %+v, want only the port metrics", rule.Ports)
	}
	for _, from := range rule.From {
		if from.IPBlock != nil || from.NamespaceSelector == nil || len(from.NamespaceSelector.MatchLabels) == 0 ||
			from.PodSelector == nil || len(from.PodSelector.MatchLabels) == 0 {
			t.Errorf("ingress from %+v: want pods by label in a namespace by label", from)
		}
	}
	if len(rule.From) == 0 {
		t.Error("ingress from anywhere")
	}
	var port int32
	for _, p := range sts.Spec.Template.Spec.Containers[0].Ports {
		if p.Name == "metrics" {
			port = p.ContainerPort
		}
	}
	if port != 9464 {
		t.Errorf("the StatefulSet's port metrics is %d, want 9464", port)
	}
}

func fmtSeconds(s *int64) string {
	if s == nil {
		return "unset"
	}
	return strconv.FormatInt(*s, 10)
}
