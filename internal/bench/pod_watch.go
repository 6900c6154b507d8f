package bench

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	watchtools "k8s.io/client-go/tools/watch"

	"fakelet.dev/fakelet/internal/pause"
)

// watchPods lists and watches the pods of namespace that match selector, handing each one that is
// not deleted to see, until see says it has seen enough or deadline passes (both nil), listing again
// when the server ends the watch or a request fails.
func watchPods(ctx context.Context, cs kubernetes.Interface, namespace, selector string, deadline time.Time, see func(*corev1.Pod) bool) error {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	pods := cs.CoreV1().Pods(namespace)
	for {
		list, err := pods.List(wctx, metav1.ListOptions{LabelSelector: selector})
		if err == nil {
			for i := range list.Items {
				if see(&list.Items[i]) {
					return nil
				}
			}
			var w watch.Interface
			if w, err = pods.Watch(wctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion}); err == nil {
				_, err = watchtools.UntilWithoutRetry(wctx, w, func(e watch.Event) (bool, error) {
					pod, ok := e.Object.(*corev1.Pod)
					return ok && e.Type != watch.Deleted && see(pod), nil
				})
			}
		}
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case wctx.Err() != nil:
			return nil // what was seen by the deadline is what the caller counts
		case errors.Is(err, watchtools.ErrWatchClosed):
			continue
		}
		// A busy apiserver times out a list of thousands of pods: list again a moment later.
		if err := pause.For(wctx, time.Second); err != nil && ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
}
