package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// Each flag has one name across the commands: the report's directory is --out wherever a command
// writes one (run and compare said --report-dir, capacity --out), the control plane's directory
// --controlplane-dir (controlplane said --dir, run --controlplane-dir). The old spellings still
// work, hidden from the help, and set the new flag itself.
func TestDeprecatedFlagSpellingsSetTheNewFlag(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		old, name string
	}{
		{[]string{"run"}, "report-dir", "out"},
		{[]string{"compare"}, "report-dir", "out"},
		{[]string{"report"}, "report-dir", "out"},
		{[]string{"report", "merge"}, "output", "out"},
		{[]string{"controlplane", "up"}, "dir", "controlplane-dir"},
		{[]string{"controlplane", "down"}, "dir", "controlplane-dir"},
		{[]string{"controlplane", "status"}, "dir", "controlplane-dir"},
		{[]string{"controlplane", "prometheus-config"}, "dir", "controlplane-dir"},
	} {
		root := newRootCommand()
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		cmd, _, err := root.Find(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.ParseFlags([]string{"--" + tc.old, "/tmp/x"}); err != nil {
			t.Fatalf("%s --%s: %v", strings.Join(tc.args, " "), tc.old, err)
		}
		f := cmd.Flags()
		if !f.Changed(tc.name) || f.Lookup(tc.name).Value.String() != "/tmp/x" {
			t.Errorf("%s --%s /tmp/x: --%s changed %v, %q", strings.Join(tc.args, " "), tc.old, tc.name, f.Changed(tc.name), f.Lookup(tc.name).Value)
		}
		if old := f.Lookup(tc.old); !old.Hidden || old.Deprecated != "use --"+tc.name {
			t.Errorf("%s --%s: hidden %v, deprecated %q", strings.Join(tc.args, " "), tc.old, old.Hidden, old.Deprecated)
		}
	}
}

// An old spelling is checked as the new flag and said to be deprecated: report's --report-dir
// without --prometheus is refused by the new name.
func TestDeprecatedFlagSpellingIsCheckedAsTheNewFlag(t *testing.T) {
	root := newRootCommand()
	root.SetArgs([]string{"report", "--report-dir", t.TempDir()})
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "--out is for a report from Prometheus") {
		t.Errorf("report --report-dir DIR: %v, want --out refused without --prometheus", err)
	}
	if !strings.Contains(out.String(), "Flag --report-dir has been deprecated, use --out") {
		t.Errorf("report --report-dir DIR printed %q, want the deprecation", out.String())
	}
}
