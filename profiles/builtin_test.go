package profiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every built-in profile must parse, resolve at its own fleet size, name itself after its file, and say
// what it answers: `profiles list` prints the first line.
func TestBuiltinsLoad(t *testing.T) {
	names := BuiltinNames()
	want := []string{"auth-failure", "churn", "flap", "lease-vs-status", "mass-outage", "notready", "partition",
		"pressure", "restart-all", "steady", "stop-10pct", "zone-outage"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("BuiltinNames() = %v, want %v", names, want)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			p, err := Load(name)
			if err != nil {
				t.Fatalf("Load(%q): %v", name, err)
			}
			if p.Metadata.Name != name {
				t.Errorf("metadata.name = %q, want the file's name %q", p.Metadata.Name, name)
			}
			if s := p.Summary(); !strings.HasSuffix(s, "?") {
				t.Errorf("summary %q: the first line of a built-in's description is the question it answers", s)
			}
			if lines := strings.Count(strings.TrimSpace(p.Metadata.Description), "\n"); lines < 2 {
				t.Errorf("description has %d lines after the question: say what a user should expect to see", lines)
			}
			if _, err := p.Resolve(p.Fleet()); err != nil {
				t.Errorf("Resolve at spec.nodes: %v", err)
			}
		})
	}
}

func TestDefaultProfileIsBuiltin(t *testing.T) {
	if _, err := Builtin(DefaultProfile); err != nil {
		t.Fatal(err)
	}
}

// The node lifecycle controller reacts 50 s (--node-monitor-grace-period) after a node's last
// renewal, and a renewal may come 10 s before the stop: a profile's outage shorter than 60 s would
// show nothing.
func TestOutagesOutlastTheGracePeriod(t *testing.T) {
	const reaction = 60 * time.Second
	for _, name := range []string{"stop-10pct", "zone-outage", "mass-outage", "partition", "auth-failure"} {
		p, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, ph := range p.Spec.Phases {
			for _, a := range ph.Actions {
				switch a.Do {
				case VerbStop, VerbPartition, VerbDenyAuth:
					if ph.Duration.Duration <= reaction {
						t.Errorf("%s: phase %s lasts %v, not longer than %v", name, ph.Name, ph.Duration.Duration, reaction)
					}
				}
			}
		}
	}
}

// mass-outage promises PartialDisruption in every zone: more than 55% of each zone's nodes stopped.
// Its group is a random 60%, so check the draw at the profile's own fleet size and seed.
func TestMassOutageDisruptsEveryZone(t *testing.T) {
	p, err := Builtin("mass-outage")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Resolve(p.Fleet())
	if err != nil {
		t.Fatal(err)
	}
	stopped := make([]int, p.Spec.Zones)
	for _, i := range plan.Groups["victims"] {
		stopped[ZoneNumber(i, p.Spec.Zones)-1]++
	}
	for z, n := range stopped {
		size := p.Spec.Nodes / p.Spec.Zones
		if frac := float64(n) / float64(size); frac <= 0.55 {
			t.Errorf("%s: %d of %d nodes stopped (%.2f), not above the 0.55 unhealthy threshold", ZoneName(z+1), n, size, frac)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	data, err := builtinFS.ReadFile(builtinPath("steady"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	noExt := filepath.Join(dir, "noext")
	if err := os.WriteFile(noExt, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, tc := range []struct {
		arg, source, wantErr string
	}{
		{arg: "steady", source: "builtin/steady.yaml"},
		{arg: file, source: file},
		{arg: "mine.yaml", source: "mine.yaml"},
		{arg: "noext", source: "noext"},
		{arg: "nope", wantErr: `load profile "nope": no built-in profile has that name (built-ins: auth-failure, `},
		{arg: "nope.yaml", wantErr: "load profile nope.yaml: open nope.yaml: no such file or directory"},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			p, err := Load(tc.arg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load(%q) error = %v, want it to contain %q", tc.arg, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load(%q): %v", tc.arg, err)
			}
			if p.Source != tc.source {
				t.Errorf("Source = %q, want %q", p.Source, tc.source)
			}
			if string(p.Raw) != string(data) {
				t.Errorf("Raw is not the document as written")
			}
		})
	}
}
