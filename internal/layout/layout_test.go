package layout

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "fakelet.dev/fakelet/"

// allowed is, for each of the module's packages, the module's packages it may import, as
// docs/architecture.md draws them; tests is what its tests may import besides. A package missing
// here fails the test, and so does an import of one not listed for it: a new arrow is a decision,
// made here and on the map.
var allowed = map[string]struct{ imports, tests []string }{
	// Leaves: vocabulary and plumbing that import nothing of fakelet's.
	"access":              {},
	"fleetname":           {},
	"heartbeat":           {imports: []string{"internal/enum"}},
	"nodeshape":           {},
	"internal/conditions": {},
	"internal/enum":       {},
	"internal/fleettest":  {},
	"internal/h2script":   {},
	"internal/headtail":   {},
	"internal/heapsize":   {},
	"internal/layout":     {},
	"internal/pause":      {},
	"internal/standin":    {imports: []string{"internal/protofield"}, tests: []string{"agent"}},
	"internal/protofield": {},
	"internal/leancodec":  {imports: []string{"internal/protofield"}},
	"internal/nodedecode": {tests: []string{"agent"}},
	"internal/scheduler":  {},
	"wire":                {tests: []string{"internal/h2script"}},
	"fidelity":            {},
	"profiles":            {imports: []string{"heartbeat", "nodeshape"}},

	// One fake kubelet, its transport, and many.
	"agent":     {imports: []string{"fleetname", "heartbeat", "internal/conditions", "internal/enum", "internal/nodedecode", "internal/scheduler", "nodeshape"}, tests: []string{"internal/heapsize"}},
	"transport": {imports: []string{"agent", "internal/pause", "internal/protofield", "wire"}, tests: []string{"fleetname", "internal/h2script"}},
	"fleet": {
		imports: []string{"internal/conditions", "access", "agent", "fleetname", "heartbeat", "internal/enum", "internal/leancodec", "internal/pause", "internal/scheduler", "transport"},
		tests:   []string{"internal/fleettest", "internal/heapsize", "internal/standin"},
	},
	"scenario": {
		imports: []string{"access", "agent", "fleet", "fleetname", "heartbeat", "internal/headtail", "internal/scheduler", "profiles"},
		tests:   []string{"internal/fleettest"},
	},
	"internal/lockstep": {imports: []string{"access", "fleetname", "profiles"}, tests: []string{"internal/fleettest"}},
	"internal/metrics":  {imports: []string{"agent", "fleet"}},

	// What fakelet deploys and runs against. deploy's tests hold its RBAC to what the fleet's
	// preflight checks, so they, and only they, read the fleet.
	"deploy": {
		imports: []string{"fleetname"},
		tests:   []string{"access", "agent", "fleet", "internal/fleettest", "internal/lockstep", "internal/metrics"},
	},
	"controlplane": {imports: []string{"deploy"}},

	// The measurement.
	"measure/observe":    {imports: []string{"internal/conditions", "internal/headtail", "internal/leancodec", "internal/protofield"}, tests: []string{"internal/heapsize", "internal/standin"}},
	"measure/reaction":   {imports: []string{"measure/observe"}, tests: []string{"internal/heapsize"}},
	"measure/scrape":     {imports: []string{"fleet"}},
	"measure/source":     {imports: []string{"controlplane", "measure/scrape"}},
	"measure/load":       {imports: []string{"measure/scrape"}},
	"measure/storm":      {imports: []string{"agent"}},
	"measure/workload":   {imports: []string{"internal/conditions", "internal/headtail", "measure/reaction"}, tests: []string{"internal/heapsize"}},
	"measure/falsealarm": {imports: []string{"agent", "measure/observe", "measure/reaction"}, tests: []string{"heartbeat", "internal/fleettest", "internal/heapsize", "internal/scheduler"}},
	"measure/record":     {imports: []string{"measure/falsealarm", "measure/load", "measure/observe", "measure/reaction", "measure/scrape", "measure/storm", "measure/workload"}},
	"report":             {imports: []string{"measure/record", "measure/falsealarm", "measure/load", "measure/observe", "measure/reaction", "measure/scrape", "measure/storm", "measure/workload"}},
	"measure": {imports: []string{"measure/record", "agent", "fleet", "fleetname", "internal/headtail", "measure/falsealarm", "measure/load",
		"measure/observe", "measure/reaction", "measure/scrape", "measure/storm", "measure/workload", "profiles", "report", "scenario"}},
	"measure/promrecord": {imports: []string{"measure/record", "deploy", "measure/load", "measure/observe", "measure/reaction", "measure/scrape", "report"}},

	// The commands.
	"capacity": {imports: []string{"fleetname", "internal/lockstep", "internal/pause", "measure/load", "report"}, tests: []string{"internal/fleettest"}},
	"internal/run": {
		imports: []string{"agent", "capacity", "controlplane", "fleet", "fleetname", "heartbeat", "internal/lockstep", "internal/metrics", "internal/pause", "measure",
			"measure/falsealarm", "measure/load", "measure/record", "measure/source", "measure/workload", "profiles", "report", "scenario"},
		tests: []string{"internal/fleettest"},
	},
	"compare": {
		imports: []string{"measure/record", "agent", "controlplane", "fleet", "fleetname", "heartbeat", "internal/pause", "internal/run", "measure", "measure/scrape", "measure/source", "report"},
		tests:   []string{"internal/fleettest", "measure/load"},
	},
	"internal/bench": {imports: []string{"internal/standin", "agent", "controlplane", "fidelity", "fleet", "fleetname", "internal/conditions", "internal/pause", "internal/run"}},
	"cmd/fakelet": {
		imports: []string{"internal/standin", "measure/record", "access", "agent", "capacity", "compare", "controlplane", "deploy", "fidelity", "fleet", "fleetname", "heartbeat",
			"internal/bench", "internal/lockstep", "internal/metrics", "internal/run", "measure/falsealarm",
			"measure/promrecord", "measure/scrape", "nodeshape", "profiles", "report", "scenario"},
		tests: []string{"internal/fleettest", "measure/observe", "measure/reaction"},
	},
	"e2e": {tests: []string{"measure/record", "agent", "controlplane", "deploy", "fidelity", "fleet", "fleetname", "internal/bench", "internal/fleettest", "internal/lockstep",
		"internal/metrics", "measure", "measure/load", "measure/reaction", "measure/source", "measure/storm", "measure/workload",
		"nodeshape", "profiles", "report", "scenario"}},
}

// forbidden are the arrows that made the vocabulary packages reach up into the fleet and the
// measurement into the local control plane (issue 27), so that no entry of allowed brings one back;
// with deps, through any package between too (go list's Deps). capacity still reaches fleet through
// measure/load and measure/scrape, whose FleetSource reads the fleet's Tally.
var forbidden = []struct {
	from, to string
	deps     bool
	why      string
}{
	{"deploy", "fleet", true, "deploy names the fleet's objects with fleetname"},
	{"controlplane", "fleet", true, "the local control plane knows nothing of the fleet"},
	{"capacity", "fleet", false, "capacity's steps count nodes with fleetname"},
	{"internal/lockstep", "fleet", true, "lockstep checks its permissions with access"},
	{"measure", "controlplane", true, "the metrics endpoints of a target are measure/source's"},
	{"measure/scrape", "controlplane", true, "the metrics endpoints of a target are measure/source's"},
	{"agent", "fleet", true, "one agent knows nothing of the many"},
	{"agent", "wire", true, "an agent sends through the clients it is given"},
	{"agent", "transport", true, "an agent sends through the clients it is given"},
	{"transport", "fleet", true, "the transport carries agents' requests and knows nothing of the fleet"},
	{"fleet", "wire", false, "the fleet reaches the wire through its agents' transport"},
}

func TestImportsAreTheAllowedOnes(t *testing.T) {
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		pkg := strings.TrimPrefix(f[0], module)
		seen[pkg] = true
		a, placed := allowed[pkg]
		if !placed {
			t.Errorf("package %s is not in allowed: list what it may import there, and place it in docs/architecture.md", pkg)
			continue
		}
		check := func(list string, may []string, what string) {
			for _, imp := range strings.Fields(list) {
				dep, ok := strings.CutPrefix(imp, module)
				if ok && dep != pkg && !slices.Contains(may, dep) {
					t.Errorf("%s%s imports %s, which is not allowed for it", pkg, what, dep)
				}
			}
		}
		check(f[1], a.imports, "")
		check(f[2], append(append([]string(nil), a.imports...), a.tests...), "'s tests")
	}
	for pkg := range allowed {
		if !seen[pkg] {
			t.Errorf("allowed lists %s, which is no package of the module", pkg)
		}
	}
}

func TestForbiddenArrowsStayOut(t *testing.T) {
	for _, f := range forbidden {
		list := `{{join .Imports " "}}`
		if f.deps {
			list = `{{join .Deps " "}}`
		}
		out, err := exec.Command("go", "list", "-f", list, module+f.from).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", f.from, err)
		}
		if slices.Contains(strings.Fields(string(out)), module+f.to) {
			t.Errorf("%s depends on %s: %s", f.from, f.to, f.why)
		}
	}
}
