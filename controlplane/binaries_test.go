package controlplane

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveBinaries(t *testing.T) {
	root := t.TempDir()
	mkdir := func(rel string) string {
		d := filepath.Join(root, rel)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	install := func(dir string, names ...string) string {
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	all := []string{Etcd, APIServer, ControllerManager}

	// A repo with bin/ at its root and a nested module (tools/kube) with a go.mod of its own.
	repo := mkdir("repo")
	os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module x\n"), 0o644)
	install(mkdir("repo/bin"), all...)
	nested := mkdir("repo/tools/kube")
	os.WriteFile(filepath.Join(nested, "go.mod"), []byte("module y\n"), 0o644)
	pkg := mkdir("repo/controlplane")

	exeDir := install(mkdir("exe"), all...)
	partial := install(mkdir("partial"), Etcd)
	empty := mkdir("empty")
	notExecutable := mkdir("noexec")
	os.WriteFile(filepath.Join(notExecutable, Etcd), nil, 0o644)
	install(notExecutable, APIServer, ControllerManager)
	pathDir := install(mkdir("path"), all...)
	apart := mkdir("apart")
	install(mkdir("apart/bin"), APIServer, ControllerManager)

	noPath := func(string) (string, error) { return "", errors.New("not found") }
	onPath := func(name string) (string, error) { return filepath.Join(pathDir, name), nil }

	tests := []struct {
		name     string
		search   binSearch
		wantDir  string
		wantErrs []string // all must appear in the error
	}{
		{
			name:    "explicit bin dir",
			search:  binSearch{binDir: exeDir, executable: filepath.Join(empty, "fakelet"), lookPath: noPath},
			wantDir: exeDir,
		},
		{
			name:     "explicit bin dir missing some",
			search:   binSearch{binDir: partial, workDir: repo, lookPath: onPath},
			wantErrs: []string{"kube-apiserver, kube-controller-manager not in --bin-dir " + partial, "make controlplane"},
		},
		{
			name:     "explicit bin dir with a non-executable file",
			search:   binSearch{binDir: notExecutable, lookPath: onPath},
			wantErrs: []string{"etcd not in --bin-dir", "make controlplane"},
		},
		{
			name:    "beside the executable first",
			search:  binSearch{executable: filepath.Join(exeDir, "fakelet"), workDir: repo, lookPath: onPath},
			wantDir: exeDir,
		},
		{
			name:    "./bin of the working directory",
			search:  binSearch{executable: filepath.Join(empty, "fakelet"), workDir: repo, lookPath: noPath},
			wantDir: filepath.Join(repo, "bin"),
		},
		{
			name:    "walk up from a package directory to the repo",
			search:  binSearch{executable: filepath.Join(empty, "controlplane.test"), workDir: pkg, lookPath: noPath},
			wantDir: filepath.Join(repo, "bin"),
		},
		{
			name:    "walk past a nested module",
			search:  binSearch{workDir: nested, lookPath: noPath},
			wantDir: filepath.Join(repo, "bin"),
		},
		{
			name:    "$PATH last",
			search:  binSearch{executable: filepath.Join(partial, "fakelet"), workDir: empty, lookPath: onPath},
			wantDir: pathDir,
		},
		{
			name:   "nowhere",
			search: binSearch{executable: filepath.Join(partial, "fakelet"), workDir: empty, lookPath: noPath},
			wantErrs: []string{
				"kube-apiserver, kube-controller-manager not found",
				"together in one of " + partial + ", " + filepath.Join(empty, "bin"),
				"$PATH", "make controlplane",
			},
		},
		{
			name:     "all three exist, but apart",
			search:   binSearch{executable: filepath.Join(partial, "fakelet"), workDir: apart, lookPath: noPath},
			wantErrs: []string{"no directory holds all three", "make controlplane"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveBinaries(tt.search)
			if len(tt.wantErrs) > 0 {
				if err == nil {
					t.Fatalf("resolveBinaries = %+v, want an error", got)
				}
				for _, want := range tt.wantErrs {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Binaries{
				Etcd:              filepath.Join(tt.wantDir, Etcd),
				APIServer:         filepath.Join(tt.wantDir, APIServer),
				ControllerManager: filepath.Join(tt.wantDir, ControllerManager),
			}
			if got != want {
				t.Errorf("resolveBinaries = %+v, want %+v", got, want)
			}
		})
	}
}
