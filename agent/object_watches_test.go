package agent

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// tokenPod is a pod as the ServiceAccount admission plugin leaves it: its service account, and a
// projected service account token volume with the plugin's TTL, which references kube-root-ca.crt;
// plus an image pull secret, and an environment variable from a ConfigMap, read only when the
// container starts.
func tokenPod(name string, uid types.UID, env string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fakelet", UID: uid},
		Spec: corev1.PodSpec{
			NodeName:           "fakelet-00007",
			ServiceAccountName: "default",
			ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "regcred-" + name}},
			Containers:         []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
					{DownwardAPI: &corev1.DownwardAPIProjection{}},
				},
			}}}},
		}}
	if env != "" {
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: env}, Key: "x"}}}}
	}
	return p
}

// objectWatchesOf returns the configmap and secret watches among ws, by query.
func objectWatchesOf(ws []*fakeWatch) map[string]*fakeWatch {
	out := map[string]*fakeWatch{}
	for _, fw := range ws {
		if fw.req.Resource == "configmaps" || fw.req.Resource == "secrets" {
			out[fw.req.String()] = fw
		}
	}
	return out
}

func objectQuery(resource, name string) string {
	// rand 0.5: the timeout is 2700 s, in the managers' [1800, 3600).
	return "/api/v1/namespaces/fakelet/" + resource + "?allowWatchBookmarks=true&fieldSelector=metadata.name%3D" + name +
		"&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeout=45m0s&timeoutSeconds=2700&watch=true"
}

// deletePod deletes pod as a user does and shows the agent its deletion; its sync finishes it.
func deletePod(t *testing.T, h *harness, a *Agent, name string) {
	t.Helper()
	pods := h.client.CoreV1().Pods("fakelet")
	got, err := pods.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.DeletionTimestamp = &metav1.Time{Time: h.clock.Now()}
	if got, err = pods.Update(context.Background(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.ObservePod(got)
}

// The configmap and secret managers watch each object the node's pods reference, once per object
// however many pods reference it, from the pod's first sync until the last pod referencing it is
// finished; an object read only when a container starts goes idle after five minutes.
func TestObjectWatchesFollowThePods(t *testing.T) {
	h, a, w := kubeletAgent(t)
	pods := h.client.CoreV1().Pods("fakelet")
	a.Start(h.ctx)
	h.advance(5 * time.Second)
	if ws := objectWatchesOf(w.take()); len(ws) != 0 {
		t.Fatalf("a kubelet without pods opened %d object watches", len(ws))
	}

	first, err := pods.Create(context.Background(), tokenPod("p1", "uid-p1", "settings"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.ObservePod(first)
	h.advance(6 * time.Second)
	ws := objectWatchesOf(w.take())
	for _, q := range []string{objectQuery("configmaps", "kube-root-ca.crt"), objectQuery("secrets", "regcred-p1"), objectQuery("configmaps", "settings")} {
		fw := ws[q]
		if fw == nil {
			t.Fatalf("no watch %s; opened %v", q, ws)
		}
		if user, _, _ := IdentityFrom(fw.ctx); user != "system:node:fakelet-00007" {
			t.Errorf("watch %s sent as %q, want the node", q, user)
		}
		fw.h.Opened(nil)
		fw.h.Event(WatchEvent{Type: EventBookmark, ResourceVersion: "10", InitialEventsEnd: true})
	}
	if len(ws) != 3 {
		t.Errorf("opened %d object watches, want 3: %v", len(ws), ws)
	}
	rootCA, regcred1, settings := ws[objectQuery("configmaps", "kube-root-ca.crt")], ws[objectQuery("secrets", "regcred-p1")], ws[objectQuery("configmaps", "settings")]

	// A second pod in the namespace shares the kube-root-ca.crt watch.
	h.advance(30 * time.Second)
	second, err := pods.Create(context.Background(), tokenPod("p2", "uid-p2", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.ObservePod(second)
	h.advance(31 * time.Second)
	ws = objectWatchesOf(w.take())
	if len(ws) != 1 || ws[objectQuery("secrets", "regcred-p2")] == nil {
		t.Fatalf("the second pod opened %v, want its pull secret's watch only", ws)
	}
	regcred2 := ws[objectQuery("secrets", "regcred-p2")]

	// The ConfigMap only the first container's environment read closes at the idle check's first
	// minute after five idle ones: the first pod registered at 5 s, so at 6 minutes.
	h.advance(6*time.Minute - time.Second)
	if settings.ctx.Err() != nil {
		t.Fatal("the environment's ConfigMap watch closed before it was idle for five minutes")
	}
	h.advance(6 * time.Minute)
	if settings.ctx.Err() == nil {
		t.Error("the environment's ConfigMap watch is open after five idle minutes")
	}
	for _, fw := range []*fakeWatch{rootCA, regcred1, regcred2} {
		if fw.ctx.Err() != nil {
			t.Errorf("watch %s closed while its pods run", fw.req)
		}
	}

	// The first pod finished: its pull secret's watch closes, kube-root-ca.crt's stays for the
	// second pod; with the second one gone, it closes too, and no watch is opened again.
	deletePod(t, h, a, "p1")
	h.advance(7 * time.Minute)
	if regcred1.ctx.Err() == nil || rootCA.ctx.Err() != nil {
		t.Errorf("after the first pod: regcred-p1 closed %v, kube-root-ca.crt open %v; want closed and open",
			regcred1.ctx.Err() != nil, rootCA.ctx.Err() == nil)
	}
	deletePod(t, h, a, "p2")
	h.advance(8 * time.Minute)
	if rootCA.ctx.Err() == nil || regcred2.ctx.Err() == nil {
		t.Error("the watches of the last pod's objects are open after it finished")
	}
	if ws := objectWatchesOf(w.take()); len(ws) != 0 {
		t.Errorf("opened %v after the pods finished", ws)
	}
	if known, _ := a.Pods(); known != 0 {
		t.Errorf("the agent knows %d pods after deleting them", known)
	}
}

// A restarted kubelet's managers start empty: its first sync of each pod registers it again and
// opens the watches from the newest state; the heartbeat footprint opens none.
func TestObjectWatchesAfterRestart(t *testing.T) {
	h, a, w := kubeletAgent(t)
	pod, err := h.client.CoreV1().Pods("fakelet").Create(context.Background(), tokenPod("p1", "uid-p1", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.ObservePod(pod)
	a.Start(h.ctx)
	h.advance(5 * time.Second)
	before := objectWatchesOf(w.take())
	if len(before) != 2 {
		t.Fatalf("opened %v, want kube-root-ca.crt's and the pull secret's watches", before)
	}
	a.Stop()
	for _, fw := range before {
		if fw.ctx.Err() == nil {
			t.Errorf("watch %s outlives the stopped kubelet", fw.req)
		}
	}
	a.Start(h.ctx)
	h.advance(10 * time.Second)
	after := objectWatchesOf(w.take())
	for q := range before {
		if after[q] == nil {
			t.Errorf("the restarted kubelet did not open %s; opened %v", q, after)
		}
	}

	h2 := newHarness(t)
	w2 := &fakeWatcher{h: h2}
	b := New(h2.cfg, Clients{Core: h2.client.CoreV1(), Coordination: h2.client.CoordinationV1(), Watches: w2}, "fakelet-00008", 8, "")
	pod2, err := h2.client.CoreV1().Pods("fakelet").Create(context.Background(), tokenPod("p2", "uid-p2", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.ObservePod(pod2)
	b.Start(h2.ctx)
	h2.advance(10 * time.Second)
	if ws := w2.take(); len(ws) != 0 {
		t.Errorf("the heartbeat footprint opened %d watches", len(ws))
	}
}

func TestPodObjectRefs(t *testing.T) {
	pod := tokenPod("p1", "uid-p1", "settings")
	pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: ""})
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "regcred-p1"}}},
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-env"}}},
	}}}
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
		corev1.Volume{Name: "c", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d",
			NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-creds"}}}},
	)
	got := map[objectRef]bool{}
	for _, r := range podObjectRefs(pod) {
		if _, dup := got[r.objectRef]; dup {
			t.Errorf("%v twice", r.objectRef)
		}
		got[r.objectRef] = r.everySync
	}
	want := map[objectRef]bool{
		{"secrets", "fakelet", "regcred-p1"}:          true, // a pull secret, read at every sync, whatever else reads it
		{"configmaps", "fakelet", "settings"}:         false,
		{"configmaps", "fakelet", "init-env"}:         false,
		{"configmaps", "fakelet", "kube-root-ca.crt"}: true,
		{"secrets", "fakelet", "tls"}:                 true,
		{"secrets", "fakelet", "csi-creds"}:           false, // read when the CSI volume mounts
	}
	if len(got) != len(want) {
		t.Errorf("refs %v, want %v", got, want)
	}
	for r, every := range want {
		if g, ok := got[r]; !ok || g != every {
			t.Errorf("%v: found %v, read at every sync %v; want found, %v", r, ok, g, every)
		}
	}
}

// An object that a pod's volume kept read goes idle once that pod is finished, if the pods left
// read it only when their containers started.
func TestObjectWatchIdleAfterItsVolumePodGoes(t *testing.T) {
	h, a, w := kubeletAgent(t)
	pods := h.client.CoreV1().Pods("fakelet")
	a.Start(h.ctx)
	h.advance(5 * time.Second)
	w.take()
	volume := tokenPod("p1", "uid-p1", "")
	volume.Spec.Volumes = append(volume.Spec.Volumes, corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}}})
	for _, p := range []*corev1.Pod{volume, tokenPod("p2", "uid-p2", "shared")} {
		created, err := pods.Create(context.Background(), p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a.ObservePod(created)
	}
	h.advance(6 * time.Second)
	shared := objectWatchesOf(w.take())[objectQuery("configmaps", "shared")]
	if shared == nil {
		t.Fatal("no watch of the shared ConfigMap")
	}
	shared.h.Opened(nil)
	shared.h.Event(WatchEvent{Type: EventBookmark, ResourceVersion: "10", InitialEventsEnd: true})
	h.advance(10 * time.Minute)
	if shared.ctx.Err() != nil {
		t.Fatal("the watch of a ConfigMap a running pod's volume reads closed")
	}
	deletePod(t, h, a, "p1")
	h.advance(10*time.Minute + 10*time.Second)
	if shared.ctx.Err() != nil {
		t.Fatal("the watch closed as soon as the volume's pod finished")
	}
	h.advance(17 * time.Minute)
	if shared.ctx.Err() == nil {
		t.Error("the watch of a ConfigMap only an environment reads is open five idle minutes after the volume's pod finished")
	}
}
