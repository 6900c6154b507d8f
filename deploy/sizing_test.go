package deploy

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"fakelet.dev/fakelet/agent"
)

// The sizing rule of docs/distributed.md: a shard's requests are at least headroom times what
// docs/performance.md's measurements give for the nodes it is sized for, and at most maxOversize
// times, so that the requests follow the measurements when `make bench` changes them either way.
const (
	headroom    = 2.0
	maxOversize = 4.0
	// sizedForAnnotation on the StatefulSet says how many nodes per shard its requests are sized for.
	sizedForAnnotation = "fakelet.dev/nodes-per-shard"
)

// measurement is one row of docs/performance.md's fleet size table.
type measurement struct {
	nodes  int
	cpu    float64 // cores
	rssMiB float64
}

// sizingSection is docs/performance.md's section whose first table the sizing reads: the fleet
// alone, against the stand-in, so that the figures are the generator's and not a co-located
// apiserver's.
const sizingSection = "## Shard sizes, the fleet alone"

// benchTable reads the first table `fakelet bench` wrote into docs/performance.md's sizingSection,
// its rows of footprint only, and the incremental RSS per node under it.
func benchTable(t *testing.T, footprint string) (rows []measurement, kibPerNode float64) {
	t.Helper()
	f, err := os.Open("../docs/performance.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cols map[string]int
	perNode := regexp.MustCompile(`^Incremental fleet RSS per node in the ` + footprint + ` footprint, .*: ([0-9.]+) KiB\.`)
	// Other sections have tables of the same shape (a run of both footprints, a quiet run): the
	// sizing reads this one only.
	in := false
	for s := bufio.NewScanner(f); s.Scan(); {
		line := strings.TrimSpace(s.Text())
		if strings.HasPrefix(line, "## ") {
			in = line == sizingSection
		}
		if !in {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case strings.HasPrefix(line, "| nodes |") && len(rows) == 0:
			cols = map[string]int{}
			for i, c := range cells {
				cols[c] = i
			}
			if _, ok := cols["footprint"]; !ok {
				cols = nil // not a table `fakelet bench --target stand-in` writes
			}
		case cols != nil && strings.HasPrefix(line, "|") && !strings.HasPrefix(line, "|-"):
			if cells[cols["footprint"]] != footprint {
				continue
			}
			n, err := strconv.Atoi(cells[cols["nodes"]])
			if err != nil {
				t.Fatalf("docs/performance.md: %q: nodes: %v", line, err)
			}
			var m measurement
			m.nodes = n
			if _, err := fmt.Sscanf(cells[cols["fleet CPU"]], "%f%%", &m.cpu); err != nil {
				t.Fatalf("docs/performance.md: %q: fleet CPU: %v", line, err)
			}
			m.cpu /= 100
			if _, err := fmt.Sscanf(cells[cols["fleet RSS"]], "%f MiB", &m.rssMiB); err != nil {
				t.Fatalf("docs/performance.md: %q: fleet RSS: %v", line, err)
			}
			rows = append(rows, m)
		case cols != nil && len(rows) > 0 && !strings.HasPrefix(line, "|"):
			cols = nil // the table ended
		}
		if m := perNode.FindStringSubmatch(line); m != nil && kibPerNode == 0 {
			if kibPerNode, err = strconv.ParseFloat(m[1], 64); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(rows) == 0 || kibPerNode <= 0 {
		t.Fatalf("docs/performance.md's %q has %d measured fleet sizes of the %s footprint and %.1f KiB per node: want the table `fakelet bench --target stand-in` writes", sizingSection, len(rows), footprint, kibPerNode)
	}
	return rows, kibPerNode
}

// shardEstimate is what a shard of n nodes needs by the measurements: the largest measured fleet's
// RSS plus the incremental RSS per node for the rest, and its CPU plus the CPU per node between the
// two largest measured fleets (or in proportion, with one).
func shardEstimate(rows []measurement, kibPerNode float64, n int) (cores, mib float64) {
	hi := rows[len(rows)-1]
	perNodeCPU := hi.cpu / float64(hi.nodes)
	if len(rows) >= 2 {
		lo := rows[len(rows)-2]
		perNodeCPU = (hi.cpu - lo.cpu) / float64(hi.nodes-lo.nodes)
	}
	extra := float64(n - hi.nodes)
	return hi.cpu + extra*perNodeCPU, hi.rssMiB + extra*kibPerNode/1024
}

// TestStatefulSetSizedFromTheMeasurements: the StatefulSet's CPU and memory requests cover the
// nodes per shard it is sized for with the stated headroom over docs/performance.md's numbers, and
// no more than maxOversize times them; docs/distributed.md quotes the numbers the sizing used.
func TestStatefulSetSizedFromTheMeasurements(t *testing.T) {
	sts := readStatefulSet(t)
	n, err := strconv.Atoi(sts.Annotations[sizedForAnnotation])
	if err != nil || n <= 0 {
		t.Fatalf("the StatefulSet's %s annotation %q: want the nodes per shard its requests are sized for", sizedForAnnotation, sts.Annotations[sizedForAnnotation])
	}
	footprint := string(agent.DefaultFootprint)
	for _, a := range sts.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--footprint="); ok {
			footprint = v
		}
	}
	rows, kibPerNode := benchTable(t, footprint)
	cores, mib := shardEstimate(rows, kibPerNode, n)
	t.Logf("%d nodes per shard, %s footprint: %.2f cores and %.0f MiB by docs/performance.md (%d measured sizes, %.1f KiB per node)", n, footprint, cores, mib, len(rows), kibPerNode)
	res := sts.Spec.Template.Spec.Containers[0].Resources
	for _, c := range []struct {
		name     corev1.ResourceName
		estimate float64
		unit     string
		value    func(resource.Quantity) float64
	}{
		{corev1.ResourceCPU, cores, "cores", func(q resource.Quantity) float64 { return q.AsApproximateFloat64() }},
		{corev1.ResourceMemory, mib, "MiB", func(q resource.Quantity) float64 { return q.AsApproximateFloat64() / (1 << 20) }},
	} {
		q, ok := res.Requests[c.name]
		if !ok {
			t.Errorf("no %s request", c.name)
			continue
		}
		got := c.value(q)
		if got < headroom*c.estimate || got > maxOversize*c.estimate {
			t.Errorf("%s request %s (%.2f %s) for %d nodes per shard: want %.0f to %.0f times the measured %.2f %s, %.2f to %.2f %s (docs/distributed.md, Sizing)",
				c.name, q.String(), got, c.unit, n, headroom, maxOversize, c.estimate, c.unit, headroom*c.estimate, maxOversize*c.estimate, c.unit)
		}
		if lim, ok := res.Limits[c.name]; ok && c.value(lim) < got {
			t.Errorf("%s limit %s below the request %s", c.name, lim.String(), q.String())
		}
	}

	doc, err := os.ReadFile("../docs/distributed.md")
	if err != nil {
		t.Fatal(err)
	}
	hi := rows[len(rows)-1]
	for _, quote := range []string{
		fmt.Sprintf("%.1f KiB", kibPerNode),
		fmt.Sprintf("%.1f%%", 100*hi.cpu),
		fmt.Sprintf("%.0f MiB", hi.rssMiB),
		fmt.Sprintf("%s: \"%d\"", sizedForAnnotation, n),
	} {
		if !strings.Contains(string(doc), quote) {
			t.Errorf("docs/distributed.md does not quote %q: its sizing must cite docs/performance.md's numbers and the StatefulSet's", quote)
		}
	}
}
