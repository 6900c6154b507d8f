package fleetname

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Shard is one of Count processes that together run one fleet: shard Index runs a contiguous slice
// of the fleet's node numbers, so names are unique across shards and their union is the whole
// fleet. The zero Shard is the whole fleet in one process.
type Shard struct {
	Index, Count int
}

// ShardEnv is the environment variable `fakelet run` reads a shard from when --shard is not given.
const ShardEnv = "FAKELET_SHARD"

// ParseShard parses "i/n" (0 <= i < n) or "auto/n", where auto is the StatefulSet pod ordinal: the
// number after the last '-' of hostname (a StatefulSet's pod NAME-<ordinal> has that hostname).
func ParseShard(s, hostname string) (Shard, error) {
	idx, count, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want i/n or auto/n", s)
	}
	n, err := strconv.Atoi(count)
	if err != nil || n <= 0 {
		return Shard{}, fmt.Errorf("shard %q: the shard count must be a positive integer", s)
	}
	var i int
	if idx == "auto" {
		if i, err = Ordinal(hostname); err != nil {
			return Shard{}, fmt.Errorf("shard %q: %w", s, err)
		}
	} else if i, err = strconv.Atoi(idx); err != nil {
		return Shard{}, fmt.Errorf("shard %q: the shard index must be an integer or auto", s)
	}
	if i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: the shard index must be between 0 and %d", s, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}

// Ordinal is a StatefulSet pod's ordinal from its hostname NAME-<ordinal>.
func Ordinal(hostname string) (int, error) {
	if hostname == "" {
		var err error
		if hostname, err = os.Hostname(); err != nil {
			return 0, fmt.Errorf("read the hostname for the pod ordinal: %w", err)
		}
	}
	cut := strings.LastIndexByte(hostname, '-')
	ord, err := strconv.Atoi(hostname[cut+1:])
	if cut < 0 || err != nil || ord < 0 || strings.HasPrefix(hostname[cut+1:], "+") {
		return 0, fmt.Errorf("hostname %q does not end in -<ordinal>, as a StatefulSet pod's does", hostname)
	}
	return ord, nil
}

// Sharded says whether s splits the fleet at all.
func (s Shard) Sharded() bool { return s.Count > 1 }

func (s Shard) String() string {
	if s.Count == 0 {
		return "0/1"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Slice is this shard's node numbers of a fleet of total nodes: first..first+n-1. Shard i takes
// floor(i*total/Count) up to floor((i+1)*total/Count), so shard sizes differ by at most one.
func (s Shard) Slice(total int) (first, n int) {
	if s.Count <= 1 {
		return 0, total
	}
	first = s.Index * total / s.Count
	return first, (s.Index+1)*total/s.Count - first
}

// Owns says whether node number index of a fleet that started with total nodes is this shard's:
// an initial node in its slice, or, for the last shard, a node added beyond the initial fleet (a
// churn add continues the numbering from total, and only the last shard's slice ends there).
func (s Shard) Owns(index, total int) bool {
	first, n := s.Slice(total)
	if index >= first && index < first+n {
		return true
	}
	return index >= total && (s.Count <= 1 || s.Index == s.Count-1)
}

// Validate says whether a fleet of total nodes can be split into s.Count shards of at least one node.
func (s Shard) Validate(total int) error {
	switch {
	case s.Count == 0 && s.Index == 0:
		return nil
	case s.Count < 1 || s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("shard %d/%d: want 0 <= index < count", s.Index, s.Count)
	case s.Count > total:
		return fmt.Errorf("shard %d/%d: %d nodes cannot be split into %d shards of at least one node", s.Index, s.Count, total, s.Count)
	}
	return nil
}

// ClaimName is the name of the claim Lease of shard s of the fleet whose nodes are named with
// prefix: the names are what two runs must not share, and the deploy RBAC grants the claims' renewals
// by name for a prefix (deploy/rbac.go). Its dots keep it from ever being a Node's Lease, since node
// names (PREFIX-NNNNN) have none.
func ClaimName(prefix string, s Shard) string {
	count := max(1, s.Count)
	return fmt.Sprintf("fakelet-claim.%s.%d-of-%d", prefix, s.Index, count)
}
