package profiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readDocs(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "profiles.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// docs/profiles.md is the format's reference: it must name every field, every built-in profile and
// every verb (TestVerbsDocumented) the code knows.
func TestDocsInSync(t *testing.T) {
	docs := readDocs(t)
	for name, typ := range formatTypes {
		for _, field := range yamlFields(typ) {
			if !strings.Contains(docs, "`"+field+"`") {
				t.Errorf("docs/profiles.md does not mention field `%s` of %s", field, name)
			}
		}
	}
	for _, name := range BuiltinNames() {
		if !strings.Contains(docs, "### "+name+"\n") {
			t.Errorf("docs/profiles.md has no section for built-in profile %s", name)
		}
	}
}

func TestVerbsDocumented(t *testing.T) {
	// Every verb must be described in docs/profiles.md, under its own heading.
	docs := readDocs(t)
	for _, v := range Verbs() {
		if !strings.Contains(docs, "### "+string(v)) {
			t.Errorf("docs/profiles.md has no section for %q", v)
		}
	}
}
