// Package scrape reads the Prometheus metrics of the control plane (kube-apiserver, etcd,
// kube-controller-manager) and of the fleet itself, at a fixed interval and whenever asked (at every
// phase boundary), and keeps of each scrape only the series fakelet's reports use, with the labels
// they group by: a kube-apiserver exposes about 2 MB of metrics, a Snapshot of it is a few hundred
// series.
//
// Computing load from snapshots (deltas, rates, quantiles) is package load's, as pure functions.
package scrape
