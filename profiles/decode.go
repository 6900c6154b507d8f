package profiles

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Parse decodes one profile strictly, fills in its defaults and validates all of it. source names the
// profile in errors (a file path, or builtin/NAME.yaml).
//
// The error, when there is one, is an *Error listing every problem found, each with its line and field
// path: unknown fields, values of the wrong type, and everything Validate checks.
func Parse(source string, data []byte) (*Profile, error) {
	ps := &problems{}
	root, ok := parseNode(data, ps)
	if !ok {
		return nil, ps.err(source)
	}
	idx := indexNode(root)
	ps.lines = idx.lines

	// go.yaml.in/yaml/v3 does the strict decoding: with KnownFields it reports every unknown field and
	// every value of the wrong type, and keeps decoding the rest. Its messages carry a line, which idx
	// turns into a field path.
	p := &Profile{Source: source, Raw: data, lines: idx.lines}
	var covered []string
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(p); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			ps.list = append(ps.list, syntaxProblem(err))
			return nil, ps.err(source)
		}
		for _, msg := range te.Errors {
			prob, cover := idx.translate(msg)
			ps.list = append(ps.list, prob)
			covered = append(covered, cover)
		}
	}
	for _, c := range covered {
		if c == "" {
			// The document itself is the wrong shape: there is nothing to validate.
			return nil, ps.err(source)
		}
	}

	decoded := len(ps.list)
	p.SetDefaults()
	p.validate(ps)
	ps.list = append(ps.list[:decoded], hideCovered(covered, ps.list[decoded:])...)
	if err := ps.err(source); err != nil {
		return nil, err
	}
	return p, nil
}

// parseNode parses the YAML into a node tree, refusing an empty document and more than one document.
func parseNode(data []byte, ps *problems) (*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if err == io.EOF {
			ps.addf("", "the document is empty")
		} else {
			ps.list = append(ps.list, syntaxProblem(err))
		}
		return nil, false
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == io.EOF:
	case err != nil:
		ps.list = append(ps.list, syntaxProblem(err))
		return nil, false
	default:
		ps.list = append(ps.list, Problem{Line: next.Line, Message: "a second YAML document starts here: a file holds one profile"})
		return nil, false
	}
	return &root, true
}

// syntaxProblem turns a YAML syntax error ("yaml: line 3: did not find expected key") into a problem
// with its line.
func syntaxProblem(err error) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := lineRe.FindStringSubmatch(msg); m != nil {
		return Problem{Line: atoi(m[1]), Message: m[2]}
	}
	return Problem{Message: msg}
}

// hideCovered drops validation problems about a field that already has a decoding problem (or sits
// under one): "nodes: want an integer" says all there is to say, "nodes: must be at least 1" would only
// repeat it less clearly.
func hideCovered(covers []string, validated []Problem) []Problem {
	var keep []Problem
	for _, v := range validated {
		covered := false
		for _, c := range covers {
			if v.Path == c || strings.HasPrefix(v.Path, c+".") || strings.HasPrefix(v.Path, c+"[") {
				covered = true
				break
			}
		}
		if !covered {
			keep = append(keep, v)
		}
	}
	return keep
}
