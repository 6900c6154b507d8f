package layout

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "fakelet.dev/fakelet/"

// tiers orders the module's packages as docs/architecture.md does: a package may import packages of
// its own tier or of a tier above it, never one below. A package missing here fails the test, so a new
// package must be placed.
var tiers = [][]string{
	{"internal/headtail", "internal/pause", "internal/scheduler", "internal/fleettest", "internal/h2script", "internal/layout", "heartbeat", "nodeshape", "profiles"},
	{"agent"},
	{"wire"},
	{"fleet"},
	{"deploy", "controlplane", "internal/lockstep", "internal/metrics", "scenario", "internal/bench", "internal/standin", "fidelity"},
	{"measure/observe", "measure/reaction", "measure/scrape", "measure/load", "measure/falsealarm", "measure/storm", "measure/workload"},
	{"report"},
	{"measure", "measure/promrecord", "capacity", "compare"},
	{"cmd/fakelet", "e2e"},
}

func TestImportsPointDownThePipeline(t *testing.T) {
	tier := map[string]int{}
	for i, pkgs := range tiers {
		for _, p := range pkgs {
			tier[p] = i
		}
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		from, placed := tier[pkg]
		if !placed {
			t.Errorf("package %s has no tier: place it in tiers and in docs/architecture.md", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours || dep == pkg {
				continue
			}
			if to, placed := tier[dep]; placed && to > from {
				t.Errorf("%s (tier %d) imports %s (tier %d): imports must point up the pipeline", pkg, from, dep, to)
			}
		}
	}
}
