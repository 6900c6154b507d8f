package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

// Binaries are the paths of the four programs a control plane runs.
type Binaries struct {
	Etcd, APIServer, ControllerManager, Scheduler string
}

// Module is fakelet's module path: the go.mod that names it marks the repository whose bin/ holds
// the binaries `make controlplane` builds.
const Module = "fakelet.dev/fakelet"

// binSearch is where resolveBinaries looks; FindBinaries fills it from the running process.
type binSearch struct {
	binDir     string // Options.BinDir; when set, the only place looked at
	executable string // the running program, whose directory comes first
	workDir    string // for the walk up to fakelet's repository
}

// FindBinaries finds etcd, kube-apiserver, kube-controller-manager and kube-scheduler. With binDir
// set, only there. Otherwise in the first of two directories that holds all four: the running executable's (bin/ of
// the repository for bin/fakelet), then the bin/ of the fakelet repository that holds the working
// directory, the nearest directory above it whose go.mod declares module fakelet.dev/fakelet. Both
// must be fakelet's own: the directory, and the go.mod and binaries in it, owned by this user or
// root and writable by no one else. Nothing else is looked at, not $PATH, not ./bin, and not the
// bin/ beside any other go.mod: in a shared or downloaded tree, those may hold programs of someone
// else's that would run with this user's keys.
func FindBinaries(binDir string) (Binaries, error) {
	exe, _ := os.Executable() // without it, the repository is still worth a look
	wd, _ := os.Getwd()
	return resolveBinaries(binSearch{binDir: binDir, executable: exe, workDir: wd})
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
	var looked, refused []string
	for _, dir := range candidateDirs(s) {
		b, missing := binariesIn(dir)
		if len(missing) > 0 {
			looked = append(looked, dir+" (no "+strings.Join(missing, ", ")+")")
			continue
		}
		if err := trusted(dir, b.Etcd, b.APIServer, b.ControllerManager, b.Scheduler); err != nil {
			refused = append(refused, err.Error())
			continue
		}
		return b, nil
	}
	msg := "etcd, kube-apiserver, kube-controller-manager and kube-scheduler are not together in the directory of fakelet's executable or in the bin/ of a fakelet repository (go.mod of module " + Module + ") above the working directory"
	if len(looked) > 0 {
		msg += "; looked in " + strings.Join(looked, ", ")
	}
	if len(refused) > 0 {
		msg += "; refused " + strings.Join(refused, ", ")
	}
	return Binaries{}, fmt.Errorf("find control plane binaries: %s: run `make controlplane` (it builds them into the repo's bin/), or pass --bin-dir", msg)
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
	if root := fakeletRepo(s.workDir); root != "" {
		add(filepath.Join(root, "bin"))
	}
	return dirs
}

// fakeletRepo is the nearest directory from dir up whose go.mod declares Module and is trusted,
// or "". A go.mod of another module (tools/kube has its own) is walked past.
func fakeletRepo(dir string) string {
	if dir == "" {
		return ""
	}
	for d := dir; ; d = filepath.Dir(d) {
		goMod := filepath.Join(d, "go.mod")
		if b, err := os.ReadFile(goMod); err == nil && modulePath(b) == Module && trusted(d, goMod) == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

var moduleLine = regexp.MustCompile(`(?m)^\s*module\s+"?([^"\s]+)"?\s*(//.*)?$`)

// modulePath is the module a go.mod declares, or "".
func modulePath(goMod []byte) string {
	m := moduleLine.FindSubmatch(goMod)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// trusted fails unless each path is owned by this user or root and writable by neither group nor
// others (following symbolic links: the files they point to are what runs).
func trusted(paths ...string) error {
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != os.Getuid() {
			return fmt.Errorf("%s (owned by uid %d, not by this user or root)", p, st.Uid)
		}
		if info.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("%s (writable by group or others, mode %04o)", p, info.Mode().Perm())
		}
	}
	return nil
}

// binariesIn returns the four binaries in dir, and the names of those that are not there.
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
	case Scheduler:
		b.Scheduler = path
	}
}
