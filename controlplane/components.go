package controlplane

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// The command lines of the four components. Extra arguments from Options go last: for a flag
// given twice the last value wins (lists such as --enable-admission-plugins append instead).
// Overriding a port, address or path here breaks what the state records; override behaviour only.

// etcdPorts is how many ports etcdComponent takes: client, peer, metrics.
const etcdPorts = 3

func etcdComponent(bin, dir string, pki PKI, ports []int, extra []string) ComponentState {
	client, peer, metrics := ports[0], ports[1], ports[2]
	clientURL := loopbackURL("https", client)
	peerURL := loopbackURL("https", peer)
	args := []string{bin,
		"--name=fakelet",
		"--data-dir=" + filepath.Join(dir, "etcd"),
		// TLS with client certificates, as kubeadm sets it up: on a shared host any local user
		// can connect to 127.0.0.1, and etcd has every Secret. Only a certificate of etcd's own CA
		// is let in, which only the apiserver has.
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--cert-file=" + pki.EtcdCert,
		"--key-file=" + pki.EtcdKey,
		"--client-cert-auth=true",
		"--trusted-ca-file=" + pki.EtcdCACert,
		// A single member has no peers, but listens for them: the same rule there.
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=fakelet=" + peerURL,
		"--initial-cluster-state=new",
		"--peer-cert-file=" + pki.EtcdCert,
		"--peer-key-file=" + pki.EtcdKey,
		"--peer-client-cert-auth=true",
		"--peer-trusted-ca-file=" + pki.EtcdCACert,
		// Its own port, so scraping metrics never queues behind the apiserver's traffic. Plain
		// HTTP: it serves only /metrics and /health, no data.
		"--listen-metrics-urls=" + loopbackURL("http", metrics),
	}
	// The metrics port answers /health too, without a client certificate.
	return component(Etcd, dir, append(args, extra...), map[string]int{"client": client, "peer": peer, "metrics": metrics},
		loopbackURL("http", metrics), "/health")
}

func apiServerComponent(bin, dir string, pki PKI, etcdClientURL string, port int, extra []string) ComponentState {
	url := loopbackURL("https", port)
	args := []string{bin,
		"--etcd-servers=" + etcdClientURL,
		"--etcd-cafile=" + pki.EtcdCACert,
		"--etcd-certfile=" + pki.APIServerEtcdClientCert,
		"--etcd-keyfile=" + pki.APIServerEtcdClientKey,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--advertise-address=127.0.0.1",
		// Endpoints may not hold a loopback address, so the reconciler of the kubernetes
		// Service would fail every 10 s; no pod runs here to use that Service. Upstream's
		// integration test server does the same for a loopback advertise address.
		"--endpoint-reconciler-type=none",
		"--tls-cert-file=" + pki.APIServerCert,
		"--tls-private-key-file=" + pki.APIServerKey,
		"--client-ca-file=" + pki.CACert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pki.ServiceAccountPub,
		"--service-account-signing-key-file=" + pki.ServiceAccountKey,
		"--service-cluster-ip-range=" + serviceCIDR,
		// As in a kubeadm cluster: a kubelet credential is held to its own Node and Lease.
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction", // added to the default plugins
		// API Priority and Fairness stays on (the default): how it classifies the fleet's
		// requests is part of what is measured.
	}
	return component(APIServer, dir, append(args, extra...), map[string]int{"secure": port}, url, "/readyz")
}

func controllerManagerComponent(bin, dir string, pki PKI, port int, extra []string) ComponentState {
	url := loopbackURL("https", port)
	kubeconfig := controllerManagerKubeconfig(dir)
	args := []string{bin,
		"--kubeconfig=" + kubeconfig,
	}
	args = append(args, servingArgs(kubeconfig, pki.CACert, port, pki.ControllerManagerCert, pki.ControllerManagerKey)...)
	args = append(args, []string{
		// Each controller authenticates as its own service account, as in kubeadm, so its
		// requests are classified and authorized as in a real cluster.
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + pki.ServiceAccountKey,
		"--root-ca-file=" + pki.CACert,
		"--cluster-signing-cert-file=" + pki.CACert,
		"--cluster-signing-key-file=" + pki.CAKey,
		// The node lifecycle controller (and the taint eviction controller, on by default)
		// with upstream's defaults, written out because fakelet's reports depend on them.
		"--node-monitor-period=5s",
		"--node-monitor-grace-period=50s",
		// Its default is under /usr/libexec, which it creates if missing: keep the host clean.
		"--flex-volume-plugin-dir=" + filepath.Join(dir, "flexvolume"),
		// Each Node gets spec.podCIDR(s) as on a real cluster, from which the agents give their pods
		// IPs. The service range is left out of the allocation (see clusterCIDR).
		"--allocate-node-cidrs=true",
		"--cluster-cidr=" + clusterCIDR,
		"--node-cidr-mask-size=" + strconv.Itoa(nodeCIDRMaskSize),
		"--service-cluster-ip-range=" + serviceCIDR,
	}...)
	return component(ControllerManager, dir, append(args, extra...), map[string]int{"secure": port}, url, "/healthz")
}

// schedulerComponent is kube-scheduler as kubeadm runs it, with its own client certificate
// (system:kube-scheduler) and its own serving certificate for /readyz and /metrics, and the default
// scheduling profile.
func schedulerComponent(bin, dir string, pki PKI, port int, extra []string) ComponentState {
	url := loopbackURL("https", port)
	kubeconfig := schedulerKubeconfig(dir)
	args := []string{bin,
		// Deprecated in favour of --config, but what kubeadm passes; without --config the flags
		// given as extra arguments (--kube-api-qps, ...) still apply.
		"--kubeconfig=" + kubeconfig,
	}
	args = append(args, servingArgs(kubeconfig, pki.CACert, port, pki.SchedulerCert, pki.SchedulerKey)...)
	// Ready once its informers have synced and it schedules: /healthz would answer as soon as it
	// serves.
	return component(Scheduler, dir, append(args, extra...), map[string]int{"secure": port}, url, "/readyz")
}

// servingArgs are the arguments the controller manager and the scheduler share: how they serve
// /readyz and /metrics on loopback, and one instance of each.
func servingArgs(kubeconfig, caCert string, port int, cert, key string) []string {
	return []string{
		// /metrics is authorized the way kubeadm sets it up: the client certificate is checked
		// against the CA, then a SubjectAccessReview asks the apiserver. The admin certificate
		// scrapes it, an anonymous local process cannot, and a scrape costs what it costs in a
		// real cluster (one review, cached 10 s). --authorization-always-allow-paths=/metrics
		// would also work but opens it to anyone and skips that path.
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--client-ca-file=" + caCert,
		// The CA comes from the flag above. Without this, the component also looks up a
		// front-proxy (requestheader) CA in kube-system/extension-apiserver-authentication,
		// which this apiserver has no use for, and logs an error for it every few seconds.
		"--authentication-skip-lookup=true",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + cert,
		"--tls-private-key-file=" + key,
		"--leader-elect=false", // one instance: a lease renewal every 2 s would only add traffic
	}
}

func loopbackURL(scheme string, port int) string {
	return fmt.Sprintf("%s://127.0.0.1:%d", scheme, port)
}

// component is the state of name run with args, on ports, answering its health check at health and
// its metrics at /metrics of url, and logging into dir.
func component(name, dir string, args []string, ports map[string]int, url, health string) ComponentState {
	return ComponentState{Name: name, Args: args, Ports: ports, HealthURL: url + health, MetricsURL: url + "/metrics", Log: logPath(dir, name)}
}

func logPath(dir, name string) string { return filepath.Join(dir, name+".log") }

// KubeconfigPath is where Up writes the admin kubeconfig of the control plane in dir.
func KubeconfigPath(dir string) string { return filepath.Join(dir, "kubeconfig") }

func controllerManagerKubeconfig(dir string) string {
	return filepath.Join(dir, "controller-manager.kubeconfig")
}

func schedulerKubeconfig(dir string) string { return filepath.Join(dir, "scheduler.kubeconfig") }
