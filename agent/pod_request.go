package agent

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The API calls of the pod loop, beside those of request.go, through the same call.

// patchPodStatus sends the kubelet's status patch of p (podStatusPatch).
func (c *caller) patchPodStatus(p *corev1.Pod, patch []byte) (out *corev1.Pod, err error) {
	err = c.call("patch", "pods", func(ctx context.Context) error {
		out, err = c.r.a.main().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	})
	return out, err
}

// deletePod confirms the deletion of p, whose deletion someone requested, as the kubelet does once its
// containers stopped: with no grace period left, and only if p is still the pod of that name.
func (c *caller) deletePod(p *corev1.Pod) error {
	return c.call("delete", "pods", func(ctx context.Context) error {
		return c.r.a.main().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &p.UID},
		})
	})
}

// isGone says that a pod call failed because the pod is gone or is another pod now: nothing to retry.
func isGone(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsConflict(err)
}

// getPod is the status manager's GET before each status patch.
func (c *caller) getPod(p *corev1.Pod) (out *corev1.Pod, err error) {
	err = c.call("get", "pods", func(ctx context.Context) error {
		out, err = c.r.a.main().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		return err
	})
	return out, err
}

// createToken is the token manager's TokenRequest tr of a token of a pod's service account, bound
// to the pod (tokens.go).
func (c *caller) createToken(namespace, serviceAccount string, tr *authenticationv1.TokenRequest) (out *authenticationv1.TokenRequest, err error) {
	err = c.call("create", "serviceaccounts", func(ctx context.Context) error {
		out, err = c.r.a.api.Core.ServiceAccounts(namespace).CreateToken(ctx, serviceAccount, tr, metav1.CreateOptions{})
		return err
	})
	return out, err
}
