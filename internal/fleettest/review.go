package fleettest

import (
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Grant makes the fake clientset answer SelfSubjectAccessReviews as an authorizer that allows what
// allowed says; the tracker alone would echo every review back denied.
func Grant(client *fake.Clientset, allowed func(*authorizationv1.ResourceAttributes) bool) {
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		r.Status.Allowed = allowed(r.Spec.ResourceAttributes)
		return true, r, nil
	})
}

// GrantAll is Grant of every request.
func GrantAll(client *fake.Clientset) {
	Grant(client, func(*authorizationv1.ResourceAttributes) bool { return true })
}
