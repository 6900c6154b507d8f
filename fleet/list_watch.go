package fleet

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// selectedListWatch lists and watches through a typed client's List and Watch, only the objects
// that match selector (the fleet's label).
func selectedListWatch[L runtime.Object](selector string,
	list func(context.Context, metav1.ListOptions) (L, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) *cache.ListWatch {
	return optionsListWatch(func(o *metav1.ListOptions) { o.LabelSelector = selector }, list, watchFn)
}

// selectedFieldListWatch is selectedListWatch by field selector.
func selectedFieldListWatch[L runtime.Object](selector string,
	list func(context.Context, metav1.ListOptions) (L, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) *cache.ListWatch {
	return optionsListWatch(func(o *metav1.ListOptions) { o.FieldSelector = selector }, list, watchFn)
}

// optionsListWatch lists and watches with each request's options set by set.
func optionsListWatch[L runtime.Object](set func(*metav1.ListOptions),
	list func(context.Context, metav1.ListOptions) (L, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			set(&o)
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			set(&o)
			return watchFn(ctx, o)
		},
	}
}
