package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// imageCatalog is what a busy general-purpose node has pulled: the system images every node runs and
// the application images a mixed workload leaves behind. Sizes are the compressed-and-unpacked sizes
// containerd reports. The list is long enough for the kubelet's 50-image cap.
var imageCatalog = []struct {
	repo, tag string
	size      int64
}{
	{"registry.k8s.io/pause", "3.10", 320368},
	{"registry.k8s.io/kube-proxy", "v1.37.2", 30889920},
	{"registry.k8s.io/coredns/coredns", "v1.12.1", 22384805},
	{"registry.k8s.io/metrics-server/metrics-server", "v0.8.0", 19557056},
	{"registry.k8s.io/ingress-nginx/controller", "v1.13.1", 110587334},
	{"registry.k8s.io/dns/k8s-dns-node-cache", "1.26.4", 37213491},
	{"registry.k8s.io/csi-secrets-store/driver", "v1.5.3", 43123456},
	{"registry.k8s.io/sig-storage/csi-node-driver-registrar", "v2.14.0", 10794502},
	{"registry.k8s.io/sig-storage/livenessprobe", "v2.16.0", 9783218},
	{"registry.k8s.io/kube-state-metrics/kube-state-metrics", "v2.16.0", 23145672},
	{"docker.io/calico/node", "v3.30.2", 156789011},
	{"docker.io/calico/cni", "v3.30.2", 92837465},
	{"docker.io/cilium/cilium", "v1.18.1", 214563782},
	{"quay.io/prometheus/node-exporter", "v1.9.1", 11867453},
	{"quay.io/prometheus/prometheus", "v3.5.0", 124590876},
	{"quay.io/prometheus/alertmanager", "v0.28.1", 31234567},
	{"quay.io/jetstack/cert-manager-controller", "v1.18.2", 21345678},
	{"quay.io/jetstack/cert-manager-webhook", "v1.18.2", 17654321},
	{"quay.io/argoproj/argocd", "v3.1.1", 198765432},
	{"docker.io/grafana/grafana", "12.1.0", 187654321},
	{"docker.io/grafana/loki", "3.5.3", 54321987},
	{"docker.io/grafana/promtail", "3.5.3", 88776655},
	{"docker.io/fluent/fluent-bit", "4.0.7", 37890123},
	{"docker.io/library/nginx", "1.29.1", 72223946},
	{"docker.io/library/nginx", "1.28.0-alpine", 21234567},
	{"docker.io/library/redis", "8.2.1", 49856321},
	{"docker.io/library/postgres", "17.6", 158734512},
	{"docker.io/library/mysql", "9.4.0", 238765123},
	{"docker.io/library/mongo", "8.0.13", 276543210},
	{"docker.io/library/rabbitmq", "4.1.3-management", 142345678},
	{"docker.io/library/memcached", "1.6.39", 34567890},
	{"docker.io/library/busybox", "1.37.0", 2156789},
	{"docker.io/library/alpine", "3.22.1", 3634567},
	{"docker.io/library/debian", "bookworm-slim", 28234567},
	{"docker.io/library/ubuntu", "24.04", 29876543},
	{"docker.io/library/python", "3.13-slim", 46789012},
	{"docker.io/library/node", "22-alpine", 56789123},
	{"docker.io/library/golang", "1.25", 298765432},
	{"docker.io/library/openjdk", "21-jdk-slim", 221234567},
	{"docker.io/library/eclipse-temurin", "21-jre", 98765432},
	{"docker.io/library/httpd", "2.4.65", 58765432},
	{"docker.io/library/haproxy", "3.2.4", 41234567},
	{"docker.io/library/traefik", "v3.5.0", 54567890},
	{"docker.io/bitnami/kafka", "4.0.0", 187654320},
	{"docker.io/bitnami/zookeeper", "3.9.3", 143210987},
	{"docker.io/envoyproxy/envoy", "v1.35.1", 67890123},
	{"docker.io/istio/proxyv2", "1.27.0", 97654321},
	{"docker.io/istio/pilot", "1.27.0", 76543210},
	{"docker.io/openpolicyagent/gatekeeper", "v3.20.1", 45678901},
	{"docker.io/jaegertracing/all-in-one", "1.72.0", 36789012},
	{"ghcr.io/open-telemetry/opentelemetry-collector-releases/opentelemetry-collector-contrib", "0.132.0", 112345678},
	{"ghcr.io/external-secrets/external-secrets", "v0.19.2", 34512345},
}

// MaxImages is the kubelet's cap on images in a node's status (nodeStatusMaxImages).
const MaxImages = 50

// Images returns n images (at most MaxImages) as a kubelet reports them: largest first, each named by
// its repo digest and its tag, with digests derived from the name so every run is identical.
func Images(n int) []corev1.ContainerImage {
	if n > MaxImages {
		n = MaxImages
	}
	if n > len(imageCatalog) {
		n = len(imageCatalog)
	}
	images := make([]corev1.ContainerImage, 0, n)
	for _, img := range imageCatalog[:n] {
		ref := img.repo + ":" + img.tag
		sum := sha256.Sum256([]byte(ref))
		images = append(images, corev1.ContainerImage{
			Names:     []string{img.repo + "@sha256:" + hex.EncodeToString(sum[:]), ref},
			SizeBytes: img.size,
		})
	}
	sort.SliceStable(images, func(i, j int) bool { return images[i].SizeBytes > images[j].SizeBytes })
	return images
}

// sameImages reports whether a and b list the same images, cheaply: it lets an agent keep one shared
// image list instead of the copy every API response decodes.
func sameImages(a, b []corev1.ContainerImage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].SizeBytes != b[i].SizeBytes || len(a[i].Names) != len(b[i].Names) {
			return false
		}
		for j := range a[i].Names {
			if a[i].Names[j] != b[i].Names[j] {
				return false
			}
		}
	}
	return true
}
