package profiles

import (
	"encoding/json"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a non-negative time.Duration written as a Go duration string ("90s", "5m", "1m30s") in
// YAML and JSON. A bare number is refused: "60" could mean seconds or nanoseconds, so the unit is
// required.
type Duration struct {
	time.Duration
}

// ParseDuration parses a Go duration string and refuses negative values: nothing in a profile happens
// before its start.
func ParseDuration(s string) (Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return Duration{}, fmt.Errorf("%q is not a duration (write it like 90s, 5m or 1m30s)", s)
	}
	if d < 0 {
		return Duration{}, fmt.Errorf("duration %q is negative", s)
	}
	return Duration{d}, nil
}

// UnmarshalYAML reports a bad duration as a yaml.TypeError carrying its line and column, so that the
// decoder goes on to report every other problem too, and the error can be mapped to a field path.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: column %d: want a duration like 90s or 5m, got %s",
			n.Line, n.Column, describeNode(n))}}
	}
	parsed, err := ParseDuration(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: column %d: %v", n.Line, n.Column, err)}}
	}
	*d = parsed
	return nil
}

// MarshalYAML writes the duration the way it is read.
func (d Duration) MarshalYAML() (any, error) {
	return d.Duration.String(), nil
}

// UnmarshalJSON reads a duration string, so that a profile recorded as JSON reads back.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string like \"90s\": %w", err)
	}
	parsed, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = parsed
	return nil
}

// MarshalJSON writes the duration as a string, the way profiles are written.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.Duration.String())
}

// describeNode names what a YAML node holds, for an error message.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.ShortTag() == "!!null" {
		return "nothing"
	}
	return fmt.Sprintf("%q", n.Value)
}
