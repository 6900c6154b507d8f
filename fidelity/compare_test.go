package fidelity

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

func TestCountWindows(t *testing.T) {
	t0 := at("2026-12-01T09:30:00Z")
	lease := Class{"update", "leases", ""}
	req := func(node string, s float64) Request {
		return Request{Node: node, Class: lease, At: t0.Add(time.Duration(s * float64(time.Second)))}
	}
	reqs := []Request{
		// a's first request at 0 s, b's at 5 s: each node's startup window is its own first 10 s.
		req("a", 0), req("a", 9.9), req("a", 10), req("b", 5), req("b", 14.9), req("b", 15),
		req("a", 20), req("b", 29.999), req("a", 30),
		{Class: lease, At: t0.Add(21 * time.Second)}, // no node: not counted
	}
	c := Count(reqs, []Window{
		{Name: "startup", FromFirst: 10 * time.Second},
		{Name: "steady", From: t0.Add(20 * time.Second), To: t0.Add(30 * time.Second)},
	})
	for _, tc := range []struct {
		window, node string
		want         int
	}{
		{"startup", "a", 2}, {"startup", "b", 2}, {"steady", "a", 1}, {"steady", "b", 1},
	} {
		if got := c[tc.window][tc.node][lease]; got != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.window, tc.node, got, tc.want)
		}
	}
	// A node that sent nothing of a class counts as 0 in the mean.
	if got := c.PerNode("steady", []string{"a", "b", "c", "d"})[lease]; got != 0.5 {
		t.Errorf("per node over 4 nodes = %v, want 0.5", got)
	}
}

func TestCompareAndTable(t *testing.T) {
	get, put, csi := Class{"get", "nodes", ""}, Class{"update", "leases", ""}, Class{"create", "csinodes", ""}
	patch := Class{"patch", "nodes", "status"}
	c := Counts{"startup": {
		"h0": {get: 6, put: 4, csi: 1, patch: 2}, "h1": {get: 6, put: 4, csi: 1, patch: 2},
		"f0": {get: 2, put: 4, patch: 1}, "f1": {get: 2, put: 5, patch: 1},
	}}
	known := []Known{{Resource: "csinodes", Reason: "no CSI plugin manager"}, {Verb: "get", Resource: "nodes", Windows: []string{"restart"}, Reason: "only at restart"},
		{Resource: "leases", Reason: "leases differ"}, {Resource: "nodes", Subresource: "status", Reason: "one patch less"}}
	rows := Compare(c, []Window{{Name: "startup"}}, []string{"h0", "h1"}, []string{"f0", "f1"}, known, DefaultBound)
	if len(rows) != 4 {
		t.Fatalf("rows %+v", rows)
	}
	// Within one request per node, but beyond 15%: not a failure, and the known reason still shows.
	if rows[3].Class != patch || rows[3].Differs(DefaultBound) || rows[3].Explained != "one patch less" {
		t.Errorf("row 3 %+v: 1 patch against 2 is within the slack and keeps its reason", rows[3])
	}
	// Sorted by resource: csinodes, leases, nodes.
	if rows[0].Class != csi || rows[0].Explained != "no CSI plugin manager" || rows[0].Fakelet != 0 {
		t.Errorf("row 0 %+v", rows[0])
	}
	if rows[1].Class != put || rows[1].Reference != 4 || rows[1].Fakelet != 4.5 || rows[1].Differs(DefaultBound) || rows[1].Explained != "" {
		t.Errorf("row 1 %+v: 4.5 against 4 is within 15%%, whatever the known differences say", rows[1])
	}
	if rows[2].Class != get || rows[2].Explained != "" || !rows[2].Differs(DefaultBound) {
		t.Errorf("row 2 %+v: the known difference is for the restart window only", rows[2])
	}
	bad := Unexplained(rows, DefaultBound)
	if len(bad) != 1 || bad[0].Class != get {
		t.Errorf("unexplained %+v, want get nodes alone", bad)
	}
	// The leases' entry explains nothing in this run; the restart window's get nodes, no row of it.
	if unneeded := Unneeded(rows, known); len(unneeded) != 2 || unneeded[0].Reason != "only at restart" || unneeded[1].Reason != "leases differ" {
		t.Errorf("unneeded %+v, want the restart's get nodes and the leases'", unneeded)
	}
	if r := (Row{Reference: 0, Fakelet: 0}); !math.IsNaN(r.Ratio()) || r.Differs(Bound{}) {
		t.Errorf("neither sent: ratio %v, differs %v", r.Ratio(), r.Differs(Bound{}))
	}
	for _, tc := range []struct {
		ref, fl float64
		differs bool
	}{
		{2, 2.5, false}, // within one request per node: a renewal on the other side of an edge
		{2, 3.5, true},
		{20, 22.5, false}, // within 15%
		{20, 23.5, true},
		{1, 0, true}, // one side never sent it: no slack
		{0, 0.5, true},
	} {
		if got := (Row{Reference: tc.ref, Fakelet: tc.fl}).Differs(DefaultBound); got != tc.differs {
			t.Errorf("%v against %v: differs %v, want %v", tc.fl, tc.ref, got, tc.differs)
		}
	}

	var b bytes.Buffer
	WriteTable(&b, rows, DefaultBound)
	out := b.String()
	for _, want := range []string{
		"| startup | create csinodes | node | 1 | 0 | 0.00 | known (1) |",
		"| startup | update leases | node | 4 | 4.5 | 1.12 | ok |",
		"| startup | get nodes | node | 6 | 2 | 0.33 | **differs** |",
		"1. no CSI plugin manager",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestComparePerPod(t *testing.T) {
	get, patch, token := Class{"get", "pods", ""}, Class{"patch", "pods", "status"}, Class{"create", "serviceaccounts", "token"}
	watch, lease := Class{"watch", "pods", ""}, Class{"update", "leases", ""}
	// h0 got 2 pods and h1 4; f0 and f1 3 each: 3 pods a node on both sides, and each pod cost
	// both kinds 4 GETs, 3 patches (fakelet 3.5) and a token.
	c := Counts{"pods": {
		"h0": {get: 8, patch: 6, token: 2, watch: 1, lease: 12}, "h1": {get: 16, patch: 12, token: 4, lease: 12},
		"f0": {get: 12, patch: 10, token: 3, lease: 12}, "f1": {get: 12, patch: 11, token: 3, watch: 1, lease: 12},
	}}
	win := Window{Name: "pods", Pods: map[string]int{"h0": 2, "h1": 4, "f0": 3, "f1": 3}}
	rows := Compare(c, []Window{win}, []string{"h0", "h1"}, []string{"f0", "f1"}, nil, DefaultBound)
	byClass := map[Class]Row{}
	for _, r := range rows {
		byClass[r.Class] = r
	}
	for _, tc := range []struct {
		class   Class
		perPod  bool
		ref, fl float64
	}{
		{get, true, 4, 4}, {patch, true, 3, 3.5}, {token, true, 1, 1},
		{watch, false, 0.5, 0.5}, {lease, false, 12, 12}, // the node's, whatever its pods
	} {
		r := byClass[tc.class]
		if r.PerPod() != tc.perPod || r.Reference != tc.ref || r.Fakelet != tc.fl {
			t.Errorf("%s: %+v, want per pod %v, %v against %v", tc.class, r, tc.perPod, tc.fl, tc.ref)
		}
	}
	// 3.5 patches a pod against 3 is beyond 15% and beyond one request per node, 1/3 a pod.
	if r := byClass[patch]; !r.Differs(DefaultBound) {
		t.Errorf("%+v: beyond 15%% and one request per node (%.2f a pod)", r, 1/r.ReferencePods)
	}
	// With 2 pods a node, one request per node is half a request a pod.
	if r := (Row{Reference: 3, Fakelet: 3.5, ReferencePods: 2, FakeletPods: 2}); r.Differs(DefaultBound) {
		t.Errorf("%+v: within one request per node, 0.5 a pod", r)
	}
	// A kind given no pods leaves the row per node: there is no pod to divide by.
	rows = Compare(c, []Window{{Name: "pods", Pods: map[string]int{"h0": 2, "h1": 4}}}, []string{"h0", "h1"}, []string{"f0", "f1"}, nil, DefaultBound)
	for _, r := range rows {
		if r.PerPod() {
			t.Errorf("%+v: per pod with no fakelet pods", r)
		}
	}
	var b bytes.Buffer
	WriteTable(&b, []Row{byClass[get], byClass[lease]}, DefaultBound)
	for _, want := range []string{"| pods | get pods | pod | 4 | 4 | 1.00 | ok |", "| pods | update leases | node | 12 | 12 | 1.00 | ok |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
