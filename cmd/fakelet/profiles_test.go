package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// updateProfilesGolden rewrites this file's golden files. Its name is its own so that it cannot clash
// with another command's test flag in this package.
var updateProfilesGolden = flag.Bool("update-profiles", false, "rewrite cmd/fakelet/testdata/profiles-*.golden")

func runFakelet(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestProfilesCommand(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: fakelet.dev/v1alpha1\nkind: Profile\nmetadata: {name: bad}\nspec:\n  nodes: 10\n  phases: [{name: p, duration: 1m, actions: [{group: victims, do: stop}]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		golden  string
		wantErr string
	}{
		{name: "list", args: []string{"profiles", "list"}, golden: "profiles-list.golden"},
		{name: "show", args: []string{"profiles", "show", "stop-10pct"}, golden: "profiles-show-stop-10pct.golden"},
		{name: "show unknown", args: []string{"profiles", "show", "stop-20pct"},
			wantErr: `load profile "stop-20pct": no built-in profile has that name (built-ins: auth-failure, churn, flap, lease-vs-status, mass-outage, notready, partition, pressure, restart-all, steady, stop-10pct, zone-outage), and no file has that path`},
		{name: "show invalid file", args: []string{"profiles", "show", bad},
			wantErr: "profile " + bad + ":6: spec.phases[0].actions[0].group: unknown group \"victims\": spec.groups defines none"},
		{name: "show needs a name", args: []string{"profiles", "show"}, wantErr: "accepts 1 arg(s), received 0"},
		{name: "list takes no arguments", args: []string{"profiles", "list", "x"}, wantErr: `unknown command "x" for "fakelet profiles list"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runFakelet(t, tc.args...)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.golden, out)
		})
	}
}

// show prints a built-in exactly as it is embedded.
func TestProfilesShowIsVerbatim(t *testing.T) {
	out, err := runFakelet(t, "profiles", "show", "zone-outage")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "profiles", "builtin", "zone-outage.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("show zone-outage printed:\n%s\nwant the file as written:\n%s", out, want)
	}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateProfilesGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update-profiles creates it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update-profiles rewrites it):\n--- got\n%s\n--- want\n%s",
			path, got, want)
	}
}
