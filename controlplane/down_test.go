package controlplane

import (
	"context"
	"errors"
	"os"
	"testing"
)

// Down leaves no kubeconfig behind: each holds a client key (the admin's is in system:masters).
func TestStopAllRemovesEveryKubeconfig(t *testing.T) {
	dir := t.TempDir()
	files := []string{KubeconfigPath(dir), controllerManagerKubeconfig(dir), schedulerKubeconfig(dir)}
	for _, f := range files {
		if err := os.WriteFile(f, []byte("key"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := stopAll(context.Background(), dir, &State{Version: stateVersion}); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after stopAll, %s: %v; want it removed", f, err)
		}
	}
}
