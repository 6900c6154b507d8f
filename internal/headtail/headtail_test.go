package headtail

import (
	"slices"
	"testing"
)

func TestSampleKeepsTheFirstAndTheLast(t *testing.T) {
	for _, tc := range []struct {
		added int
		want  []int
	}{
		{0, nil},
		{3, []int{0, 1, 2}},
		{6, []int{0, 1, 2, 3, 4, 5}},
		{7, []int{0, 1, 2, 4, 5, 6}},
		{11, []int{0, 1, 2, 8, 9, 10}},
	} {
		s := Sample[int]{Keep: 3}
		for i := range tc.added {
			s.Add(i)
		}
		if got := s.Items(); !slices.Equal(got, tc.want) {
			t.Errorf("after %d: %v, want %v", tc.added, got, tc.want)
		}
		if s.Count() != tc.added || s.Cut() != (tc.added > 6) {
			t.Errorf("after %d: count %d, cut %v", tc.added, s.Count(), s.Cut())
		}
	}
}

func TestZeroSampleCounts(t *testing.T) {
	var s Sample[string]
	s.Add("a")
	if s.Count() != 1 || len(s.Items()) != 0 {
		t.Errorf("count %d, items %v", s.Count(), s.Items())
	}
}
