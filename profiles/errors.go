package profiles

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with a profile.
type Problem struct {
	// Path is the field the problem is about, like spec.phases[1].actions[0].group; empty for the
	// document as a whole.
	Path string
	// Line is the 1-based source line of that field, 0 when unknown (a profile built in code).
	Line int
	// Message says what is wrong, and when it helps, what would be right.
	Message string
}

// Error lists every problem found in one profile, so that a user fixes them all in one go instead of
// one per run.
type Error struct {
	// Source is where the profile came from: a file path, or builtin/NAME.yaml.
	Source   string
	Problems []Problem
}

// Error renders one problem per line, as `profile FILE:LINE: PATH: MESSAGE`.
func (e *Error) Error() string {
	var b strings.Builder
	problems := e.Problems
	if len(problems) == 0 {
		problems = []Problem{{Message: "invalid"}}
	}
	for i, p := range problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("profile")
		if e.Source != "" {
			b.WriteString(" ")
			b.WriteString(e.Source)
		}
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
		if p.Path != "" {
			b.WriteString(p.Path)
			b.WriteString(": ")
		}
		b.WriteString(p.Message)
	}
	return b.String()
}

// problems collects the problems of one profile as they are found.
type problems struct {
	lines map[string]int
	list  []Problem
}

// addf records a problem at a field path, with the line of that field (or its nearest ancestor) when
// the source is known.
func (ps *problems) addf(path, format string, args ...any) {
	ps.list = append(ps.list, Problem{Path: path, Line: lineOf(ps.lines, path), Message: fmt.Sprintf(format, args...)})
}

// err returns nil when there is no problem, or an *Error listing them in source order.
func (ps *problems) err(source string) error {
	if len(ps.list) == 0 {
		return nil
	}
	list := append([]Problem(nil), ps.list...)
	// Source order reads like the file. Problems without a line (a missing field, or a profile built
	// in code) come first, in the order they were found.
	sort.SliceStable(list, func(i, j int) bool { return list[i].Line < list[j].Line })
	return &Error{Source: source, Problems: list}
}

// lineOf returns the line of a path, or of its nearest ancestor that has one.
func lineOf(lines map[string]int, path string) int {
	for lines != nil && path != "" {
		if l, ok := lines[path]; ok {
			return l
		}
		path = parentPath(path)
	}
	return 0
}

// parentPath strips the last element of a field path: a.b[2] -> a.b, a.b -> a.
func parentPath(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

// joinPath appends a field name to a path.
func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// indexPath appends a list index to a path.
func indexPath(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}
