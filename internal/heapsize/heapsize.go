// Package heapsize measures what a structure keeps on the heap, for the benchmarks and tests that
// give a figure of bytes a node or a pod.
package heapsize

import "runtime"

// Live is the heap in use after a full collection. It collects twice: objects with finalizers, and
// what only they reach, are freed by the second.
func Live() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
