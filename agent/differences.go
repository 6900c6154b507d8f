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

// FootprintDifferences lists today's differences, as the kubemark reference measured them with the
// kubelet footprint (docs/fidelity.md has the table). An entry goes when the agent sends what the
// kubelet sends, and the e2e test then holds the class to 15%; the reference's output names the
// entries a run did not need.
var FootprintDifferences = []FootprintDifference{
	{Verb: "create", Resource: "events", Reason: "kubemark gives its hollow kubelet a stub event recorder (a real one reads " +
		"/dev/kmsg), so it sends no Events; the agent sends a kubelet's (Starting, the node conditions, " +
		"NodeAllocatableEnforced, NodeReady, per container Pulled, Created, Started) as the kubelet's sources record them"},
	{Verb: "patch", Resource: "events", Reason: "the hollow kubelet sends no Events; the agent PATCHes the count of a " +
		"repeated one, as the kubelet's event correlator does"},
	{Verb: "get", Resource: "nodes", Windows: []string{"startup"}, Reason: "a kubelet's lease controller and CSI plugin " +
		"each GET the Node again when their first GET comes before the registration (404, then 200 after it): the agent " +
		"sends the same requests, but registers 100 ms after it starts where a kubelet first starts its managers, so " +
		"fewer of its first GETs come before the Node exists; how many do is timing on both sides"},
	{Verb: "patch", Resource: "nodes", Subresource: "status", Windows: []string{"startup"}, Reason: "a kubelet's first " +
		"status patch reports NotReady until its runtime and network are up, and a fast update then reports Ready; " +
		"the agent's first patch reports Ready at once"},
	{Verb: "patch", Resource: "nodes", Subresource: "status", Windows: []string{"pods"}, Reason: "a kubelet patches its " +
		"status once about 30 s after its first pods start, when something it reports changed (the audit log at Metadata " +
		"level does not show what); the agent's status does not change with its pods"},
	{Verb: "watch", Windows: []string{"pods", "restart"}, Reason: "a reflector's watch ends at a random 5-10 minute " +
		"timeout and is opened again from where it left off; in a window of a few minutes, whether a node's watch of a " +
		"kind is opened again is chance, on both sides (the 10-minute steady window sees each opened again once or twice on both)"},
	{Verb: "list", Resource: "configmaps", Windows: []string{"pods"}, Reason: "a reflector whose streaming list fails " +
		"falls back to a plain LIST and then a WATCH (client-go's Reflector.ListAndWatchWithContext); a hollow kubelet's " +
		"reflector of its pods' kube-root-ca.crt did so on one of two nodes in one 30 s pods window, while the agents' " +
		"streaming lists did not fail: whether one fails in a short window is chance, as for the watches above"},
}
