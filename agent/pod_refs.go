package agent

import (
	corev1 "k8s.io/api/core/v1"
)

// objectRef is a ConfigMap or Secret a pod references, in the pod's namespace.
type objectRef struct {
	resource  string // "configmaps" or "secrets"
	namespace string
	name      string
}

// podObjectRef is one object a pod references, and whether the kubelet reads it at every sync of the
// pod (a ConfigMap, Secret or projected volume it remounts, an image pull secret), which keeps the
// manager's watch of it from going idle, or only once (an environment variable when a container
// starts, another plugin's secret when it mounts).
type podObjectRef struct {
	objectRef
	everySync bool
}

// podObjectRefs returns the ConfigMaps and Secrets the kubelet's configmap and secret managers
// register for pod, each once, as pkg/api/v1/pod's VisitPodConfigmapNames and VisitPodSecretNames
// find them (v1.37.2): image pull secrets; every container's (init and ephemeral ones too) envFrom
// and env valueFrom; the volumes' ConfigMap, Secret and projected sources and the secret references
// of the volume plugins that have one. It reads only the pod's spec, which the fleet's pod watch
// has decoded already.
func podObjectRefs(pod *corev1.Pod) []podObjectRef {
	var refs []podObjectRef
	add := func(resource, name string, everySync bool) {
		if name == "" {
			return // API validation let empty names through once; the kubelet skips them
		}
		for i := range refs {
			if refs[i].resource == resource && refs[i].name == name {
				refs[i].everySync = refs[i].everySync || everySync
				return
			}
		}
		refs = append(refs, podObjectRef{objectRef{resource, pod.Namespace, name}, everySync})
	}
	spec := &pod.Spec
	for _, s := range spec.ImagePullSecrets {
		// getPullSecretsForPod reads them from the secret manager at every sync of the pod.
		add("secrets", s.Name, true)
	}
	env := func(envFrom []corev1.EnvFromSource, vars []corev1.EnvVar) {
		for _, e := range envFrom {
			if e.ConfigMapRef != nil {
				add("configmaps", e.ConfigMapRef.Name, false)
			}
			if e.SecretRef != nil {
				add("secrets", e.SecretRef.Name, false)
			}
		}
		for _, v := range vars {
			if v.ValueFrom == nil {
				continue
			}
			if r := v.ValueFrom.ConfigMapKeyRef; r != nil {
				add("configmaps", r.Name, false)
			}
			if r := v.ValueFrom.SecretKeyRef; r != nil {
				add("secrets", r.Name, false)
			}
		}
	}
	for i := range spec.InitContainers {
		env(spec.InitContainers[i].EnvFrom, spec.InitContainers[i].Env)
	}
	for i := range spec.Containers {
		env(spec.Containers[i].EnvFrom, spec.Containers[i].Env)
	}
	for i := range spec.EphemeralContainers {
		env(spec.EphemeralContainers[i].EnvFrom, spec.EphemeralContainers[i].Env)
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i].VolumeSource
		// The other plugins read their secret when they mount, once: only ConfigMap, Secret and
		// projected volumes are remounted at every sync (their plugins' RequiresRemount).
		secret := func(r *corev1.LocalObjectReference) {
			if r != nil {
				add("secrets", r.Name, false)
			}
		}
		switch {
		case v.ConfigMap != nil:
			add("configmaps", v.ConfigMap.Name, true)
		case v.Secret != nil:
			add("secrets", v.Secret.SecretName, true)
		case v.Projected != nil:
			for _, p := range v.Projected.Sources {
				if p.ConfigMap != nil {
					add("configmaps", p.ConfigMap.Name, true)
				}
				if p.Secret != nil {
					add("secrets", p.Secret.Name, true)
				}
			}
		case v.AzureFile != nil:
			add("secrets", v.AzureFile.SecretName, false)
		case v.CephFS != nil:
			secret(v.CephFS.SecretRef)
		case v.Cinder != nil:
			secret(v.Cinder.SecretRef)
		case v.FlexVolume != nil:
			secret(v.FlexVolume.SecretRef)
		case v.RBD != nil:
			secret(v.RBD.SecretRef)
		case v.ScaleIO != nil:
			secret(v.ScaleIO.SecretRef)
		case v.ISCSI != nil:
			secret(v.ISCSI.SecretRef)
		case v.StorageOS != nil:
			secret(v.StorageOS.SecretRef)
		case v.CSI != nil:
			secret(v.CSI.NodePublishSecretRef)
		}
	}
	return refs
}
