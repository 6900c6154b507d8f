package fleetname

import (
	"strings"
	"testing"
)

// TestShardSlicesAreDisjointAndComplete: for many fleet sizes and shard counts, the shards' slices
// are contiguous, in order, cover 0..total-1 exactly once, differ in size by at most one, and each
// shard owns exactly its slice.
func TestShardSlicesAreDisjointAndComplete(t *testing.T) {
	for total := 1; total <= 200; total++ {
		for count := 1; count <= min(total, 17); count++ {
			next, smallest, largest := 0, total, 0
			for i := range count {
				s := Shard{Index: i, Count: count}
				if err := s.Validate(total); err != nil {
					t.Fatalf("%v of %d: %v", s, total, err)
				}
				first, n := s.Slice(total)
				if first != next || n < 1 {
					t.Fatalf("%v of %d: slice %d+%d, want it to start at %d with at least one node", s, total, first, n, next)
				}
				for index := range total {
					if got, want := s.Owns(index, total), index >= first && index < first+n; got != want {
						t.Fatalf("%v of %d: Owns(%d) = %v, want %v", s, total, index, got, want)
					}
				}
				next = first + n
				smallest, largest = min(smallest, n), max(largest, n)
			}
			if next != total {
				t.Fatalf("%d shards of %d cover 0..%d", count, total, next-1)
			}
			if largest-smallest > 1 {
				t.Fatalf("%d shards of %d: sizes %d..%d", count, total, smallest, largest)
			}
		}
	}
}

// TestShardAddedNodesGoToTheLastShard: nodes added beyond the initial fleet belong to exactly one
// shard, the last, whose slice the added numbers continue.
func TestShardAddedNodesGoToTheLastShard(t *testing.T) {
	for _, index := range []int{100, 101, 250} {
		owners := 0
		for i := range 3 {
			if (Shard{Index: i, Count: 3}).Owns(index, 100) {
				owners++
				if i != 2 {
					t.Errorf("added node %d is owned by shard %d/3", index, i)
				}
			}
		}
		if owners != 1 {
			t.Errorf("added node %d has %d owners", index, owners)
		}
	}
	if !(Shard{}).Owns(150, 100) {
		t.Error("an unsharded fleet does not own its added nodes")
	}
}

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in, host string
		want     Shard
		err      string
	}{
		{in: "0/1", want: Shard{0, 1}},
		{in: "2/3", want: Shard{2, 3}},
		{in: "auto/4", host: "fakelet-3", want: Shard{3, 4}},
		{in: "auto/20", host: "my-fakelet-large-12", want: Shard{12, 20}},
		{in: "auto/4", host: "fakelet-4", err: "between 0 and 3"},
		{in: "auto/4", host: "fakelet", err: "does not end in -<ordinal>"},
		{in: "auto/4", host: "fakelet-x", err: "does not end in -<ordinal>"},
		{in: "auto/4", host: "fakelet-+1", err: "does not end in -<ordinal>"},
		{in: "3/3", err: "between 0 and 2"},
		{in: "-1/3", err: "between 0 and 2"},
		{in: "1/0", err: "positive integer"},
		{in: "1", err: "want i/n"},
		{in: "a/3", err: "integer or auto"},
	} {
		got, err := ParseShard(tc.in, tc.host)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseShard(%q, %q) = %v, %v; want an error with %q", tc.in, tc.host, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseShard(%q, %q) = %v, %v; want %v", tc.in, tc.host, got, err, tc.want)
		}
	}
	if err := (Shard{Index: 0, Count: 5}).Validate(4); err == nil {
		t.Error("5 shards of 4 nodes validate")
	}
}

func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"0/1", "auto/3", "7/8", "/", "1/-1"} {
		f.Add(s, "fakelet-2")
	}
	f.Fuzz(func(t *testing.T, s, host string) {
		sh, err := ParseShard(s, host)
		if err == nil && (sh.Index < 0 || sh.Index >= sh.Count) {
			t.Fatalf("ParseShard(%q, %q) = %v", s, host, sh)
		}
	})
}
