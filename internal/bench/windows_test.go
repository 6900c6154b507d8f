package bench

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/agent"
)

func TestParseWindows(t *testing.T) {
	w, err := ParseWindows("steady=3m, restart=90s", DefaultWindows)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultWindows
	want.Steady, want.Restart = 3*time.Minute, 90*time.Second
	if w != want {
		t.Errorf("got %+v, want %+v", w, want)
	}
	if back, err := ParseWindows(w.String(), Windows{}); err != nil || back != w {
		t.Errorf("String %q reads back as %+v, %v", w.String(), back, err)
	}
	for in, msg := range map[string]string{
		"steady":              "want NAME=DURATION",
		"steady=10":           "positive duration",
		"steady=-1m":          "positive duration",
		"warmup=1m":           `unknown window "warmup"`,
		"pods=1m,pods=2m":     "given twice",
		"startup=0s,pods=1m":  "positive duration",
		"restart=1m,steady=x": "steady=x",
	} {
		if _, err := ParseWindows(in, DefaultWindows); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseWindows(%q) = %v, want an error with %q", in, err, msg)
		}
	}
}

func TestReferenceOptionsValidate(t *testing.T) {
	ok := ReferenceOptions{Nodes: 2, PodsPerNode: 3, Windows: DefaultWindows}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []ReferenceOptions{
		{Nodes: 0, Windows: DefaultWindows},
		{Nodes: 101, Windows: DefaultWindows},
		{Nodes: 1, PodsPerNode: 111, Windows: DefaultWindows},
		{Nodes: 1, Windows: Windows{Startup: time.Minute}},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// Every known difference names windows the reference has and says why; the e2e test and
// docs/fidelity.md read the list.
func TestFootprintDifferencesAreWellFormed(t *testing.T) {
	for _, d := range agent.FootprintDifferences {
		if d.Reason == "" {
			t.Errorf("%+v: no reason", d)
		}
		for _, w := range d.Windows {
			if !slices.Contains(WindowNames, w) {
				t.Errorf("%+v: window %q is none of %v", d, w, WindowNames)
			}
		}
	}
	doc, err := os.ReadFile("../../docs/fidelity.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range agent.FootprintDifferences {
		if !strings.Contains(string(doc), d.Reason) {
			t.Errorf("docs/fidelity.md does not give the reason %q", d.Reason)
		}
	}
	if n := len(KnownDifferences()); n != len(agent.FootprintDifferences) {
		t.Errorf("KnownDifferences has %d entries, agent.FootprintDifferences %d", n, len(agent.FootprintDifferences))
	}
}
