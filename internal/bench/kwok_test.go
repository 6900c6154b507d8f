package bench

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func TestNewPeerNamesTheFix(t *testing.T) {
	dir := t.TempDir()
	if _, err := NewPeer("kubemark", dir); err == nil || !strings.Contains(err.Error(), "the only peer is kwok") {
		t.Errorf("unknown peer: %v", err)
	}
	if _, err := NewPeer("kwok", dir); err == nil || !strings.Contains(err.Error(), "run `make kwok`") {
		t.Errorf("kwok missing: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kwok"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewPeer("kwok", dir); err == nil {
		t.Errorf("kwok not executable: no error")
	}
	if err := os.Chmod(filepath.Join(dir, "kwok"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := NewPeer("kwok", dir)
	if err != nil || p.Binary != filepath.Join(dir, "kwok") || p.Name != "kwok" {
		t.Errorf("NewPeer = %+v, %v", p, err)
	}
}

func TestKwokArgsKeepTheFleetsNodesAtTheKubeletsLease(t *testing.T) {
	dir := t.TempDir()
	args, err := kwokArgs("/cp/admin.kubeconfig", dir)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(args, " ")
	for _, want := range []string{
		"--kubeconfig /cp/admin.kubeconfig",
		"--config " + filepath.Join(dir, "kwok-stages.yaml"),
		"--manage-nodes-with-label-selector fakelet.dev/fleet",
		"--node-lease-duration-seconds 40",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("kwok %s: no %q", got, want)
		}
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "kwok-stages.yaml")); err != nil || !bytes.Equal(raw, kwokStages) {
		t.Errorf("stage file not written: %v", err)
	}
}

// stage is the part of a kwok Stage this test reads.
type stage struct {
	Kind     string
	Metadata struct{ Name string }
	Spec     struct {
		ResourceRef struct{ APIGroup, Kind string } `json:"resourceRef"`
		Next        struct {
			Patches []struct{ Subresource, Root, Type, Template string }
		}
	}
}

// The stages' templates, rendered as kwok renders them (Go templates with its Now and Quote), make a
// status patch that leaves every node condition of a kubelet healthy and fresh.
func TestKwokStagesPatchHealthyNodeStatus(t *testing.T) {
	var stages []stage
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(kwokStages), 4096)
	for {
		var s stage
		if err := dec.Decode(&s); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		stages = append(stages, s)
	}
	var names []string
	for _, s := range stages {
		names = append(names, s.Metadata.Name)
	}
	if want := []string{"fakelet-bench-node-ready", "fakelet-bench-node-status-report"}; !slices.Equal(names, want) {
		t.Fatalf("stages %v, want %v", names, want)
	}
	const now = "2026-12-01T09:00:00Z"
	funcs := template.FuncMap{"Now": func() string { return now }, "Quote": func(s any) string { return `"` + s.(string) + `"` }}
	// The status of a node the node lifecycle controller has marked Unknown, as kwok's templates see it.
	node := map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "MemoryPressure", "status": "Unknown"}, map[string]any{"type": "DiskPressure", "status": "Unknown"},
		map[string]any{"type": "PIDPressure", "status": "Unknown"}, map[string]any{"type": "Ready", "status": "Unknown"},
	}}}
	for _, s := range stages {
		if s.Kind != "Stage" || s.Spec.ResourceRef.Kind != "Node" || len(s.Spec.Next.Patches) != 1 {
			t.Fatalf("stage %s: %+v", s.Metadata.Name, s)
		}
		p := s.Spec.Next.Patches[0]
		if p.Subresource != "status" || p.Root != "status" || p.Type != "strategic" {
			t.Errorf("stage %s patches %+v, want a strategic merge patch of the status subresource", s.Metadata.Name, p)
		}
		tpl, err := template.New(s.Metadata.Name).Funcs(funcs).Parse(p.Template)
		if err != nil {
			t.Fatalf("stage %s: %v", s.Metadata.Name, err)
		}
		var out bytes.Buffer
		if err := tpl.Execute(&out, node); err != nil {
			t.Fatalf("stage %s: %v", s.Metadata.Name, err)
		}
		var status corev1.NodeStatus
		if err := yaml.UnmarshalStrict(out.Bytes(), &status); err != nil {
			t.Fatalf("stage %s renders no NodeStatus: %v\n%s", s.Metadata.Name, err, out.String())
		}
		if len(status.Conditions) != 4 {
			t.Fatalf("stage %s: %d conditions, want the kubelet's 4:\n%s", s.Metadata.Name, len(status.Conditions), out.String())
		}
		for _, c := range status.Conditions {
			if c.LastHeartbeatTime.UTC().Format("2006-01-02T15:04:05Z") != now {
				t.Errorf("stage %s: condition %s heartbeat %v, want now", s.Metadata.Name, c.Type, c.LastHeartbeatTime)
			}
			// The first stage makes the node healthy; the other renews heartbeat times only.
			want := corev1.ConditionStatus("")
			if s.Metadata.Name == "fakelet-bench-node-ready" {
				want = corev1.ConditionFalse
				if c.Type == corev1.NodeReady {
					want = corev1.ConditionTrue
				}
			}
			if c.Status != want {
				t.Errorf("stage %s: condition %s status %q, want %q", s.Metadata.Name, c.Type, c.Status, want)
			}
		}
	}
}
