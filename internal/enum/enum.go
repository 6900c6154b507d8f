// Package enum reads the values of fakelet's string enums (heartbeat modes, footprints, identities,
// connection modes) as a user gives them, with one error for all of them.
package enum

import (
	"fmt"
	"strings"
)

// Parse returns s as the one of values it equals, or an error naming what was parsed and every value
// it may be: `unknown heartbeat mode "gossip" (want "lease" or "status")`.
func Parse[T ~string](what, s string, values ...T) (T, error) {
	for _, v := range values {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("unknown %s %q (want %s)", what, s, oneOf(values))
}

// oneOf lists values quoted, the last after "or".
func oneOf[T ~string](values []T) string {
	var b strings.Builder
	for i, v := range values {
		switch {
		case i == 0:
		case i == len(values)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", string(v))
	}
	return b.String()
}
