package fidelity

import (
	"math"
	"slices"
	"strings"
)

// Row compares one class of request in one window: requests per node of the reference (hollow
// kubelets) and of fakelet's agents.
type Row struct {
	Window    string
	Class     Class
	Reference float64
	Fakelet   float64
	// Explained is the reason for a known difference, from the list Compare was given; "" if none.
	Explained string
}

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

// Differs says whether fakelet's count is off the reference's by more than tolerance, a fraction of
// the reference's (0.15 for 15%). A class one side never sent differs whatever the tolerance.
func (r Row) Differs(tolerance float64) bool {
	if r.Reference == 0 {
		return r.Fakelet != 0
	}
	return math.Abs(r.Fakelet-r.Reference) > tolerance*r.Reference
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

// Compare lists, for each window in order, every class either kind of node sent, per node, sorted
// by resource then verb; a row some entry of known covers carries its reason.
func Compare(c Counts, windows []string, reference, fakelet []string, known []Known) []Row {
	var rows []Row
	for _, w := range windows {
		ref, fl := c.PerNode(w, reference), c.PerNode(w, fakelet)
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

// Unexplained returns the rows that differ by more than tolerance without a known reason.
func Unexplained(rows []Row, tolerance float64) []Row {
	var out []Row
	for _, r := range rows {
		if r.Differs(tolerance) && r.Explained == "" {
			out = append(out, r)
		}
	}
	return out
}
