package controlplane

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Binaries are the paths of the three programs a control plane runs.
type Binaries struct {
	Etcd, APIServer, ControllerManager string
}

// binSearch is where resolveBinaries looks; FindBinaries fills it from the running process.
type binSearch struct {
	binDir     string                       // Options.BinDir; when set, the only place looked at
	executable string                       // the running program, whose directory comes first
	workDir    string                       // for ./bin and for the walk up to the repo's go.mod
	lookPath   func(string) (string, error) // $PATH, last
}

// FindBinaries finds etcd, kube-apiserver and kube-controller-manager. With binDir set, only there.
// Otherwise in the first directory holding all three of: the running executable's directory, ./bin,
// the bin/ beside each go.mod from the working directory up (the fakelet repo's, where `make
// controlplane` puts them), and then each on $PATH.
func FindBinaries(binDir string) (Binaries, error) {
	exe, _ := os.Executable() // without it, the other places are still worth a look
	wd, _ := os.Getwd()
	return resolveBinaries(binSearch{binDir: binDir, executable: exe, workDir: wd, lookPath: exec.LookPath})
}

func resolveBinaries(s binSearch) (Binaries, error) {
	if s.binDir != "" {
		b, missing := binariesIn(s.binDir)
		if len(missing) > 0 {
			return Binaries{}, fmt.Errorf("find control plane binaries: %s not in --bin-dir %s: run `make controlplane` (it builds them into the repo's bin/)",
				strings.Join(missing, ", "), s.binDir)
		}
		return b, nil
	}
	var looked []string
	for _, dir := range candidateDirs(s) {
		looked = append(looked, dir)
		if b, missing := binariesIn(dir); len(missing) == 0 {
			return b, nil
		}
	}
	var b Binaries
	var notOnPath, nowhere []string
	for _, name := range componentOrder {
		p, err := s.lookPath(name)
		if err == nil {
			setBinary(&b, name, p)
			continue
		}
		notOnPath = append(notOnPath, name)
		if !slices.ContainsFunc(looked, func(dir string) bool { _, missing := binariesIn(dir); return !slices.Contains(missing, name) }) {
			nowhere = append(nowhere, name)
		}
	}
	if len(notOnPath) == 0 {
		return b, nil
	}
	what := strings.Join(nowhere, ", ") + " not found"
	if len(nowhere) == 0 {
		// Each is somewhere, but not all three together.
		what = "no directory holds all three"
	}
	return Binaries{}, fmt.Errorf("find control plane binaries: %s (etcd, kube-apiserver and kube-controller-manager must be together in one of %s, or each on $PATH): run `make controlplane` (it builds them into the repo's bin/), or pass --bin-dir",
		what, strings.Join(looked, ", "))
}

// candidateDirs lists the directories to look in, in order, without repeats.
func candidateDirs(s binSearch) []string {
	var dirs []string
	add := func(d string) {
		if d != "" && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	if s.executable != "" {
		add(filepath.Dir(s.executable))
	}
	if s.workDir != "" {
		add(filepath.Join(s.workDir, "bin"))
		// Tests run in their package's directory: walk up to the module root. Keep walking past a
		// nested module (tools/kube has its own go.mod) to the repo's.
		for d := s.workDir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				add(filepath.Join(d, "bin"))
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return dirs
}

// binariesIn returns the three binaries in dir, and the names of those that are not there.
func binariesIn(dir string) (Binaries, []string) {
	var b Binaries
	var missing []string
	for _, name := range componentOrder {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, name)
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			abs = p
		}
		setBinary(&b, name, abs)
	}
	return b, missing
}

func setBinary(b *Binaries, name, path string) {
	switch name {
	case Etcd:
		b.Etcd = path
	case APIServer:
		b.APIServer = path
	case ControllerManager:
		b.ControllerManager = path
	}
}
