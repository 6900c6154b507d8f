package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Killing a hollow kubelet removes the root directory that process logged making under /tmp, and
// no other: the one an earlier process of the same node logged is left to its own kill.
func TestHollowNodeRemovesItsRootDir(t *testing.T) {
	var roots []string
	for range 2 {
		d, err := os.MkdirTemp("/tmp", "hollow-kubelet.")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		roots = append(roots, d)
	}
	h := &hollowNode{name: "hollow-00000", dir: t.TempDir()}
	line := func(root string) string {
		return fmt.Sprintf("I1201 09:42:32.839043    5197 hollow_kubelet.go:153] Using %s as root dir for hollow-kubelet\n", root)
	}
	first := "I1201 09:42:32.8 version\n" + line(roots[0])
	if err := os.WriteFile(h.logPath(), []byte(first+"I1201 more\n"+line(roots[1])), 0o600); err != nil {
		t.Fatal(err)
	}
	h.logFrom = int64(len(first))
	if err := h.removeRootDir(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(roots[1]); !os.IsNotExist(err) {
		t.Errorf("%s: %v, want it removed", roots[1], err)
	}
	if _, err := os.Stat(roots[0]); err != nil {
		t.Errorf("%s, an earlier process's: %v, want it kept", roots[0], err)
	}
	// A log that names no root directory (kubemark failed before making one) removes nothing.
	h.logFrom = int64(len(first + "I1201 more\n" + line(roots[1])))
	if err := h.removeRootDir(); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Dir(roots[0])); err != nil {
		t.Error(err)
	}
}
