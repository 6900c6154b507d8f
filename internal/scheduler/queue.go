package scheduler

import (
	"container/heap"
	"time"
)

type entry struct {
	when    time.Time
	seq     uint64 // orders entries due at the same time first-in, first-out
	task    Task
	sleeper *sleeper
}

// queue is a min-heap of entries by (when, seq).
type queue struct{ h entryHeap }

func (q *queue) Len() int     { return len(q.h) }
func (q *queue) peek() *entry { return &q.h[0] }

// pop removes the earliest entry. It and push move entries in place and restore the order with
// heap.Fix: heap.Push and heap.Pop would box each entry in an interface, an allocation per call.
func (q *queue) pop() entry {
	e := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h[last] = entry{}
	q.h = q.h[:last]
	if last > 0 {
		heap.Fix(&q.h, 0)
	}
	return e
}

// push adds e and reports whether it became the earliest entry.
func (q *queue) push(e entry) bool {
	q.h = append(q.h, e)
	heap.Fix(&q.h, len(q.h)-1)
	return q.h[0].seq == e.seq
}

type entryHeap []entry

func (h entryHeap) Len() int { return len(h) }
func (h entryHeap) Less(i, j int) bool {
	if h[i].when.Equal(h[j].when) {
		return h[i].seq < h[j].seq
	}
	return h[i].when.Before(h[j].when)
}
func (h entryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

// Push and Pop complete heap.Interface; queue never calls them (see pop).
func (h *entryHeap) Push(any) { panic("scheduler: entryHeap.Push") }
func (h *entryHeap) Pop() any { panic("scheduler: entryHeap.Pop") }
