package controlplane

import (
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
	all := []string{Etcd, APIServer, ControllerManager, Scheduler}

	// fakelet's repo with bin/ at its root and a nested module (tools/kube) with a go.mod of its own.
	repo := mkdir("repo")
	os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module "+Module+"\n\ngo 1.25\n"), 0o644)
	install(mkdir("repo/bin"), all...)
	nested := mkdir("repo/tools/kube")
	os.WriteFile(filepath.Join(nested, "go.mod"), []byte("module fakelet.dev/fakelet/tools/kube\n"), 0o644)
	pkg := mkdir("repo/controlplane")

	// Another module's tree with the four binaries in its bin/ and in ./bin of a directory in it.
	other := mkdir("other")
	os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n"), 0o644)
	install(mkdir("other/bin"), all...)
	install(mkdir("other/work/bin"), all...)

	// fakelet's repo, but its bin/ writable by others.
	open := mkdir("open")
	os.WriteFile(filepath.Join(open, "go.mod"), []byte("module "+Module+"\n"), 0o644)
	openBin := install(mkdir("open/bin"), all...)
	os.Chmod(openBin, 0o777)

	exeDir := install(mkdir("exe"), all...)
	partial := install(mkdir("partial"), Etcd)
	empty := mkdir("empty")
	notExecutable := mkdir("noexec")
	os.WriteFile(filepath.Join(notExecutable, Etcd), nil, 0o644)
	install(notExecutable, APIServer, ControllerManager, Scheduler)
	// A bin/ of `make controlplane` from before it built kube-scheduler.
	noScheduler := install(mkdir("noscheduler"), Etcd, APIServer, ControllerManager)

	tests := []struct {
		name     string
		search   binSearch
		wantDir  string
		wantErrs []string // all must appear in the error
	}{
		{
			name:    "explicit bin dir",
			search:  binSearch{binDir: exeDir, executable: filepath.Join(empty, "fakelet")},
			wantDir: exeDir,
		},
		{
			name:     "explicit bin dir missing some",
			search:   binSearch{binDir: partial, workDir: repo},
			wantErrs: []string{"kube-apiserver, kube-controller-manager, kube-scheduler not in --bin-dir " + partial, "make controlplane"},
		},
		{
			name:     "explicit bin dir from before kube-scheduler",
			search:   binSearch{binDir: noScheduler},
			wantErrs: []string{"kube-scheduler not in --bin-dir " + noScheduler, "make controlplane"},
		},
		{
			name:     "a directory from before kube-scheduler is passed over",
			search:   binSearch{executable: filepath.Join(noScheduler, "fakelet"), workDir: empty},
			wantErrs: []string{"etcd, kube-apiserver, kube-controller-manager and kube-scheduler are not together", "looked in " + noScheduler + " (no kube-scheduler)"},
		},
		{
			name:     "explicit bin dir with a non-executable file",
			search:   binSearch{binDir: notExecutable},
			wantErrs: []string{"etcd not in --bin-dir", "make controlplane"},
		},
		{
			name:    "beside the executable first",
			search:  binSearch{executable: filepath.Join(exeDir, "fakelet"), workDir: repo},
			wantDir: exeDir,
		},
		{
			name:    "the repo's bin/ from its root",
			search:  binSearch{executable: filepath.Join(empty, "fakelet"), workDir: repo},
			wantDir: filepath.Join(repo, "bin"),
		},
		{
			name:    "walk up from a package directory to the repo",
			search:  binSearch{executable: filepath.Join(empty, "controlplane.test"), workDir: pkg},
			wantDir: filepath.Join(repo, "bin"),
		},
		{
			name:    "walk past a nested module",
			search:  binSearch{workDir: nested},
			wantDir: filepath.Join(repo, "bin"),
		},
		{
			name:     "not the bin/ of another module's go.mod, nor ./bin",
			search:   binSearch{executable: filepath.Join(partial, "fakelet"), workDir: filepath.Join(other, "work")},
			wantErrs: []string{"looked in " + partial + " (no kube-apiserver, kube-controller-manager, kube-scheduler)", "make controlplane", "--bin-dir"},
		},
		{
			name:     "not a bin/ writable by others",
			search:   binSearch{workDir: open},
			wantErrs: []string{"refused " + openBin + " (writable by group or others, mode 0777)"},
		},
		{
			name:     "nowhere",
			search:   binSearch{executable: filepath.Join(partial, "fakelet"), workDir: empty},
			wantErrs: []string{"not together in the directory of fakelet's executable or in the bin/ of a fakelet repository", "make controlplane"},
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
				Scheduler:         filepath.Join(tt.wantDir, Scheduler),
			}
			if got != want {
				t.Errorf("resolveBinaries = %+v, want %+v", got, want)
			}
		})
	}
}
