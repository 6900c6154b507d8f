package agent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// csiNodeLoop publishes the node's CSINode as the kubelet's CSI plugin does at start (kubelet
// footprint only; pkg/volume/csi/csi_plugin.go initializeCSINode and nodeinfomanager
// InitializeCSINodeWithAnnotation): it waits for the apiserver with a GET of the CSINode from the
// watch cache every second, then, with the plugin's backoffs, GETs the Node for its UID, GETs the
// CSINode and creates it, owned by the Node, if it is missing.
//
// The CSINode goes with its Node: the garbage collector deletes it once the fleet's cleanup has
// deleted the Node it is owned by. An existing CSINode is left alone, where a kubelet would update
// its annotation or delete it if another Node owns it: fakelet never writes what it did not create.
type csiNodeLoop struct {
	r *run
	c caller
}

// migratedPlugins is the annotation a v1.37 kubelet writes: every in-tree plugin it migrated to CSI.
const migratedPlugins = "kubernetes.io/aws-ebs,kubernetes.io/azure-disk,kubernetes.io/azure-file,kubernetes.io/cinder," +
	"kubernetes.io/gce-pd,kubernetes.io/portworx-volume,kubernetes.io/vsphere-volume"

// The plugin's backoffs: initBackoff around updateBackoff (30 ms x8 over 6 steps, 10 ms x5 over 4).
var (
	csiInitBackoff   = backoff{steps: 6, duration: 30 * time.Millisecond, factor: 8, jitter: 0.1}
	csiUpdateBackoff = backoff{steps: 4, duration: 10 * time.Millisecond, factor: 5, jitter: 0.1}
)

// backoff is wait.Backoff as ExponentialBackoff uses it: a try, then a sleep before each next one.
type backoff struct {
	steps    int
	duration time.Duration
	factor   float64
	jitter   float64
}

// retry calls try until it succeeds, steps times at most, sleeping on the scheduler between tries.
// It reports whether a try succeeded.
func (b backoff) retry(r *run, try func() bool) bool {
	d := b.duration
	for i := 0; i < b.steps; i++ {
		if try() {
			return true
		}
		if i == b.steps-1 {
			break
		}
		if r.a.cfg.Scheduler.Sleep(r.ctx, r.a.cfg.jitter(d, b.jitter)) != nil {
			return false
		}
		d = time.Duration(float64(d) * b.factor)
	}
	return false
}

// Run is the plugin's goroutine, once per run.
func (l *csiNodeLoop) Run() {
	r := l.r
	for { // waitForAPIServerForever
		_, err := l.c.getCSINode("0")
		if err == nil || apierrors.IsNotFound(err) {
			break
		}
		if r.a.cfg.Scheduler.Sleep(r.ctx, time.Second) != nil {
			return
		}
	}
	csiInitBackoff.retry(r, func() bool {
		return csiUpdateBackoff.retry(r, l.tryInitialize)
	})
}

// tryInitialize is tryInitializeCSINodeWithAnnotation, but for an existing CSINode, which it leaves.
func (l *csiNodeLoop) tryInitialize() bool {
	node, err := l.c.getNode(mainClient)
	if err != nil {
		return false
	}
	_, err = l.c.getCSINode("")
	if err == nil {
		return true
	}
	if !apierrors.IsNotFound(err) {
		return false
	}
	a := l.r.a
	csiNode := &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name:            a.name,
			Annotations:     map[string]string{corev1.MigratedPluginsAnnotationKey: migratedPlugins},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: a.name, UID: node.UID}},
		},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{}},
	}
	_, err = l.c.createCSINode(csiNode)
	return err == nil
}

func (c *caller) getCSINode(resourceVersion string) (out *storagev1.CSINode, err error) {
	err = c.call("get", "csinodes", func(ctx context.Context) error {
		out, err = c.r.a.api.Storage.CSINodes().Get(ctx, c.r.a.name, metav1.GetOptions{ResourceVersion: resourceVersion})
		return err
	})
	return out, err
}

func (c *caller) createCSINode(n *storagev1.CSINode) (out *storagev1.CSINode, err error) {
	err = c.call("create", "csinodes", func(ctx context.Context) error {
		out, err = c.r.a.api.Storage.CSINodes().Create(ctx, n, metav1.CreateOptions{})
		return err
	})
	return out, err
}
