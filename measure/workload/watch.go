package workload

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// syncTimeout bounds the wait for the watches' first lists.
const syncTimeout = time.Minute

// Watch starts one watch each of the pods, EndpointSlices and Deployments of namespace, feeding r,
// until ctx ends, and waits for their first lists. The informers' stores hold each object compacted
// to what r reads.
func (r *Recorder) Watch(ctx context.Context, client kubernetes.Interface, namespace string) error {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace),
		informers.WithTransform(compact))
	pods := f.Core().V1().Pods().Informer()
	slices := f.Discovery().V1().EndpointSlices().Informer()
	deployments := f.Apps().V1().Deployments().Informer()
	handle(pods, r.ObservePod)
	handle(slices, r.ObserveEndpointSlice)
	handle(deployments, r.ObserveDeployment)
	f.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	for typ, ok := range f.WaitForCacheSync(syncCtx.Done()) {
		if !ok && ctx.Err() == nil {
			return fmt.Errorf("watch %v in namespace %s: no first list within %v", typ, namespace, syncTimeout)
		}
	}
	return nil
}

// handle feeds an informer's events to observe(old, new), new nil for a deletion.
func handle[T any](inf cache.SharedIndexInformer, observe func(old, n *T)) {
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*T); ok {
				observe(nil, n)
			}
		},
		UpdateFunc: func(oldObj, obj any) {
			o, _ := oldObj.(*T)
			if n, ok := obj.(*T); ok {
				observe(o, n)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if o, ok := obj.(*T); ok {
				observe(o, nil)
			}
		},
	})
}

// compact keeps of each object what the Recorder reads, so that the stores cost little per pod.
func compact(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return &corev1.Pod{
			ObjectMeta: compactMeta(o.ObjectMeta, o.Labels[WorkloadLabel], o.Annotations[PullDelayAnnotation]),
			Spec:       corev1.PodSpec{NodeName: o.Spec.NodeName},
			Status:     corev1.PodStatus{Phase: o.Status.Phase, Conditions: o.Status.Conditions, ContainerStatuses: runningOnly(o.Status.ContainerStatuses)},
		}, nil
	case *discoveryv1.EndpointSlice:
		out := &discoveryv1.EndpointSlice{ObjectMeta: compactMeta(o.ObjectMeta, "", "")}
		for _, e := range o.Endpoints {
			out.Endpoints = append(out.Endpoints, discoveryv1.Endpoint{Conditions: e.Conditions, TargetRef: e.TargetRef})
		}
		return out, nil
	case *appsv1.Deployment:
		return &appsv1.Deployment{ObjectMeta: compactMeta(o.ObjectMeta, "", ""),
			Spec: appsv1.DeploymentSpec{Replicas: o.Spec.Replicas}, Status: o.Status}, nil
	}
	return obj, nil
}

func compactMeta(m metav1.ObjectMeta, workload, pull string) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp}
	if workload != "" {
		out.Labels = map[string]string{WorkloadLabel: workload}
	}
	if pull != "" {
		out.Annotations = map[string]string{PullDelayAnnotation: pull}
	}
	return out
}

func runningOnly(cs []corev1.ContainerStatus) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(cs))
	for _, c := range cs {
		out = append(out, corev1.ContainerStatus{Name: c.Name, State: corev1.ContainerState{Running: c.State.Running}})
	}
	return out
}
