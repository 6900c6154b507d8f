package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"fakelet.dev/fakelet/agent"
)

// Bad node shapes stop `fakelet run` before anything starts, each error naming its flag and value.
func TestNodeShapeFlagsAreRefusedByFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--node-label=pool"}, `--node-label "pool": label "pool": want KEY=VALUE`},
		{[]string{"--node-label=node-role.kubernetes.io/worker="}, `--node-label "node-role.kubernetes.io/worker=": label node-role.kubernetes.io/worker: a kubelet may not register its Node with a kubernetes.io or k8s.io label`},
		{[]string{"--node-label=kubernetes.io/hostname=x"}, "set by fakelet itself"},
		{[]string{"--node-label=a=1", "--node-label=a=2"}, `--node-label "a=2": label a is given twice`},
		{[]string{"--node-taint=dedicated=infra"}, `--node-taint "dedicated=infra": taint "dedicated=infra": want KEY=VALUE:EFFECT or KEY:EFFECT`},
		{[]string{"--node-taint=dedicated:NoSchedul"}, `effect "NoSchedul": want one of NoSchedule, PreferNoSchedule, NoExecute`},
		{[]string{"--node-taint=a=1:NoSchedule", "--node-taint=a=2:NoSchedule"}, "a taint a:NoSchedule is given twice"},
		{[]string{"--node-allocatable=cpu=lots"}, `--node-allocatable "cpu=lots": allocatable cpu "lots"`},
		{[]string{"--node-allocatable=gpu=1"}, "fakelet sets only cpu, memory, pods"},
		{[]string{"--node-allocatable=pods=300"}, "at most 250"},
		{[]string{"--node-allocatable=cpu=2", "--node-allocatable=cpu=4"}, `--node-allocatable "cpu=4": cpu is given twice`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, _, err := prepareRun(t, append([]string{"--kubeconfig", "/nonexistent"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestNodeShapeFlagsShapeTheFleet(t *testing.T) {
	cfg, _, err := prepareRun(t, "--node-label=example.com/pool=general", "--node-label=node.kubernetes.io/instance-type=fake",
		"--node-taint=example.com/dedicated=fakelet:NoSchedule", "--node-taint=example.com/gpu:NoExecute",
		"--node-allocatable=cpu=4,memory=16Gi", "--node-allocatable=pods=50")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := cfg.Template
	if want := map[string]string{"example.com/pool": "general", "node.kubernetes.io/instance-type": "fake"}; !reflect.DeepEqual(tmpl.Labels, want) {
		t.Errorf("labels %v, want %v", tmpl.Labels, want)
	}
	wantTaints := []corev1.Taint{{Key: "example.com/dedicated", Value: "fakelet", Effect: corev1.TaintEffectNoSchedule},
		{Key: "example.com/gpu", Effect: corev1.TaintEffectNoExecute}}
	if !reflect.DeepEqual(tmpl.Taints, wantTaints) {
		t.Errorf("taints %v, want %v", tmpl.Taints, wantTaints)
	}
	for name, want := range map[corev1.ResourceName][2]string{
		corev1.ResourceCPU: {"4", "4"}, corev1.ResourceMemory: {"16Gi", "16484Mi"}, corev1.ResourcePods: {"50", "50"},
		corev1.ResourceEphemeralStorage: {"93478772582", "101430960Ki"},
	} {
		if a, c := tmpl.Allocatable[name], tmpl.Capacity[name]; a.Cmp(resource.MustParse(want[0])) != 0 || c.Cmp(resource.MustParse(want[1])) != 0 {
			t.Errorf("%s: allocatable %s, capacity %s; want %s, %s", name, a.String(), c.String(), want[0], want[1])
		}
	}
	if tmpl.Groups != nil || tmpl.GroupOf != nil {
		t.Error("groups' shapes without a profile")
	}
}

// A profile's shaped groups reach the fleet's template, laid over the flags' shape.
func TestProfileGroupsShapeTheirNodes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shaped.yaml")
	profile := `apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: shaped}
spec:
  nodes: 10
  podsPerNode: 20
  groups:
    big: {indexes: "0-2", labels: {example.com/pool: big}, allocatable: {cpu: "64"}}
  phases: [{name: p, duration: 1m}]
`
	if err := os.WriteFile(path, []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := prepareRun(t, "--profile", path, "--node-label=example.com/pool=general")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Template.Groups) != 1 || cfg.Template.Groups[0].Labels["example.com/pool"] != "big" {
		t.Fatalf("template groups %+v, want big's shape", cfg.Template.Groups)
	}
	for index, want := range map[int]int{0: 0, 2: 0, 3: -1, 9: -1} {
		if got := cfg.Template.GroupOf(index); got != want {
			t.Errorf("GroupOf(%d) = %d, want %d", index, got, want)
		}
	}
	if cfg.Template.Labels["example.com/pool"] != "general" {
		t.Errorf("the fleet's labels %v, want the flag's", cfg.Template.Labels)
	}
	// The fleet's own pods must fit a flag's allocatable pods.
	if _, _, err := prepareRun(t, "--profile", path, "--node-allocatable=pods=10"); err == nil ||
		!strings.Contains(err.Error(), "--node-allocatable pods=10: fewer than the profile's spec.podsPerNode 20") {
		t.Errorf("pods that do not fit the allocatable: %v", err)
	}
}

// FuzzNodeShapeFlags: a node shape the flags accept is one the fleet's template takes, so no bad
// label, taint or quantity gets past the flag checks to fail once the run has started.
func FuzzNodeShapeFlags(f *testing.F) {
	f.Add("example.com/pool=big", "a=b:NoSchedule", "cpu=4,memory=16Gi,pods=50")
	f.Add("kubernetes.io/hostname=x", "node.kubernetes.io/x:NoExecute", "pods=0.5")
	f.Add("a=", "k:PreferNoSchedule", "memory=1e3")
	f.Fuzz(func(t *testing.T, label, taint, allocatable string) {
		rf := &runFlags{}
		cmd := newRunCommandFor(rf)
		if err := cmd.ParseFlags([]string{"--node-label=" + label, "--node-taint=" + taint, "--node-allocatable=" + allocatable}); err != nil {
			return
		}
		r, _, err := rf.prepare(cmd.Flags())
		if err != nil {
			return
		}
		cfg := r.Config()
		tmpl := cfg.Template
		tmpl.Fleet = cfg.Fleet
		if _, err := agent.NewTemplate(tmpl); err != nil {
			t.Fatalf("flags %q %q %q accepted, and the template refuses them: %v", label, taint, allocatable, err)
		}
	})
}
