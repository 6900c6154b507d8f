// Package headtail keeps a bounded sample of a stream that grows with a run's length: its first and
// its last items, in order, and how many there were. A run's records keep transitions, actions and
// applied ops this way, so that their memory follows the fleet's size, not how long it ran.
package headtail

import "slices"

// Sample keeps the first Keep and the last Keep items added to it. Its zero value keeps nothing but
// the count; set Keep before the first Add.
type Sample[T any] struct {
	Keep  int
	first []T
	last  []T // a ring once full: the oldest at next
	next  int
	count int
}

// Add counts v and keeps it if it is among the first or, for now, the last Keep.
func (s *Sample[T]) Add(v T) {
	s.count++
	switch {
	case len(s.first) < s.Keep:
		s.first = append(s.first, v)
	case len(s.last) < s.Keep:
		s.last = append(s.last, v)
	case s.Keep > 0:
		s.last[s.next] = v
		s.next = (s.next + 1) % s.Keep
	}
}

// Items returns the kept items in the order they were added: every one while there were at most
// twice Keep, else the first and the last Keep.
func (s *Sample[T]) Items() []T {
	return slices.Concat(s.first, s.last[s.next:], s.last[:s.next])
}

// Count is how many items were added, kept or not.
func (s *Sample[T]) Count() int { return s.count }

// Cut says whether items were left out between the first and the last Keep.
func (s *Sample[T]) Cut() bool { return s.count > 2*s.Keep }
