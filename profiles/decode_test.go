package profiles

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/heartbeat"
)

// issueExample is the example of the format from the issue that introduced profiles.
const issueExample = `apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata:
  name: stop-10pct
  description: Stop 10% of the nodes for two minutes and bring them back.
spec:
  nodes: 1000                 # default fleet size; --nodes overrides
  zones: 3
  podsPerNode: 0
  heartbeat: {mode: lease, leaseDurationSeconds: 40, statusUpdateFrequency: 10s, statusReportFrequency: 5m}
  groups:
    victims: {percent: 10}
  phases:
  - name: steady
    duration: 60s
  - name: outage
    duration: 120s
    actions:
    - {group: victims, do: stop}
  - name: recovery
    duration: 60s
    actions:
    - {group: victims, do: start}
`

func TestParseIssueExample(t *testing.T) {
	p, err := Parse("stop-10pct.yaml", []byte(issueExample))
	if err != nil {
		t.Fatal(err)
	}
	ten := 10.0
	want := Spec{
		Nodes: 1000,
		Zones: 3,
		Heartbeat: Heartbeat{
			Mode:                  heartbeat.ModeLease,
			LeaseDurationSeconds:  40,
			StatusUpdateFrequency: Duration{10 * time.Second},
			StatusReportFrequency: Duration{5 * time.Minute},
		},
		Groups: map[string]Group{"victims": {Percent: &ten}},
		Phases: []Phase{
			{Name: "steady", Duration: Duration{time.Minute}},
			{Name: "outage", Duration: Duration{2 * time.Minute}, Actions: []Action{{Group: "victims", Do: VerbStop}}},
			{Name: "recovery", Duration: Duration{time.Minute}, Actions: []Action{{Group: "victims", Do: VerbStart}}},
		},
	}
	if !reflect.DeepEqual(p.Spec, want) {
		t.Errorf("spec =\n%+v\nwant\n%+v", p.Spec, want)
	}
	if p.Metadata.Name != "stop-10pct" || p.Summary() != "Stop 10% of the nodes for two minutes and bring them back." {
		t.Errorf("metadata = %+v", p.Metadata)
	}
	if p.Spec.Duration() != 4*time.Minute {
		t.Errorf("Duration() = %v, want 4m", p.Spec.Duration())
	}
	if got := p.Spec.Heartbeat.RenewInterval(); got != 10*time.Second {
		t.Errorf("RenewInterval() = %v, want 10s", got)
	}
}

// Defaults are the kubelet's, and each action's defaults fill only its own parameters.
func TestParseDefaults(t *testing.T) {
	p, err := Parse("t.yaml", []byte(doc(`nodes: 10
groups:
  g: {count: 1}
phases:
- name: p
  duration: 1m
  actions:
  - {group: g, do: flap, period: 10s}
  - {group: g, do: notReady}
  - {group: g, do: condition, type: DiskPressure}
  - {group: g, do: stop}`)))
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Zones != 1 {
		t.Errorf("zones = %d, want 1", p.Spec.Zones)
	}
	hb := p.Spec.Heartbeat
	if hb.Mode != heartbeat.ModeLease || hb.LeaseDurationSeconds != 40 || hb.StatusUpdateFrequency.Duration != 10*time.Second ||
		hb.StatusReportFrequency.Duration != 5*time.Minute {
		t.Errorf("heartbeat = %+v, want the kubelet's defaults", hb)
	}
	acts := p.Spec.Phases[0].Actions
	if *acts[0].Duty != 0.5 || acts[0].Jitter.Duration != 0 {
		t.Errorf("flap duty %v jitter %v, want 0.5 and 0", *acts[0].Duty, acts[0].Jitter.Duration)
	}
	if acts[1].Reason != "KubeletNotReady" || acts[1].Message != "container runtime is down" {
		t.Errorf("notReady = %q %q", acts[1].Reason, acts[1].Message)
	}
	if acts[2].Status != ConditionTrue {
		t.Errorf("condition status = %q, want True", acts[2].Status)
	}
	if got := acts[3].setParams(); got != nil {
		t.Errorf("stop got parameters %v from defaults", got)
	}
	// Validate holds after SetDefaults: a parsed profile validates again.
	if err := p.Validate(); err != nil {
		t.Errorf("Validate after Parse: %v", err)
	}
}

// Decoding problems: each names its line and field path, in the format's words rather than Go's.
func TestParseDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // "line: path: message"
	}{
		{
			name: "unknown field",
			yaml: doc("nodes: 10\nnode: 10\nphases: [{name: p, duration: 1m}]"),
			want: []string{"7: spec.node: unknown field (spec has nodes, zones, podsPerNode, podTolerationSeconds, seed, heartbeat, groups, phases, workloads)"},
		},
		{
			name: "unknown field in a flow mapping of a list item",
			yaml: doc("nodes: 10\ngroups: {g: {count: 1}}\nphases:\n- name: p\n  duration: 1m\n  actions:\n  - {group: g, do: stop, when: 5s}"),
			want: []string{"12: spec.phases[0].actions[0].when: unknown field (an action has group, do, at, spread, period, duty, jitter, reason, message, type, status, delay, mode, downtime, exitCode, add, remove, rate)"},
		},
		{
			name: "unknown top-level field",
			yaml: "apiVersion: fakelet.dev/v1alpha1\nkind: Profile\nmetdata: {name: x}\nmetadata: {name: x}\nspec: {nodes: 1, phases: [{name: p, duration: 1s}]}",
			want: []string{"3: metdata: unknown field (a profile has apiVersion, kind, metadata, spec)"},
		},
		{
			name: "wrong type, and no repeat from validation",
			yaml: doc("nodes: many\nphases: [{name: p, duration: 1m}]"),
			want: []string{`6: spec.nodes: want an integer, got "many"`},
		},
		{
			name: "long value is matched despite the decoder shortening it",
			yaml: doc("nodes: 10\nzones: threeOrFourZones\nphases: [{name: p, duration: 1m}]"),
			want: []string{`7: spec.zones: want an integer, got "threeOrFourZones"`},
		},
		{
			name: "int32 overflow",
			yaml: doc("nodes: 10\nheartbeat: {leaseDurationSeconds: 4000000000}\nphases: [{name: p, duration: 1m}]"),
			want: []string{`7: spec.heartbeat.leaseDurationSeconds: want an integer up to 2147483647, got "4000000000"`},
		},
		{
			name: "list where a mapping goes",
			yaml: doc("nodes: 10\nheartbeat: [lease]\nphases: [{name: p, duration: 1m}]"),
			want: []string{`7: spec.heartbeat: want a mapping, got a list`},
		},
		{
			name: "mapping where a list goes",
			yaml: doc("nodes: 10\nphases: {name: p, duration: 1m}"),
			want: []string{`7: spec.phases: want a list, got a mapping`},
		},
		{
			name: "negative duration",
			yaml: doc("nodes: 10\nphases: [{name: p, duration: -1m}]"),
			want: []string{`7: spec.phases[0].duration: duration "-1m" is negative`},
		},
		{
			name: "duration without unit",
			yaml: doc("nodes: 10\nphases: [{name: p, duration: 60}]"),
			want: []string{`7: spec.phases[0].duration: want a duration like 90s or 5m, got "60"`},
		},
		{
			name: "not a duration, among others on one line",
			yaml: doc("nodes: 10\ngroups: {g: {count: 1}}\nphases: [{name: p, duration: 1m, actions: [{group: g, do: stop, at: 1s, spread: soon}]}]"),
			want: []string{`8: spec.phases[0].actions[0].spread: "soon" is not a duration (write it like 90s, 5m or 1m30s)`},
		},
		{
			name: "key set twice",
			yaml: doc("nodes: 10\nnodes: 20\nphases: [{name: p, duration: 1m}]"),
			want: []string{`7: spec.nodes: set twice (first at line 6)`},
		},
		{
			name: "every problem at once",
			yaml: doc("nodes: x\nzones: y\nbogus: 1\nphases: [{name: p, duration: 1m}]"),
			want: []string{
				`6: spec.nodes: want an integer, got "x"`,
				`7: spec.zones: want an integer, got "y"`,
				`8: spec.bogus: unknown field (spec has nodes, zones, podsPerNode, podTolerationSeconds, seed, heartbeat, groups, phases, workloads)`,
			},
		},
		{
			name: "empty document",
			yaml: "# nothing\n",
			want: []string{"0: the document is empty"},
		},
		{
			name: "two documents",
			yaml: issueExample + "---\n" + issueExample,
			want: []string{"24: a second YAML document starts here: a file holds one profile"},
		},
		{
			name: "syntax error",
			yaml: "apiVersion: fakelet.dev/v1alpha1\nkind: Profile\nmetadata: name: x\n",
			want: []string{"3: mapping values are not allowed in this context"},
		},
		{
			name: "not a mapping",
			yaml: "just a string\n",
			want: []string{`1: want a mapping, got "just a string"`},
		},
		{
			name: "null document: every required field is missing",
			yaml: "~\n",
			want: []string{
				`0: apiVersion: want "fakelet.dev/v1alpha1", got ""`,
				`0: kind: want "Profile", got ""`,
				`0: metadata.name: is required`,
				`0: spec.nodes: must be between 1 and 1000000, got 0`,
				`0: spec.phases: a profile needs at least one phase`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.yaml))
			assertProblems(t, err, tc.want)
		})
	}
}

// The error reads as the issue asks: file, field path and reason, and the line.
func TestErrorFormat(t *testing.T) {
	_, err := Parse("stop-10pct.yaml", []byte(strings.Replace(issueExample, "- {group: victims, do: stop}", "- {group: victim, do: stop}", 1)))
	const want = `profile stop-10pct.yaml:19: spec.phases[1].actions[0].group: unknown group "victim" (groups: victims)`
	if err == nil || err.Error() != want {
		t.Fatalf("error =\n%v\nwant\n%s", err, want)
	}
	var perr *Error
	if !errors.As(err, &perr) || perr.Source != "stop-10pct.yaml" || len(perr.Problems) != 1 {
		t.Fatalf("error is not an *Error with one problem: %#v", err)
	}
	if got := (&Error{Problems: []Problem{{Path: "spec.nodes", Message: "m"}, {Message: "n"}}}).Error(); got != "profile: spec.nodes: m\nprofile: n" {
		t.Errorf("without source or line: %q", got)
	}
}

// JSON and YAML names must be the same: a field has one name in docs, code and output.
func TestJSONAndYAMLNamesAgree(t *testing.T) {
	for name, typ := range formatTypes {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			j, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			y, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if j != y {
				t.Errorf("%s.%s: json name %q, yaml name %q", name, f.Name, j, y)
			}
		}
	}
}

// A profile recorded as JSON (in a run's report) reads back the same.
func TestJSONRoundTrip(t *testing.T) {
	for _, name := range BuiltinNames() {
		p, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var back Profile
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, data)
		}
		back.Source, back.Raw, back.lines = p.Source, p.Raw, p.lines
		if !reflect.DeepEqual(&back, p) {
			t.Errorf("%s: JSON round trip changed the profile:\n%s", name, data)
		}
	}
}

// doc wraps a spec in a valid header; spec lines start at line 6.
func doc(spec string) string {
	return "apiVersion: fakelet.dev/v1alpha1\nkind: Profile\nmetadata:\n  name: t\nspec:\n  " +
		strings.ReplaceAll(spec, "\n", "\n  ") + "\n"
}

// assertProblems checks that err is an *Error with exactly these problems, each as "line: path: message"
// (or "line: message" without a path).
func assertProblems(t *testing.T, err error, want []string) {
	t.Helper()
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("error = %v, want an *Error with %q", err, want)
	}
	var got []string
	for _, p := range perr.Problems {
		s := strconv.Itoa(p.Line) + ": " + p.Path + ": " + p.Message
		if p.Path == "" {
			s = strconv.Itoa(p.Line) + ": " + p.Message
		}
		got = append(got, s)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
