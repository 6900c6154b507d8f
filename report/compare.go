package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"fakelet.dev/fakelet/measure/load"
)

// Comparison is the same fleet measured in two heartbeat modes (fakelet compare): the steady phase
// of each, after every node was Ready.
type Comparison struct {
	Nodes    int    `json:"nodes"`
	Duration string `json:"duration"`
	// Target is the cluster both modes ran on, one after the other (fakelet compare --same-cluster,
	// --kubeconfig or --context); empty when each ran on a fresh local control plane. Each side's
	// numbers are still increases within its own measured window.
	Target string `json:"target,omitempty"`
	// Footprint is which of a kubelet's requests both modes' agents made.
	Footprint string `json:"footprint,omitempty"`
	// Sides are the modes in the order of the table's columns; the ratio is the second over the first.
	Sides []Side `json:"sides"`
	// Notes say where a measurement was not of steady state.
	Notes []string `json:"notes,omitempty"`
}

// Side is one mode's run.
type Side struct {
	Mode string     `json:"mode"`
	Load load.Phase `json:"load"`
}

// CompareRows are the rows fakelet compare prints: the numbers KEP-589 argues with.
var CompareRows = pickRows(
	"apiserver requests/s", "  PUT leases/s", "  PATCH nodes/status/s",
	"request bytes/s", "response bytes/s", "watch events/s", "watch bytes/s",
	"etcd bytes written (WAL)", "etcd db growth", "apiserver CPU-seconds", "etcd CPU-seconds",
	"p99 latency, all but watch (ms)", "  p99 PUT leases (ms)", "  p99 PATCH nodes/status (ms)",
)

func pickRows(labels ...string) []Row {
	var out []Row
	for _, l := range labels {
		for _, r := range LoadRows {
			if r.Label == l {
				out = append(out, r)
			}
		}
	}
	if len(out) != len(labels) {
		panic("report: CompareRows names a row LoadRows does not have")
	}
	return out
}

// WriteText prints the side-by-side table with a ratio column.
func (c *Comparison) WriteText(w io.Writer) error {
	if c.Target == "" {
		fmt.Fprintf(w, "fakelet compare: %d nodes, %s per mode, each on a fresh local control plane\n", c.Nodes, c.Duration)
	} else {
		fmt.Fprintf(w, "fakelet compare: %d nodes, %s per mode, one mode after the other on %s\n", c.Nodes, c.Duration, c.Target)
	}
	if c.Footprint != "" {
		fmt.Fprintf(w, "footprint: %s\n", c.Footprint)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	width := 0
	for _, r := range CompareRows {
		width = max(width, len(r.Label))
	}
	fmt.Fprintf(tw, "%-*s\t", width, "")
	for _, s := range c.Sides {
		fmt.Fprintf(tw, "%s\t", s.Mode)
	}
	ratio := len(c.Sides) == 2
	if ratio {
		fmt.Fprintf(tw, "%s/%s\t", c.Sides[1].Mode, c.Sides[0].Mode)
	}
	fmt.Fprintln(tw)
	for _, r := range CompareRows {
		fmt.Fprintf(tw, "%-*s\t", width, r.Label)
		var vals []float64
		var oks []bool
		for _, s := range c.Sides {
			v, ok := r.Value(s.Load)
			vals, oks = append(vals, v), append(oks, ok)
			if ok {
				fmt.Fprintf(tw, "%s\t", r.Format(v))
			} else {
				fmt.Fprintf(tw, "-\t")
			}
		}
		if ratio {
			if oks[0] && oks[1] && vals[0] != 0 {
				fmt.Fprintf(tw, "%.2fx\t", vals[1]/vals[0])
			} else {
				fmt.Fprintf(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range c.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	return nil
}
