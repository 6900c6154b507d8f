package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestReadmeListsEveryRunFlag: the README's table of `fakelet run` flags names every flag the command
// has, and no flag it does not; a flag added or renamed without its row fails here.
func TestReadmeListsEveryRunFlag(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	start := strings.Index(section, "## `fakelet run` flags")
	if start < 0 {
		t.Fatal("the README has no `fakelet run` flags section")
	}
	section = section[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	documented := map[string]bool{}
	flagName := regexp.MustCompile("`--([a-z0-9-]+)`")
	for line := range strings.Lines(section) {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, m := range flagName.FindAllStringSubmatch(first, -1) {
			documented[m[1]] = true
		}
	}
	run, _, err := newRootCommand().Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	var missing, stale []string
	has := map[string]bool{}
	visit := func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		has[f.Name] = true
		if !documented[f.Name] {
			missing = append(missing, "--"+f.Name)
		}
	}
	run.LocalFlags().VisitAll(visit)
	run.InheritedFlags().VisitAll(visit) // the root's, such as --client-log
	for name := range documented {
		if !has[name] {
			stale = append(stale, "--"+name)
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	if len(missing) > 0 {
		t.Errorf("flags of fakelet run without a row in the README's table: %s", strings.Join(missing, ", "))
	}
	if len(stale) > 0 {
		t.Errorf("rows of the README's table for flags fakelet run does not have: %s", strings.Join(stale, ", "))
	}
}
