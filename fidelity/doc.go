// Package fidelity reads a kube-apiserver audit log and counts each node's requests by class (verb,
// resource, subresource), in windows of time: the measure of the kubemark reference, which runs
// hollow kubelets (the real kubelet code over a fake runtime) beside fakelet agents on one control
// plane and compares what each kind of node sends (fakelet bench --reference kubemark,
// docs/fidelity.md).
//
// A request is a node's when its user, or the user it impersonates, is system:node:<name>: a
// hollow kubelet authenticates with a certificate of its own, a fakelet agent is impersonated over
// the fleet's shared connections. Everything here is a pure function of the log's lines.
package fidelity
