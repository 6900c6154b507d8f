package fidelity

import (
	"math"
	"slices"
	"strings"
)

// Row compares one class of request in one window: requests per node of the reference (hollow
// kubelets) and of fakelet's agents, or per pod where the row is PerPod.
type Row struct {
	Window    string
	Class     Class
	Reference float64
	Fakelet   float64
	// ReferencePods and FakeletPods are the pods per node each kind was given in the window, for a
	// row counted per pod (the window's Pods, a class a kubelet sends for each pod); 0 otherwise.
	ReferencePods, FakeletPods float64
	// Explained is the reason for a known difference, from the list Compare was given; "" if none.
	Explained string
}

// PerPod says whether the row counts requests per pod rather than per node.
func (r Row) PerPod() bool { return r.ReferencePods > 0 && r.FakeletPods > 0 }

// Ratio is fakelet's count over the reference's: +Inf when the reference sent none, NaN when neither did.
func (r Row) Ratio() float64 {
	if r.Reference == 0 {
		if r.Fakelet == 0 {
			return math.NaN()
		}
		return math.Inf(1)
	}
	return r.Fakelet / r.Reference
}

// Bound is how far fakelet's count may be from the reference's before a class differs.
type Bound struct {
	// Tolerance is a fraction of the reference's count: 0.15 for issue 15's 15%.
	Tolerance float64
	// Slack is a difference in requests per node that is never a difference, however small the
	// counts: a periodic request (a Lease renewal every 10 s) falls on either side of a window's
	// edge, so two kubelets that behave alike differ by up to one per node in a short window.
	Slack float64
}

// DefaultBound is 15%, or one request per node.
var DefaultBound = Bound{Tolerance: 0.15, Slack: 1}

// Differs says whether fakelet's count is off the reference's by more than b allows. A class one
// side never sent differs whatever the bound.
func (r Row) Differs(b Bound) bool {
	if r.Reference == 0 || r.Fakelet == 0 {
		return r.Reference != r.Fakelet
	}
	slack := b.Slack
	if r.PerPod() {
		slack /= r.ReferencePods // one request per node is this much per pod
	}
	return math.Abs(r.Fakelet-r.Reference) > max(b.Tolerance*r.Reference, slack)
}

// Known is a difference fakelet keeps on purpose: the classes it covers, the windows (none: all),
// and why.
type Known struct {
	Verb, Resource, Subresource string // "" matches any
	Windows                     []string
	Reason                      string
}

func (k Known) covers(w string, c Class) bool {
	return (k.Verb == "" || k.Verb == c.Verb) && (k.Resource == "" || k.Resource == c.Resource) &&
		(k.Subresource == "" || k.Subresource == c.Subresource) && (len(k.Windows) == 0 || slices.Contains(k.Windows, w))
}

// Compare lists, for each window in order, every class either kind of node sent, per node (per pod,
// in a window with Pods, for a class a kubelet sends for each pod, when both kinds got pods), sorted
// by resource then verb; a row that differs by more than b's tolerance and that some entry of known
// covers carries its reason, even within b's slack (a kubelet's 2 status patches at start against an
// agent's 1 are within one request, and still a difference with a reason). A covered row within the
// tolerance carries none: the agent sends what the kubelet sends there, and the table says so.
func Compare(c Counts, windows []Window, reference, fakelet []string, known []Known, b Bound) []Row {
	var rows []Row
	for _, win := range windows {
		w := win.Name
		ref, fl := c.PerNode(w, reference), c.PerNode(w, fakelet)
		refPods, flPods := win.PodsPerNode(reference), win.PodsPerNode(fakelet)
		classes := map[Class]bool{}
		for cl := range ref {
			classes[cl] = true
		}
		for cl := range fl {
			classes[cl] = true
		}
		var sorted []Class
		for cl := range classes {
			sorted = append(sorted, cl)
		}
		slices.SortFunc(sorted, func(a, b Class) int {
			return strings.Compare(a.Resource+"/"+a.Subresource+" "+a.Verb, b.Resource+"/"+b.Subresource+" "+b.Verb)
		})
		for _, cl := range sorted {
			row := Row{Window: w, Class: cl, Reference: ref[cl], Fakelet: fl[cl]}
			if cl.PerPod() && refPods > 0 && flPods > 0 {
				row.Reference, row.Fakelet = row.Reference/refPods, row.Fakelet/flPods
				row.ReferencePods, row.FakeletPods = refPods, flPods
			}
			if !row.Differs(Bound{Tolerance: b.Tolerance}) {
				rows = append(rows, row)
				continue
			}
			for _, k := range known {
				if k.covers(w, cl) {
					row.Explained = k.Reason
					break
				}
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// Unexplained returns the rows that differ by more than b allows without a known reason.
func Unexplained(rows []Row, b Bound) []Row {
	var out []Row
	for _, r := range rows {
		if r.Differs(b) && r.Explained == "" {
			out = append(out, r)
		}
	}
	return out
}

// Unneeded returns the entries of known that explain none of rows: in this run the agent sent what
// the kubelet sent wherever they apply, or neither sent the class. An entry unneeded in a run with
// long windows may be one to remove; a short run may just not show what it is for.
func Unneeded(rows []Row, known []Known) []Known {
	used := map[string]bool{}
	for _, r := range rows {
		used[r.Explained] = true
	}
	var out []Known
	for _, k := range known {
		if !used[k.Reason] {
			out = append(out, k)
		}
	}
	return out
}
