package controlplane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadKiB(t *testing.T) {
	file := filepath.Join(t.TempDir(), "status")
	if err := os.WriteFile(file, []byte("Name:\tx\nVmRSS:\t    1234 kB\nMemTotal: 8 kB\nBad:\tx kB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string]int64{"VmRSS": 1234 << 10, "MemTotal": 8 << 10} {
		if got, err := ReadKiB(file, field); err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", field, got, err, want)
		}
	}
	for field, want := range map[string]string{"Bad": "parse Bad", "VmSwap": "no VmSwap"} {
		if _, err := ReadKiB(file, field); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", field, err, want)
		}
	}
	if rss, err := ReadKiB("/proc/self/status", "VmRSS"); err != nil || rss <= 0 {
		t.Errorf("this process's RSS: %d, %v", rss, err)
	}
}
