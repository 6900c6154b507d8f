package profiles

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// Every validation rule, one case each. Specs are written from line 6 (see doc), so the line numbers in
// the expectations are the lines of the fields.
func TestValidationErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want []string
	}{
		{
			name: "header",
			yaml: "apiVersion: v1\nkind: Node\nmetadata: {name: Stop_10}\nspec: {nodes: 1, phases: [{name: p, duration: 1s}]}",
			want: []string{
				`1: apiVersion: want "fakelet.dev/v1alpha1", got "v1"`,
				`2: kind: want "Profile", got "Node"`,
				`3: metadata.name: "Stop_10" is not a valid name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			},
		},
		{
			name: "missing name",
			yaml: "apiVersion: fakelet.dev/v1alpha1\nkind: Profile\nmetadata: {description: x}\nspec: {nodes: 1, phases: [{name: p, duration: 1s}]}",
			want: []string{`3: metadata.name: is required`},
		},
		{
			name: "fleet",
			yaml: doc("nodes: 0\nzones: -1\npodsPerNode: -2\nphases: [{name: p, duration: 1s}]"),
			want: []string{
				`6: spec.nodes: must be between 1 and 1000000, got 0`,
				`7: spec.zones: must be between 1 and 1000, got -1`,
				`8: spec.podsPerNode: must be between 0 and 110 (a node's pod capacity), got -2`,
			},
		},
		{
			name: "pods",
			yaml: doc("nodes: 1\npodsPerNode: 111\npodTolerationSeconds: -1\nphases: [{name: p, duration: 1s}]"),
			want: []string{
				`7: spec.podsPerNode: must be between 0 and 110 (a node's pod capacity), got 111`,
				`8: spec.podTolerationSeconds: must be between 0 and 86400, got -1`,
			},
		},
		{
			name: "toleration without pods",
			yaml: doc("nodes: 1\npodTolerationSeconds: 30\nphases: [{name: p, duration: 1s}]"),
			want: []string{`7: spec.podTolerationSeconds: applies to pods, and spec.podsPerNode is 0`},
		},
		{
			name: "fleet too large",
			yaml: doc("nodes: 1000001\nzones: 1001\nphases: [{name: p, duration: 1s}]"),
			want: []string{
				`6: spec.nodes: must be between 1 and 1000000, got 1000001`,
				`7: spec.zones: must be between 1 and 1000, got 1001`,
			},
		},
		{
			name: "heartbeat",
			yaml: doc("nodes: 1\nheartbeat: {mode: leases, leaseDurationSeconds: -1, statusUpdateFrequency: 1m, statusReportFrequency: 30s}\nphases: [{name: p, duration: 1s}]"),
			want: []string{
				`7: spec.heartbeat.mode: must be lease or status, got "leases"`,
				`7: spec.heartbeat.leaseDurationSeconds: must be at least 1, got -1`,
				`7: spec.heartbeat.statusReportFrequency: 30s is shorter than statusUpdateFrequency 1m0s: a status is only reported when it is updated`,
			},
		},
		{
			name: "group selectors",
			yaml: doc(`nodes: 10
zones: 3
groups:
  none: {}
  two: {percent: 10, zone: zone-1}
  pct0: {percent: 0}
  pct101: {percent: 100.5}
  count0: {count: 0}
  names0: {names: []}
  namesDup: {names: [a, "", a]}
  idx: {indexes: "3-1"}
  zone0: {zone: zone-0}
  zone4: {zone: zone-4}
  east: {zone: east}
  bad.name: {count: 1}
phases: [{name: p, duration: 1s}]`),
			want: []string{
				`9: spec.groups.none: selects no nodes: set one of percent, count, names, indexes, zone`,
				`10: spec.groups.two: sets percent and zone: set only one of percent, count, names, indexes, zone`,
				`11: spec.groups.pct0.percent: must be more than 0 and at most 100, got 0`,
				`12: spec.groups.pct101.percent: must be more than 0 and at most 100, got 100.5`,
				`13: spec.groups.count0.count: must be at least 1, got 0`,
				`14: spec.groups.names0.names: is empty`,
				`15: spec.groups.namesDup.names[1]: is empty`,
				`15: spec.groups.namesDup.names[2]: "a" is listed twice`,
				`16: spec.groups.idx.indexes: item "3-1": the range runs backwards`,
				`17: spec.groups.zone0.zone: unknown zone "zone-0" (zones: zone-1..zone-3)`,
				`18: spec.groups.zone4.zone: unknown zone "zone-4" (zones: zone-1..zone-3)`,
				`19: spec.groups.east.zone: unknown zone "east" (zones: zone-1..zone-3)`,
				`20: spec.groups.bad.name: "bad.name" is not a valid group name: start with a letter, then letters, digits, '-' or '_', at most 63 characters`,
			},
		},
		{
			name: "no phases",
			yaml: doc("nodes: 1"),
			want: []string{`5: spec.phases: a profile needs at least one phase`},
		},
		{
			name: "phases",
			yaml: doc(`nodes: 1
phases:
- duration: 1s
- {name: a, duration: 0s}
- {name: a, duration: 1s}
- {name: 1st, duration: 1s}
- {name: long, duration: 169h}`),
			want: []string{
				`8: spec.phases[0].name: is required`,
				`9: spec.phases[1].duration: must be more than 0`,
				`10: spec.phases[2].name: "a" is already the name of spec.phases[1]`,
				`11: spec.phases[3].name: "1st" is not a valid phase name: start with a letter, then letters, digits, '-' or '_', at most 63 characters`,
				`12: spec.phases[4].duration: makes the run longer than 168h0m0s`,
			},
		},
		{
			name: "action verbs, groups and parameters",
			yaml: doc(`nodes: 10
groups: {victims: {count: 1}, others: {count: 1}}
phases:
- name: p
  duration: 1m
  actions:
  - {group: victims}
  - {group: victims, do: explode}
  - {do: stop}
  - {group: victim, do: stop}
  - {group: victims, do: stop, delay: 1s, reason: Foo}
  - {group: victims, do: flap, period: 10s, mode: lease}`),
			want: []string{
				`12: spec.phases[0].actions[0].do: is required (actions: stop, start, restart, flap, partition, heal, notReady, ready, condition, deleteLease, denyAuth, restoreAuth, latency, mode, churn, crashPods, unreadyPods, healPods)`,
				`13: spec.phases[0].actions[1].do: unknown action "explode" (actions: stop, start, restart, flap, partition, heal, notReady, ready, condition, deleteLease, denyAuth, restoreAuth, latency, mode, churn, crashPods, unreadyPods, healPods)`,
				`14: spec.phases[0].actions[2].group: is required (groups: others, victims)`,
				`15: spec.phases[0].actions[3].group: unknown group "victim" (groups: others, victims)`,
				`16: spec.phases[0].actions[4].reason: is not a parameter of stop (stop takes no parameters)`,
				`16: spec.phases[0].actions[4].delay: is not a parameter of stop (stop takes no parameters)`,
				`17: spec.phases[0].actions[5].mode: is not a parameter of flap (flap takes period, duty, jitter)`,
			},
		},
		{
			name: "group without any groups defined",
			yaml: doc("nodes: 10\nphases:\n- name: p\n  duration: 1m\n  actions:\n  - {do: stop}\n  - {do: stop, group: g}"),
			want: []string{
				`11: spec.phases[0].actions[0].group: is required, and spec.groups defines none`,
				`12: spec.phases[0].actions[1].group: unknown group "g": spec.groups defines none`,
			},
		},
		{
			name: "timing within the phase",
			yaml: doc(`nodes: 10
groups: {g: {count: 1}}
phases:
- name: p
  duration: 1m
  actions:
  - {group: g, do: stop, at: 1m}
  - {group: g, do: stop, at: 30s, spread: 31s}
  - {group: g, do: stop, at: 30s, spread: 30s}`),
			want: []string{
				`12: spec.phases[0].actions[0].at: 1m0s is not within the phase (duration 1m0s)`,
				`13: spec.phases[0].actions[1].spread: at 30s + spread 31s ends after the phase (duration 1m0s)`,
			},
		},
		{
			name: "flap",
			yaml: doc(`nodes: 10
groups: {g: {count: 1}}
phases:
- name: p
  duration: 1m
  actions:
  - {group: g, do: flap}
  - {group: g, do: flap, period: 500ms}
  - {group: g, do: flap, period: 10s, duty: 0}
  - {group: g, do: flap, period: 10s, duty: 1}
  - {group: g, do: flap, period: 10s, duty: 0.8, jitter: 3s}
  - {group: g, do: flap, period: 40s, at: 10s, spread: 11s}
  - {group: g, do: flap, period: 10s, duty: 0.8, jitter: 2s, at: 10s, spread: 40s}`),
			want: []string{
				`12: spec.phases[0].actions[0].period: is required: how long one stop and start cycle lasts`,
				`13: spec.phases[0].actions[1].period: must be at least 1s, got 500ms`,
				`14: spec.phases[0].actions[2].duty: must be more than 0 and less than 1 (the stopped fraction of a period), got 0`,
				`15: spec.phases[0].actions[3].duty: must be more than 0 and less than 1 (the stopped fraction of a period), got 1`,
				`16: spec.phases[0].actions[4].jitter: 3s is more than the shorter of the stopped (8s) and running (2s) parts of a period`,
				`17: spec.phases[0].actions[5].period: at 10s + spread 11s + period 40s ends after the phase (duration 1m0s): not every node would flap once`,
			},
		},
		{
			name: "notReady, condition, latency, mode",
			yaml: doc(`nodes: 10
groups: {g: {count: 1}}
phases:
- name: p
  duration: 1m
  actions:
  - {group: g, do: notReady, reason: runtime down}
  - {group: g, do: condition}
  - {group: g, do: condition, type: NetworkUnavailable, status: Unknown}
  - {group: g, do: latency}
  - {group: g, do: mode}
  - {group: g, do: mode, mode: grpc}
  - {group: g, do: latency, delay: 0s}`),
			want: []string{
				`12: spec.phases[0].actions[0].reason: "runtime down" is not a condition reason: one CamelCase word, like KubeletNotReady`,
				`13: spec.phases[0].actions[1].type: is required (MemoryPressure, DiskPressure or PIDPressure)`,
				`14: spec.phases[0].actions[2].type: must be MemoryPressure, DiskPressure or PIDPressure, got "NetworkUnavailable"`,
				`14: spec.phases[0].actions[2].status: must be True or False, got "Unknown"`,
				`15: spec.phases[0].actions[3].delay: is required (0s clears a delay)`,
				`16: spec.phases[0].actions[4].mode: is required (lease or status)`,
				`17: spec.phases[0].actions[5].mode: must be lease or status, got "grpc"`,
			},
		},
		{
			name: "churn",
			yaml: doc(`nodes: 10
groups: {g: {count: 1}}
phases:
- name: p
  duration: 1m
  actions:
  - {do: churn}
  - {do: churn, add: -1, remove: -2}
  - {group: g, do: churn, add: 5}
  - {do: churn, remove: 5}
  - {do: churn, add: 5, rate: 0}
  - {do: churn, add: 5, rate: 1, spread: 10s}
  - {do: churn, add: 61, rate: 1}
  - {do: churn, add: 31, rate: 1, at: 30s}
  - {do: churn, add: 60, rate: 1}
  - {do: churn, add: 2000000}`),
			want: []string{
				`12: spec.phases[0].actions[0]: churn needs add or remove (or both) above 0`,
				`13: spec.phases[0].actions[1].add: must not be negative, got -1`,
				`13: spec.phases[0].actions[1].remove: must not be negative, got -2`,
				`13: spec.phases[0].actions[1]: churn needs add or remove (or both) above 0`,
				`14: spec.phases[0].actions[2].group: churn uses a group only to choose the nodes it removes, and remove is 0`,
				`15: spec.phases[0].actions[3].group: is required (groups: g)`,
				`16: spec.phases[0].actions[4].rate: must be more than 0 nodes per second, got 0`,
				`17: spec.phases[0].actions[5].rate: set rate or spread, not both: both say how fast nodes come and go`,
				`18: spec.phases[0].actions[6].rate: 61 nodes at 1 per second take 1m0s, which ends after the phase (duration 1m0s, at 0s)`,
				`19: spec.phases[0].actions[7].rate: 31 nodes at 1 per second take 30s, which ends after the phase (duration 1m0s, at 30s)`,
				`21: spec.phases[0].actions[9]: churn adds or removes more nodes than the largest fleet fakelet runs (1000000)`,
			},
		},
		{
			name: "restart",
			yaml: doc(`nodes: 10
groups: {g: {count: 1}}
phases:
- name: p
  duration: 1m
  actions:
  - {group: g, do: restart}
  - {group: g, do: restart, downtime: 10s}
  - {group: g, do: restart, downtime: -1s}
  - {group: g, do: restart, at: 30s, spread: 20s, downtime: 10s}
  - {group: g, do: restart, downtime: soon}
  - {group: g, do: restart, delay: 1s}`),
			want: []string{
				`14: spec.phases[0].actions[2].downtime: duration "-1s" is negative`,
				`15: spec.phases[0].actions[3].downtime: at 30s + spread 20s + downtime 10s ends after the phase (duration 1m0s): a kubelet would still be down when it ends`,
				`16: spec.phases[0].actions[4].downtime: "soon" is not a duration (write it like 90s, 5m or 1m30s)`,
				`17: spec.phases[0].actions[5].delay: is not a parameter of restart (restart takes downtime)`,
			},
		},
		{
			name: "churn adds too many in all",
			yaml: doc(`nodes: 10
phases:
- name: p
  duration: 1m
  actions:
  - {do: churn, add: 600000}
- name: q
  duration: 1m
  actions:
  - {do: churn, add: 600000}`),
			want: []string{`7: spec.phases: churn adds 1200000 nodes in all, more than the largest fleet fakelet runs (1000000)`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.yaml))
			assertProblems(t, err, tc.want)
		})
	}
}

// One file with a problem of most kinds, rendered as a user sees it: the golden file shows the whole
// error at a glance, and changes to wording show up in review.
func TestValidationGolden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "invalid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse("invalid.yaml", data)
	if err == nil {
		t.Fatal("invalid.yaml parsed")
	}
	golden(t, "invalid.golden", err.Error()+"\n")
}

// A profile built in code has no lines; its problems still name their paths.
func TestValidateWithoutSource(t *testing.T) {
	p := &Profile{APIVersion: APIVersion, Kind: Kind, Metadata: Metadata{Name: "x"}, Spec: Spec{Nodes: 1}}
	p.SetDefaults()
	err := p.Validate()
	if err == nil || err.Error() != "profile: spec.phases: a profile needs at least one phase" {
		t.Fatalf("Validate() = %v", err)
	}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
