package fidelity

import (
	"fmt"
	"io"
	"math"
	"strconv"
)

// WriteTable writes rows as a Markdown table: requests per node (or per pod) of the reference and of
// fakelet, the ratio, and whether the row is within b, a known difference (numbered, with its reason below the
// table) or an unexplained one.
func WriteTable(w io.Writer, rows []Row, b Bound) {
	fmt.Fprintln(w, "| window | request | per | hollow kubelet | fakelet | fakelet ÷ hollow | |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---|")
	var reasons []string
	number := map[string]int{}
	for _, r := range rows {
		verdict := "ok"
		switch {
		case r.Explained != "":
			n, ok := number[r.Explained]
			if !ok {
				reasons = append(reasons, r.Explained)
				n = len(reasons)
				number[r.Explained] = n
			}
			verdict = fmt.Sprintf("known (%d)", n)
		case r.Differs(b):
			verdict = "**differs**"
		}
		per := "node"
		if r.PerPod() {
			per = "pod"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Window, r.Class, per, number2(r.Reference), number2(r.Fakelet), ratio(r.Ratio()), verdict)
	}
	if len(reasons) > 0 {
		fmt.Fprintln(w)
	}
	for i, r := range reasons {
		fmt.Fprintf(w, "%d. %s\n", i+1, r)
	}
}

// number2 prints a count per node with at most two decimals and no trailing zeros.
func number2(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

func ratio(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.IsInf(v, 1):
		return "∞"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
