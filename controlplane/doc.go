// Package controlplane runs a local Kubernetes control plane for fakelet: etcd, kube-apiserver,
// kube-controller-manager (which gives each Node a podCIDR) and kube-scheduler (the binaries `make
// controlplane` builds) as detached processes on 127.0.0.1, with their own CA. Everything is recorded in one directory, so that another process can
// find, check and stop them: Up starts one (or reuses a healthy one already there), Attach finds a
// running one, Status reports on one, Down stops one.
//
// The directory (DefaultDir unless told otherwise) holds:
//
//	state.json                     pids, full command lines, ports and URLs of the running components
//	kubeconfig                     admin (fakelet-admin in system:masters), certificates embedded
//	controller-manager.kubeconfig  system:kube-controller-manager
//	scheduler.kubeconfig           system:kube-scheduler
//	pki/                           CA, serving and client certificates, service account keys, and
//	                               etcd's own CA, its certificate and the apiserver's client one
//	users/                         one file per process attached with Join or Up's UntilLastUser
//	watchdog.log                   with UntilLastUser: what the watchdog that stops the control
//	                               plane once its users are all gone (a crashed run) had to say
//	etcd/                          etcd's data; removed by Down and at each Up unless KeepData
//	prometheus/                    with Options.Prometheus: the Prometheus server's configuration
//	                               (deploy/prometheus), targets, TLS files and data/ (removed by
//	                               Down unless KeepData)
//	<component>.log                each component's stdout and stderr
//	audit.log, audit-policy.yaml   with Options.AuditNodes: the apiserver's audit log of kubelet and
//	                               admin requests (Metadata level) and its policy; audit.previous.log
//	                               is the control plane before's
//	<component>.previous.log       the same, from the control plane before
//
// The directory must be the user's own and open to no one else (checked at every Up, Attach,
// Join, Status and Down), and nothing in it is written through a symbolic link. etcd takes only
// client certificates of its own CA, which only the apiserver has; its metrics port serves
// /metrics and /health alone, over plain HTTP.
//
// Ports are picked free at each Up, so control planes in two directories run side by side. A
// component is only ever signalled if /proc/<pid> shows the start time and command line recorded
// for it: a pid reused by another program after a crash is left alone.
//
// Keys are ECDSA P-256, what a kubelet generates for its own client certificate; CA.IssueClientCert
// gives per-node kubelet credentials (NodeUser in NodesGroup), which the apiserver authorizes with
// the Node authorizer and NodeRestriction and classifies with API Priority and Fairness the way it
// does real kubelets. WriteNodeKubeconfig writes such a credential into a kubeconfig for a process
// of its own, a kubemark hollow kubelet.
package controlplane
