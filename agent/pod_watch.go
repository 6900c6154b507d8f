package agent

// The kubelet footprint's pods come from the agent's own pod watch, the kubelet's apiserver pod
// source (fieldSelector spec.nodeName=<node>): its transport decodes the events of that watch into
// pods (WatchRequest.Pods), and the agent keeps of each what podState holds. A streaming list's
// initial events are the node's pods; one the agent knew that is not among them is gone, as the
// reflector's Replace finds it.

// podWatchEvent takes one event of the pod watch; listing says it is one of a streaming list's
// initial events, end that it is the bookmark that ends them.
func (a *Agent) podWatchEvent(e WatchEvent, listing bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.run == nil {
		return
	}
	switch {
	case listing && e.Type == EventBookmark && e.InitialEventsEnd:
		a.endPodListLocked()
	case e.Pod == nil:
	case e.Type == EventDeleted:
		k := podKey{e.Pod.Namespace, e.Pod.Name}
		if st := a.pods[k]; st != nil && st.uid == e.Pod.UID {
			a.dropPodLocked(st)
		}
		if a.deleted[k] == e.Pod.UID {
			delete(a.deleted, k)
		}
	case e.Type == EventAdded || e.Type == EventModified:
		a.observePodLocked(e.Pod)
	}
}

// podListStarts says a streaming list of the pod watch begins.
func (a *Agent) podListStarts() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.beginPodListLocked()
}
