package agent

// FootprintDifference is a class of apiserver requests in which an agent knowingly differs from a
// v1.37 kubelet, as the kubemark reference measures it (fakelet bench --reference kubemark,
// docs/fidelity.md): kubemark's hollow kubelet runs the real kubelet code over a fake runtime, and
// each node's requests are counted from the apiserver's audit log. The reference's e2e test fails on
// any class that differs by more than 15% unless an entry here covers it, and docs/fidelity.md lists
// these with their reasons: one list for both.
type FootprintDifference struct {
	// Verb, Resource and Subresource name the class as the audit log does (watch-list is a watch
	// with sendInitialEvents); "" matches any.
	Verb, Resource, Subresource string
	// Windows are the reference's windows (startup, steady, pods, restart) where it differs; none
	// means every window.
	Windows []string
	Reason  string
}

// FootprintDifferences lists today's differences. Most are what issue 15 sets out to close (the
// kubelet's watches, its CSINode and startup sequence); an entry goes when the agent sends what the
// kubelet sends, and the e2e test then holds it to 15%.
var FootprintDifferences = []FootprintDifference{
	{Verb: "create", Resource: "events", Reason: "kubemark gives its hollow kubelet a stub event recorder (a real one reads " +
		"/dev/kmsg), so it sends no Events; the agent sends a kubelet's (Starting, the node conditions, " +
		"NodeAllocatableEnforced, NodeReady, per container Pulled, Created, Started) as the kubelet's sources record them"},
	{Verb: "patch", Resource: "events", Reason: "the hollow kubelet sends no Events; the agent PATCHes the count of a " +
		"repeated one, as the kubelet's event correlator does"},
	{Verb: "watch-list", Reason: "the agent opens no watch of its own: the fleet shares one watch of its Nodes and one of its pods " +
		"for every node, where a kubelet's reflectors stream its Node, its pods, Services, RuntimeClasses, CSIDrivers and " +
		"PodCertificateRequests each"},
	{Verb: "watch", Reason: "the agent opens no watch of its own, so it never re-opens one when the reflector's 5-10 minute " +
		"timeout ends it"},
	{Resource: "csinodes", Reason: "the agent runs no CSI plugin manager: a kubelet GETs its CSINode, its Node, and creates the CSINode at start"},
	{Verb: "get", Resource: "nodes", Windows: []string{"startup", "restart"}, Reason: "a kubelet GETs its Node for its CSINode, " +
		"its volume and node managers and its first status updates; the agent GETs it only to adopt it and on a retry"},
	{Verb: "patch", Resource: "nodes", Subresource: "status", Windows: []string{"startup"}, Reason: "a kubelet's first " +
		"status patch reports NotReady until its runtime and network are up, and a fast update then reports Ready; " +
		"the agent's first patch reports Ready at once"},
	{Verb: "patch", Resource: "nodes", Subresource: "status", Windows: []string{"pods"}, Reason: "a kubelet patches its " +
		"status once about 30 s after its first pods start, when something it reports changed (the audit log at Metadata " +
		"level does not show what); the agent's status does not change with its pods"},
	{Verb: "get", Resource: "pods", Windows: []string{"pods"}, Reason: "a kubelet's status manager GETs a pod before " +
		"each status patch; the agent patches from the pod its watch showed it"},
	{Verb: "patch", Resource: "pods", Subresource: "status", Windows: []string{"pods"}, Reason: "the agent reports a pod " +
		"Running and Ready in one status patch and confirms a deletion without one; a kubelet patches as its containers " +
		"start and become ready, and the terminated status before its final delete"},
}
