package profiles

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds Parse arbitrary documents, seeded with the built-in profiles: it must never panic,
// and an error must always say something. A document that parses must also resolve (or say why not)
// and yield a schedule.
func FuzzParse(f *testing.F) {
	for _, name := range BuiltinNames() {
		data, err := builtinFS.ReadFile(builtinPath(name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	invalid, err := os.ReadFile(filepath.Join("testdata", "invalid.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(invalid)
	f.Add([]byte(issueExample))
	f.Add([]byte(""))
	f.Add([]byte("~"))
	f.Add([]byte("a: &x [*x]"))
	f.Add([]byte("spec: {groups: {g: {indexes: '0-3,9'}}, phases: [{name: p, duration: 1m, actions: [{group: g, do: churn, remove: 2, add: 3, rate: 1}]}]}"))

	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		if err != nil {
			checkError(t, err)
			return
		}
		fleet := p.Fleet()
		fleet.Nodes = min(fleet.Nodes, 50) // keep each run fast; the logic does not depend on size
		fleet.NodeIndex = func(string) (int, bool) { return 0, true }
		plan, err := p.Resolve(fleet)
		if err != nil {
			checkError(t, err)
			return
		}
		n := 0
		for ev := range plan.Schedule().All() {
			if ev.Node < 0 || ev.Node >= plan.TotalNodes() || ev.At < 0 {
				t.Fatalf("event %v outside the fleet or before the run", ev)
			}
			if n++; n == 10_000 {
				break
			}
		}
	})
}

func checkError(t *testing.T, err error) {
	t.Helper()
	if err.Error() == "" {
		t.Fatal("empty error")
	}
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("error %q is not an *Error", err)
	}
	if len(perr.Problems) == 0 {
		t.Fatal("*Error without problems")
	}
	for _, p := range perr.Problems {
		if p.Message == "" {
			t.Fatalf("problem without a message in %q", err)
		}
	}
}
