package profiles

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// nodeIndex knows where each field of a parsed document is, so that a problem can name both its line
// and its field path. The YAML decoder's errors give only a line; the index finds the field on it.
type nodeIndex struct {
	// lines maps a field path (spec.phases[1].actions[0].group) to the line of its key, or of the list
	// item.
	lines   map[string]int
	entries []indexEntry
}

// indexEntry is one key of a mapping or one item of a list.
type indexEntry struct {
	path    string
	key     string // the mapping key; empty for a list item
	keyLine int
	value   *yaml.Node
}

func indexNode(root *yaml.Node) *nodeIndex {
	idx := &nodeIndex{lines: map[string]int{}}
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	idx.entries = append(idx.entries, indexEntry{path: "", keyLine: doc.Line, value: doc})
	idx.walk(doc, "")
	return idx
}

func (idx *nodeIndex) walk(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := joinPath(path, k.Value)
			if _, seen := idx.lines[p]; !seen {
				idx.lines[p] = k.Line
			}
			idx.entries = append(idx.entries, indexEntry{path: p, key: k.Value, keyLine: k.Line, value: v})
			idx.walk(v, p)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			p := indexPath(path, i)
			idx.lines[p] = item.Line
			idx.entries = append(idx.entries, indexEntry{path: p, keyLine: item.Line, value: item})
			idx.walk(item, p)
		}
	}
	// Aliases are not followed: a problem inside an anchored value is reported at the anchor.
}

// The messages of go.yaml.in/yaml/v3 (decode.go) and of Duration.UnmarshalYAML.
var (
	lineRe      = regexp.MustCompile(`(?s)^line (\d+): (.*)$`)
	unknownRe   = regexp.MustCompile(`^line (\d+): field (.+) not found in type (\S+)$`)
	mismatchRe  = regexp.MustCompile("^line (\\d+): cannot unmarshal (!!\\w+)(?: `(.*)`)? into (.+)$")
	duplicateRe = regexp.MustCompile(`^line (\d+): mapping key "(.*)" already defined at line (\d+)$`)
	columnRe    = regexp.MustCompile(`(?s)^line (\d+): column (\d+): (.*)$`)
)

// translate turns one decoder message into a problem with a field path and a message in the profile's
// own terms (fields and kinds of value, not Go types). It also returns the path whose validation the
// problem makes meaningless: the field itself, or for a key set twice the whole mapping, which the
// decoder then leaves undecoded.
func (idx *nodeIndex) translate(msg string) (Problem, string) {
	p := idx.translateMessage(msg)
	if duplicateRe.MatchString(msg) {
		return p, parentPath(p.Path)
	}
	return p, p.Path
}

func (idx *nodeIndex) translateMessage(msg string) Problem {
	if m := unknownRe.FindStringSubmatch(msg); m != nil {
		line, field := atoi(m[1]), m[2]
		p := Problem{Line: line, Path: field, Message: "unknown field"}
		if e, ok := idx.find(func(e indexEntry) bool { return e.keyLine == line && e.key == field }); ok {
			p.Path = e.path
		}
		if t, ok := formatTypes[m[3]]; ok {
			p.Message = fmt.Sprintf("unknown field (%s has %s)", typeNoun[m[3]], strings.Join(yamlFields(t), ", "))
		}
		return p
	}
	if m := duplicateRe.FindStringSubmatch(msg); m != nil {
		line, key := atoi(m[1]), m[2]
		p := Problem{Line: line, Path: key, Message: fmt.Sprintf("set twice (first at line %s)", m[3])}
		if e, ok := idx.find(func(e indexEntry) bool { return e.keyLine == line && e.key == key }); ok {
			p.Path = e.path
		}
		return p
	}
	if m := mismatchRe.FindStringSubmatch(msg); m != nil {
		line, tag, value := atoi(m[1]), m[2], m[3]
		p := Problem{Line: line, Message: "want " + kindWords(m[4])}
		e, ok := idx.find(func(e indexEntry) bool { return e.value.Line == line && nodeMatches(e.value, tag, value) })
		if !ok {
			e, ok = idx.find(func(e indexEntry) bool { return e.value.Line == line })
		}
		if ok {
			p.Path = e.path
			p.Message += ", got " + describeNode(e.value)
		}
		return p
	}
	if m := columnRe.FindStringSubmatch(msg); m != nil {
		line, col := atoi(m[1]), atoi(m[2])
		p := Problem{Line: line, Message: m[3]}
		if e, ok := idx.find(func(e indexEntry) bool { return e.value.Line == line && e.value.Column == col }); ok {
			p.Path = e.path
		}
		return p
	}
	if m := lineRe.FindStringSubmatch(msg); m != nil {
		return Problem{Line: atoi(m[1]), Message: m[2]}
	}
	return Problem{Message: msg}
}

func (idx *nodeIndex) find(match func(indexEntry) bool) (indexEntry, bool) {
	for _, e := range idx.entries {
		if match(e) {
			return e, true
		}
	}
	return indexEntry{}, false
}

// nodeMatches reports whether a node is the one a decoder message quotes: its tag and its value, which
// the decoder shortens to 7 characters and "..." past 10.
func nodeMatches(n *yaml.Node, tag, quoted string) bool {
	if n.ShortTag() != tag {
		return false
	}
	if short, ok := strings.CutSuffix(quoted, "..."); ok && len(n.Value) > 10 {
		return strings.HasPrefix(n.Value, short)
	}
	return quoted == "" || n.Value == quoted
}

// formatTypes are the types a profile decodes into, by the name the decoder's messages give them.
var formatTypes = map[string]reflect.Type{}

// typeNoun names each struct of the format the way the docs do.
var typeNoun = map[string]string{}

func init() {
	for _, t := range []struct {
		v    any
		noun string
	}{
		{Profile{}, "a profile"},
		{Metadata{}, "metadata"},
		{Spec{}, "spec"},
		{Heartbeat{}, "heartbeat"},
		{Group{}, "a group"},
		{Taint{}, "a taint"},
		{Phase{}, "a phase"},
		{Action{}, "an action"},
		{Workloads{}, "workloads"},
		{Workload{}, "a workload"},
		{Requests{}, "requests"},
	} {
		rt := reflect.TypeOf(t.v)
		formatTypes[rt.String()] = rt
		typeNoun[rt.String()] = t.noun
	}
}

// yamlFields lists the YAML names of a struct's fields, in declaration order.
func yamlFields(t reflect.Type) []string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.IsExported() && name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// kindWords says in words what kind of value a Go type, as the decoder names it, wants.
func kindWords(goType string) string {
	goType = strings.TrimLeft(goType, "*")
	switch {
	case goType == "int32":
		return "an integer up to 2147483647"
	case goType == "int", goType == "int64":
		return "an integer"
	case goType == "float64":
		return "a number"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map["):
		return "a mapping"
	case formatTypes[goType] != nil:
		return "a mapping"
	}
	return "a string"
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
