package fidelity

import "strings"

// Class is a kind of request: what the comparison counts per node.
type Class struct {
	// Verb is the audit log's (get, list, watch, create, update, patch, delete, deletecollection),
	// or VerbWatchList.
	Verb string
	// Resource is the objectRef's resource (nodes, leases, pods...), or the path of a request
	// without one (/apis/storage.k8s.io/v1 for discovery).
	Resource string
	// Subresource is the objectRef's (status), or "".
	Subresource string
}

// VerbWatchList is a watch that starts with the collection's current objects (sendInitialEvents):
// the streaming list a v1.37 reflector opens at start and after a 410, where older ones sent a LIST.
const VerbWatchList = "watch-list"

// PerPod says whether a kubelet sends requests of c for each pod it runs, not once for the node:
// the pod's GETs, status patches and final DELETE, its service account token, and the Events of
// its containers. Its watch of pods (one per node, opened again at a timeout) and the watches of
// the ConfigMaps and Secrets its pods use (one per object, shared by the node's pods) are the
// node's.
func (c Class) PerPod() bool {
	switch {
	case c.Resource == "pods":
		return c.Verb != "watch" && c.Verb != VerbWatchList && c.Verb != "list"
	case c.Resource == "serviceaccounts":
		return c.Subresource == "token"
	case c.Resource == "events":
		return true
	}
	return false
}

// String is "verb resource/subresource", as the tables print it.
func (c Class) String() string {
	r := c.Resource
	if c.Subresource != "" {
		r += "/" + c.Subresource
	}
	return c.Verb + " " + r
}

// ParseClass reads what String writes.
func ParseClass(s string) (Class, bool) {
	verb, rest, ok := strings.Cut(s, " ")
	if !ok || verb == "" || rest == "" {
		return Class{}, false
	}
	c := Class{Verb: verb, Resource: rest}
	if !strings.HasPrefix(rest, "/") {
		c.Resource, c.Subresource, _ = strings.Cut(rest, "/")
	}
	return c, true
}
