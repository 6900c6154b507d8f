package profiles

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// builtinFS holds the built-in profiles, one NAME.yaml each, so that the binary carries them.
//
//go:embed builtin/*.yaml
var builtinFS embed.FS

// DefaultProfile is the profile `make run` plays (RUN_ARGS in the Makefile), marked so by `fakelet
// profiles list`. `fakelet run` without --profile plays none: its nodes heartbeat until it ends.
const DefaultProfile = "stop-10pct"

// maxProfileBytes bounds the size of a profile file: a profile is a page of YAML, and a file much
// larger is not one.
const maxProfileBytes = 1 << 20

// BuiltinNames returns the names of the built-in profiles, sorted.
func BuiltinNames() []string {
	entries, err := fs.ReadDir(builtinFS, "builtin")
	if err != nil {
		panic(fmt.Sprintf("read embedded profiles: %v", err)) // the embed directive guarantees the directory
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// Builtin parses the built-in profile of that name.
func Builtin(name string) (*Profile, error) {
	data, err := builtinFS.ReadFile(builtinPath(name))
	if err != nil {
		return nil, fmt.Errorf("load profile %q: no built-in profile has that name (built-ins: %s)", name, strings.Join(BuiltinNames(), ", "))
	}
	return Parse(builtinPath(name), data)
}

func builtinPath(name string) string {
	return path.Join("builtin", name+".yaml")
}

// Load loads a profile by built-in name or by file path, as `--profile` takes it. An argument with a
// path separator or a .yaml or .yml suffix is a path; any other is a built-in name first, and a file
// path if no built-in has that name.
func Load(nameOrPath string) (*Profile, error) {
	if looksLikePath(nameOrPath) {
		return LoadFile(nameOrPath)
	}
	if _, err := fs.Stat(builtinFS, builtinPath(nameOrPath)); err == nil {
		return Builtin(nameOrPath)
	}
	if _, err := os.Stat(nameOrPath); err == nil {
		return LoadFile(nameOrPath)
	}
	return nil, fmt.Errorf("load profile %q: no built-in profile has that name (built-ins: %s), and no file has that path",
		nameOrPath, strings.Join(BuiltinNames(), ", "))
}

func looksLikePath(s string) bool {
	return strings.ContainsRune(s, '/') || strings.ContainsRune(s, os.PathSeparator) ||
		strings.HasSuffix(s, ".yaml") || strings.HasSuffix(s, ".yml")
}

// LoadFile reads and parses a profile file.
func LoadFile(file string) (*Profile, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("load profile %s: %w", file, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxProfileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("load profile %s: %w", file, err)
	}
	if len(data) > maxProfileBytes {
		return nil, fmt.Errorf("load profile %s: %w", file, errTooLarge)
	}
	return Parse(file, data)
}

var errTooLarge = errors.New("larger than 1 MiB: not a profile")

// Summary is the first line of a profile's description: the question it answers.
func (p *Profile) Summary() string {
	first, _, _ := strings.Cut(strings.TrimSpace(p.Metadata.Description), "\n")
	return strings.TrimSpace(first)
}
