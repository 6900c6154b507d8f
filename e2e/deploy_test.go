package e2e

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"fakelet.dev/fakelet/fleetname"
)

// kustomizeBuild renders a kustomization with kustomize pinned in tools/kustomize, built into bin/
// ($FAKELET_KUSTOMIZE names a kustomize binary to use instead).
func kustomizeBuild(t *testing.T, dir string) []byte {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bin := os.Getenv("FAKELET_KUSTOMIZE")
	if bin == "" {
		bin = filepath.Join(root, "bin", "kustomize")
		build := exec.Command("go", "build", "-o", bin, "sigs.k8s.io/kustomize/kustomize/v5")
		build.Dir = filepath.Join(root, "tools", "kustomize")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build kustomize: %v\n%s", err, out)
		}
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "build", filepath.Join(root, dir))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize build %s: %v\n%s", dir, err, stderr.String())
	}
	return out
}

// TestDeployKubernetesDryRun: every object deploy/kubernetes renders (both overlays) passes a
// server-side dry-run apply against the local control plane, which validates it against the
// apiserver's OpenAPI schemas and admission. The fakelet namespace's objects go to a namespace of
// the test's own, created for it; the Leases' Role stays in kube-node-lease. The PodMonitor component
// needs the Prometheus Operator's CRD, which the local control plane does not have: it is rendered,
// and its dry-run must fail only for want of the kind.
func TestDeployKubernetesDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	cp := controlPlane(t)
	ctx := t.Context()
	cs := admin(t, cp)
	dyn, err := dynamic.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cp.AdminConfig())))
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "fakelet-deploy-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(t.Context(), ns.Name, metav1.DeleteOptions{}) })

	apply := func(t *testing.T, o *unstructured.Unstructured) error {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return err
		}
		if m.Scope.Name() == meta.RESTScopeNameNamespace && o.GetNamespace() == "fakelet" {
			o.SetNamespace(ns.Name)
		}
		data, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		r := dyn.Resource(m.Resource)
		opts := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "fakelet-e2e", Force: ptrTrue(),
			FieldValidation: "Strict"}
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			_, err = r.Namespace(o.GetNamespace()).Patch(ctx, o.GetName(), "application/apply-patch+yaml", data, opts)
		} else {
			_, err = r.Patch(ctx, o.GetName(), "application/apply-patch+yaml", data, opts)
		}
		return err
	}
	t.Run("validates", func(t *testing.T) { // the dry-run does check: a misspelt field is refused
		objs := decodeAll(t, kustomizeBuild(t, "deploy/kubernetes/overlays/small"))
		for _, o := range objs {
			if o.GetKind() == "StatefulSet" {
				if err := unstructured.SetNestedField(o.Object, int64(2), "spec", "replica"); err != nil {
					t.Fatal(err)
				}
				if err := apply(t, o); err == nil || !strings.Contains(err.Error(), "replica") {
					t.Errorf("a StatefulSet with spec.replica: %v, want it refused", err)
				}
			}
		}
	})
	for _, overlay := range []string{"small", "large"} {
		t.Run(overlay, func(t *testing.T) {
			objs := decodeAll(t, kustomizeBuild(t, "deploy/kubernetes/overlays/"+overlay))
			if len(objs) < 8 {
				t.Fatalf("rendered %d objects, want at least 8", len(objs))
			}
			for _, o := range objs {
				if err := apply(t, o); err != nil {
					t.Errorf("dry-run apply %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
				}
			}
		})
	}
	t.Run("pods", func(t *testing.T) { // the component a profile with pods needs
		roles := 0
		for _, o := range decodeAll(t, kustomizeBuild(t, "deploy/testdata/pods")) {
			if o.GetName() == "fakelet-pods" && (o.GetKind() == "Role" || o.GetKind() == "RoleBinding") {
				roles++
				if o.GetNamespace() != fleetname.PodNamespace {
					t.Errorf("%s fakelet-pods in namespace %q, want the pods' own, %s", o.GetKind(), o.GetNamespace(), fleetname.PodNamespace)
				}
			}
			// A dry run creates no namespace: the Role and RoleBinding in the component's own
			// namespace cannot be checked against it, only their rendering above.
			if err := apply(t, o); err != nil && !(o.GetNamespace() == fleetname.PodNamespace && apierrors.IsNotFound(err)) {
				t.Errorf("dry-run apply %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
		}
		if roles != 2 {
			t.Errorf("the pods component rendered %d objects named fakelet-pods, want its Role and RoleBinding", roles)
		}
	})
	t.Run("podmonitor", func(t *testing.T) {
		objs := decodeAll(t, kustomizeBuild(t, "deploy/testdata/podmonitor"))
		for _, o := range objs {
			if o.GetKind() != "PodMonitor" {
				continue
			}
			err := apply(t, o)
			var noKind *meta.NoKindMatchError
			if !errors.As(err, &noKind) {
				t.Errorf("dry-run apply of the PodMonitor: %v; want only that the kind is not served here", err)
			}
			return
		}
		t.Error("the component renders no PodMonitor")
	})
}

func ptrTrue() *bool { b := true; return &b }

func decodeAll(t *testing.T, b []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		var o unstructured.Unstructured
		if err := dec.Decode(&o.Object); err != nil {
			if err == io.EOF {
				return out
			}
			t.Fatal(err)
		}
		if len(o.Object) > 0 && strings.TrimSpace(o.GetKind()) != "" {
			out = append(out, &o)
		}
	}
}
