package profiles

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestWorkloadsParse(t *testing.T) {
	p, err := Parse("t.yaml", []byte(doc(`nodes: 100
zones: 3
groups: {victims: {percent: 10}}
workloads:
  rate: 2
  items:
  - {name: web, kind: Deployment, replicasPerNode: 1, requests: {cpu: 10m, memory: 16Mi}, spread: zone, tolerationSeconds: 30}
  - {name: batch, kind: Job, count: 2, replicas: 5, runFor: 10s}
  - {name: agent, kind: DaemonSet}
phases:
- name: steady
  duration: 1m
- name: outage
  duration: 1m
  actions:
  - {group: victims, do: crashPods}
  - {group: victims, do: unreadyPods, at: 10s}
  - {group: victims, do: healPods, at: 20s}`)))
	if err != nil {
		t.Fatal(err)
	}
	ws := p.Spec.Workloads
	if *ws.Rate != 2 || len(ws.Items) != 3 {
		t.Fatalf("workloads = %+v", ws)
	}
	web, batch, ds := ws.Items[0], ws.Items[1], ws.Items[2]
	if web.Count != 1 || web.Image != DefaultWorkloadImage || !web.HasService() || web.ObjectName(0) != "web" {
		t.Errorf("web defaults: %+v", web)
	}
	if batch.HasService() || batch.ObjectName(1) != "batch-1" || batch.RunFor.Duration != 10*time.Second {
		t.Errorf("batch: %+v", batch)
	}
	if ds.RunFor != nil || ds.HasService() {
		t.Errorf("agent: %+v", ds)
	}
	// namespace, web and its Service, two Jobs, the DaemonSet
	if n := ws.Objects(); n != 6 {
		t.Errorf("objects = %d, want 6", n)
	}
	if d := ws.CreationTime(); d != 2500*time.Millisecond {
		t.Errorf("creation time = %v, want 2.5s (the 6th object at 2/s)", d)
	}
	plan, err := p.Resolve(Fleet{Nodes: 30})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plan.WorkloadPods, []int{30, 5, 30}) {
		t.Errorf("workload pods = %v, want [30 5 30] (replicasPerNode follows the fleet's size)", plan.WorkloadPods)
	}
	var faults []PodFault
	for ev := range plan.Schedule().Events(1) {
		if ev.Node == plan.Groups["victims"][0] {
			faults = append(faults, ev.Args.PodFault)
		}
	}
	want := []PodFault{{Crash: true, ExitCode: 1}, {Unready: true}, {}}
	if !slices.Equal(faults, want) {
		t.Errorf("a victim's pod faults = %+v, want %+v", faults, want)
	}
}

func TestWorkloadsValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want []string
	}{
		{
			name: "fields",
			yaml: doc(`nodes: 10
workloads:
  rate: 0
  items:
  - {name: Web, kind: Deployment}
  - {name: web2, kind: Pod}
  - {name: j, kind: Job, replicas: 0, requests: {cpu: lots, memory: -1Mi}, spread: rack, service: true}
  - {name: d, kind: DaemonSet, replicas: 3, runFor: 5s, tolerationSeconds: -1}
  - {kind: Deployment, replicas: 1, replicasPerNode: 1}
  - {name: j, kind: Job, count: -1, replicas: 1, runFor: 0s}
phases: [{name: p, duration: 1m}]`),
			want: []string{
				`8: spec.workloads.rate: must be more than 0 and at most 1000 objects per second, got 0`,
				`10: spec.workloads.items[0].name: "Web" is not a valid name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`10: spec.workloads.items[0]: a Deployment needs replicas or replicasPerNode`,
				`11: spec.workloads.items[1].kind: must be Deployment, Job or DaemonSet, got "Pod"`,
				`12: spec.workloads.items[2].replicas: must be between 1 and 110000000, got 0`,
				`12: spec.workloads.items[2].requests.cpu: "lots" is not a quantity (like 10m for CPU, 16Mi for memory)`,
				`12: spec.workloads.items[2].requests.memory: must not be negative, got -1Mi`,
				`12: spec.workloads.items[2].spread: must be zone or node (or unset), got "rack"`,
				`12: spec.workloads.items[2].service: only a Deployment has a Service`,
				`13: spec.workloads.items[3].replicas: a DaemonSet runs one pod on every node: it takes no replicas`,
				`13: spec.workloads.items[3].tolerationSeconds: must be between 0 and 86400, got -1`,
				`13: spec.workloads.items[3].runFor: only a Job's pods end: a DaemonSet's run until deleted`,
				`14: spec.workloads.items[4].name: is required`,
				`14: spec.workloads.items[4]: sets replicas and replicasPerNode: set one`,
				`15: spec.workloads.items[5].name: "j" is already the name of spec.workloads.items[2]`,
				`15: spec.workloads.items[5].count: must be between 1 and 1000, got -1`,
				`15: spec.workloads.items[5].runFor: must be more than 0`,
			},
		},
		{
			name: "no items",
			yaml: doc("nodes: 10\nworkloads: {rate: 1}\nphases: [{name: p, duration: 1m}]"),
			want: []string{`7: spec.workloads.items: lists no workload: remove spec.workloads or add one`},
		},
		{
			name: "creation outlasts the first phase",
			yaml: doc("nodes: 10\nworkloads:\n  rate: 0.1\n  items: [{name: w, kind: Deployment, replicas: 1, count: 3}]\nphases: [{name: p, duration: 1m}]"),
			want: []string{`8: spec.workloads.rate: 7 objects at 0.1 per second take 1m0s, which ends after the first phase (p, 1m0s): the workloads are created during it`},
		},
		{
			name: "a typo in a workload",
			yaml: doc("nodes: 10\nworkloads:\n  items: [{name: w, kind: Deployment, replica: 1}]\nphases: [{name: p, duration: 1m}]"),
			want: []string{`8: spec.workloads.items[0].replica: unknown field (a workload has name, kind, count, replicas, replicasPerNode, requests, spread, image, service, tolerationSeconds, runFor)`,
				`8: spec.workloads.items[0]: a Deployment needs replicas or replicasPerNode`,
			},
		},
		{
			name: "pod faults",
			yaml: doc(`nodes: 10
groups: {g: {count: 1}}
phases:
- name: p
  duration: 1m
  actions:
  - {group: g, do: crashPods, exitCode: 0}
  - {group: g, do: unreadyPods, exitCode: 2}
  - {group: g, do: crashPods, exitCode: many}`),
			want: []string{
				`12: spec.phases[0].actions[0].exitCode: must be between 1 and 255 (a crash is a failing exit; 0 would be a success), got 0`,
				`13: spec.phases[0].actions[1].exitCode: is not a parameter of unreadyPods (unreadyPods takes no parameters)`,
				`14: spec.phases[0].actions[2].exitCode: want an integer up to 2147483647, got "many"`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.yaml))
			assertProblems(t, err, tc.want)
		})
	}
}

func TestWorkloadsMustFitTheFleet(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items string
		nodes int
		pods  int // spec.podsPerNode
		want  []string
	}{
		{
			name:  "fits",
			items: "- {name: w, kind: Deployment, replicasPerNode: 100, requests: {cpu: 80m}}",
			nodes: 10,
		},
		{
			name:  "too many pods",
			items: "- {name: w, kind: Deployment, replicas: 1101}",
			nodes: 10,
			want:  []string{`10: spec.workloads.items[0].replicas: w × 1: 1101 pods, and 10 nodes allow 1100`},
		},
		{
			name:  "too much CPU",
			items: "- {name: w, kind: Deployment, count: 2, replicasPerNode: 1, requests: {cpu: 5}}",
			nodes: 10,
			want:  []string{`10: spec.workloads.items[0].replicasPerNode: w × 20 pods: CPU 100 requested, and 10 nodes have 80 allocatable`},
		},
		{
			name:  "one pod larger than a node",
			items: "- {name: w, kind: Job, replicas: 1, requests: {memory: 64Gi}}",
			nodes: 10,
			want:  []string{`10: spec.workloads.items[0].requests: one pod of w does not fit a node: memory 64Gi requested, and a node has 32777008Ki allocatable`},
		},
		{
			name:  "DaemonSets on every node beside the fleet's pods",
			items: "- {name: d, kind: DaemonSet, count: 11}",
			nodes: 10,
			pods:  100,
			want:  []string{`8: spec.workloads: on every node, the DaemonSets' pods and spec.podsPerNode's: 111 pods, and a node allows 110`},
		},
		{
			name:  "each fits, not all together",
			items: "- {name: a, kind: Deployment, replicasPerNode: 60}\n- {name: b, kind: Deployment, replicasPerNode: 60}",
			nodes: 10,
			want:  []string{`8: spec.workloads: all the workloads' pods and spec.podsPerNode's: 1200 pods, and 10 nodes allow 1100`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("t.yaml", []byte(doc("nodes: 10\npodsPerNode: "+strconv.Itoa(tc.pods)+"\nworkloads:\n  items:\n  "+
				strings.ReplaceAll(tc.items, "\n", "\n  ")+"\nphases: [{name: p, duration: 1m}]")))
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Resolve(Fleet{Nodes: tc.nodes})
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			assertProblems(t, err, tc.want)
		})
	}
}
