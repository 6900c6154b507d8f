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
func (q *queue) pop() entry   { return heap.Pop(&q.h).(entry) }

// push adds e and reports whether it became the earliest entry.
func (q *queue) push(e entry) bool {
	heap.Push(&q.h, e)
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
func (h *entryHeap) Push(x any)   { *h = append(*h, x.(entry)) }
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = entry{}
	*h = old[:len(old)-1]
	return e
}
