package layout

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every page under docs/ links back to the README and to the code map, so that a reader who lands
// on one from a search finds the way in.
func TestEveryDocLinksToReadmeAndArchitecture(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md found: %v", err)
	}
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text, name := string(b), filepath.Base(page)
		if !strings.Contains(text, "](../README.md)") {
			t.Errorf("docs/%s has no link to the README, (../README.md)", name)
		}
		if name != "architecture.md" && !strings.Contains(text, "](architecture.md)") {
			t.Errorf("docs/%s has no link to the code map, (architecture.md)", name)
		}
	}
}
