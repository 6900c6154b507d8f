package standin

// past is one change a store keeps: from old to now (either nil for a create or a delete), carried
// as obj, as watcherSet.send told it.
type past struct{ old, now, obj *entry }

// history is a resource's latest changes, so that a watch resumed at a resourceVersion among them is
// sent what it missed, as kube-apiserver's watch cache resumes one from its history. It holds at
// most a number of changes, where the watch cache holds 75 s of them up to 102,400: enough for a
// watch the stand-in ended as too slow to resume, and bounded in memory at a fleet's Node sizes.
type history struct {
	size int    // the most changes it holds
	ring []past // oldest first from next once full
	next int
	// forgotten is the resourceVersion of the newest change the history no longer holds: a watch
	// resumed before it cannot be told what it missed.
	forgotten uint64
}

func (h *history) remember(p past) {
	if len(h.ring) < h.size {
		h.ring = append(h.ring, p)
		return
	}
	h.forgotten = h.ring[h.next].obj.rv
	h.ring[h.next] = p
	h.next = (h.next + 1) % h.size
}

// since returns the changes after resourceVersion from, oldest first, or false if some of them
// are forgotten.
func (h *history) since(from uint64) ([]past, bool) {
	if from < h.forgotten {
		return nil, false
	}
	var out []past
	for i := range h.ring {
		if p := h.ring[(h.next+i)%len(h.ring)]; p.obj.rv > from {
			out = append(out, p)
		}
	}
	return out, true
}
