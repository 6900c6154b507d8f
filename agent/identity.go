package agent

import "context"

// NodesGroup is the group every kubelet credential carries.
const NodesGroup = "system:nodes"

// NodeUserPrefix begins the user name of every kubelet: system:node:<node name>.
const NodeUserPrefix = "system:node:"

var nodesGroups = []string{NodesGroup}

type identityKey struct{}

// IdentityFrom returns who a request made with ctx should be made as: user system:node:<name> in group
// system:nodes, as a kubelet's client certificate says, so that the apiserver's Node authorizer,
// NodeRestriction admission and API Priority and Fairness treat it as a kubelet's. While the node's
// credential is revoked it is the same user without the group, which the apiserver refuses (403). ok
// is false for requests that are not an agent's.
func IdentityFrom(ctx context.Context) (user string, groups []string, ok bool) {
	a, ok := ctx.Value(identityKey{}).(*Agent)
	if !ok {
		return "", nil, false
	}
	if a.denied.Load() {
		return a.user, nil, true
	}
	return a.user, nodesGroups, true
}

// RequestContext returns ctx as the agent of node name sends its requests with: its identity
// (IdentityFrom) and a Meter of its own (MeterFrom), returned too. Transports' tests use it to send
// what an agent would without running one.
func RequestContext(ctx context.Context, name string) (context.Context, *Meter) {
	return RequestContextOf(ctx, name, nil)
}

// RequestContextOf is RequestContext for an agent of a fleet of template t (TemplateFrom).
func RequestContextOf(ctx context.Context, name string, t *Template) (context.Context, *Meter) {
	m := &Meter{}
	a := &Agent{name: name, user: NodeUserPrefix + name}
	if t != nil {
		a.cfg = &Config{Template: t}
	}
	return context.WithValue(context.WithValue(ctx, identityKey{}, a), meterKey{}, m), m
}

// TemplateFrom returns the Template of the agent that makes a request with ctx, for the transport
// to decode the Node of the answer with (Template.UnmarshalNode), or nil if the request is not an
// agent's or its agent has none (RequestContext's).
func TemplateFrom(ctx context.Context) *Template {
	a, ok := ctx.Value(identityKey{}).(*Agent)
	if !ok || a.cfg == nil {
		return nil
	}
	return a.cfg.Template
}
