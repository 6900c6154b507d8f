package profiles

import (
	"fmt"
	"strconv"
	"strings"
)

// indexRange is one item of a group's indexes: a single node (lo == hi) or an inclusive range.
type indexRange struct {
	lo, hi int
}

// parseIndexes parses a group's indexes, a comma-separated list of node indexes and inclusive ranges
// ("0-9,20"). Whitespace around items is allowed; items may overlap. It checks syntax only: whether the
// fleet has those nodes is known when the profile is resolved.
func parseIndexes(s string) ([]indexRange, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("is empty (write indexes like \"0-9,20\")")
	}
	var out []indexRange
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("item %d is empty (write indexes like \"0-9,20\")", i+1)
		}
		loText, hiText, isRange := strings.Cut(item, "-")
		lo, err := parseIndex(loText)
		if err != nil {
			return nil, fmt.Errorf("item %q: %v", item, err)
		}
		hi := lo
		if isRange {
			if hi, err = parseIndex(hiText); err != nil {
				return nil, fmt.Errorf("item %q: %v", item, err)
			}
			if hi < lo {
				return nil, fmt.Errorf("item %q: the range runs backwards", item)
			}
		}
		out = append(out, indexRange{lo, hi})
	}
	return out, nil
}

// parseIndex parses one node index: decimal digits only, below maxNodes.
func parseIndex(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a node index (write indexes like \"0-9,20\")", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n >= maxNodes {
		return 0, fmt.Errorf("index %s is beyond the largest fleet fakelet runs (%d nodes)", s, maxNodes)
	}
	return n, nil
}
