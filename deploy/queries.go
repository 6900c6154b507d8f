package deploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Query is one PromQL expression of the dashboard or the recording rules.
type Query struct {
	// Where names it: "rules.yml fakelet:heartbeats:rate1m", "fakelet.json panel 3 (Heartbeats) A".
	Where string
	Expr  string
}

// RecordingRules returns the rules of rules.yml by name.
func RecordingRules() (map[string]string, error) {
	var file struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(PrometheusRules, &file); err != nil {
		return nil, fmt.Errorf("parse %s: %w", RulesFile, err)
	}
	rules := map[string]string{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if _, dup := rules[r.Record]; dup {
				return nil, fmt.Errorf("%s: rule %s recorded twice", RulesFile, r.Record)
			}
			rules[r.Record] = r.Expr
		}
	}
	return rules, nil
}

// Queries returns every PromQL expression of the recording rules and the dashboard (its panels'
// targets and its annotations).
func Queries() ([]Query, error) {
	rules, err := RecordingRules()
	if err != nil {
		return nil, err
	}
	var qs []Query
	for _, name := range slices.Sorted(maps.Keys(rules)) {
		qs = append(qs, Query{Where: RulesFile + " " + name, Expr: rules[name]})
	}
	var dash struct {
		Annotations struct {
			List []struct {
				Name string `json:"name"`
				Expr string `json:"expr"`
			} `json:"list"`
		} `json:"annotations"`
		Panels []struct {
			ID      int    `json:"id"`
			Title   string `json:"title"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(GrafanaDashboard, &dash); err != nil {
		return nil, fmt.Errorf("parse the Grafana dashboard: %w", err)
	}
	for _, a := range dash.Annotations.List {
		if a.Expr != "" {
			qs = append(qs, Query{Where: fmt.Sprintf("fakelet.json annotation %q", a.Name), Expr: a.Expr})
		}
	}
	for _, p := range dash.Panels {
		for _, t := range p.Targets {
			qs = append(qs, Query{Where: fmt.Sprintf("fakelet.json panel %d (%s) %s", p.ID, p.Title, t.RefID), Expr: t.Expr})
		}
	}
	return qs, nil
}

var (
	promqlString    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promqlMatchers  = regexp.MustCompile(`\{[^{}]*\}`)
	promqlRange     = regexp.MustCompile(`\[[^\[\]]*\]`)
	promqlGrouping  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promqlIdent     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promqlFollowing = regexp.MustCompile(`^\s*\(`)
	// promqlKeywords are the identifiers of PromQL that are not metric names where they stand
	// alone (aggregations and functions are always followed by a parenthesis or a grouping).
	promqlKeywords = map[string]bool{
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true,
		"atan2": true, "sum": true, "min": true, "max": true, "avg": true, "count": true, "group": true,
		"stddev": true, "stdvar": true, "topk": true, "bottomk": true, "quantile": true, "count_values": true,
	}
)

// MetricNames returns the metric names an expression selects (recording rules included), sorted and
// without duplicates. It reads the expression the way PromQL does closely enough for what the
// dashboard and the rules hold: strings, label matchers, ranges and groupings are skipped, and an
// identifier followed by a parenthesis is a function or an aggregation.
func MetricNames(expr string) []string {
	s := promqlString.ReplaceAllString(expr, `""`)
	s = promqlMatchers.ReplaceAllString(s, " ")
	s = promqlRange.ReplaceAllString(s, " ")
	s = promqlGrouping.ReplaceAllString(s, " ")
	var names []string
	for _, loc := range promqlIdent.FindAllStringIndex(s, -1) {
		if loc[0] > 0 && (isDigit(s[loc[0]-1]) || s[loc[0]-1] == '.') {
			continue // the exponent or suffix of a number: 1e9, 0x1f
		}
		name := s[loc[0]:loc[1]]
		if promqlKeywords[strings.ToLower(name)] || promqlFollowing.MatchString(s[loc[1]:]) {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// FamilyName is the family a series name belongs to: a histogram's _bucket, _sum and _count series
// belong to the histogram.
func FamilyName(name string, families map[string]bool) string {
	if families[name] {
		return name
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && families[base] {
			return base
		}
	}
	return name
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
