package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestControlPlaneDirOfAnotherIsRefused: Up, Attach, Status and Down refuse a directory that is
// writable, readable or searchable by group or others, a symbolic link, or owned by another user, each saying which and
// before anything is started, signalled or written there.
func TestControlPlaneDirOfAnotherIsRefused(t *testing.T) {
	root := t.TempDir()
	open := filepath.Join(root, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	// Readable, or only searchable: either way the logs, the audit log and the certificates in it can
	// be read by name.
	readable := filepath.Join(root, "readable")
	searchable := filepath.Join(root, "searchable")
	for dir, mode := range map[string]os.FileMode{readable: 0o755, searchable: 0o701} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "link")
	private := filepath.Join(root, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{open: "is writable by group or others (mode 0777): chmod 700", link: "is a symbolic link",
		readable: "is open to group or others (mode 0755): chmod 700", searchable: "is open to group or others (mode 0701): chmod 700"}
	if os.Getuid() == 0 {
		other := filepath.Join(root, "other")
		if err := os.Mkdir(other, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases[other] = "is owned by uid 65534, not by this user (uid 0)"
	} else {
		t.Log("not root: the directory of another user is not tried")
	}
	for dir, want := range cases {
		_, upErr := Up(context.Background(), Options{Dir: dir})
		_, attachErr := Attach(dir)
		_, statusErr := Status(context.Background(), dir)
		downErr := Down(context.Background(), dir)
		for what, err := range map[string]error{"up": upErr, "attach": attachErr, "status": statusErr, "down": downErr} {
			if err == nil || !strings.Contains(err.Error(), dir+" "+want) {
				t.Errorf("%s in %s: %v, want %q", what, filepath.Base(dir), err, want)
			}
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("%s: %d files written", filepath.Base(dir), len(entries))
		}
	}
}

// TestWritesDoNotFollowSymlinks: a symbolic link planted where the control plane writes its lock,
// a key, a kubeconfig or a log is refused, and the file it points to is left as it was.
func TestWritesDoNotFollowSymlinks(t *testing.T) {
	dir := privateTempDir(t)
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	plant := func(name string) string {
		p := filepath.Join(dir, name)
		os.Remove(p)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for what, write := range map[string]func() error{
		"lock": func() error { plant(".lock"); _, err := lockDir(dir); return err },
		"key": func() error {
			return writePair(filepath.Join(dir, "x.crt"), []byte("cert"), plant("x.key"), []byte("key"))
		},
		"kubeconfig": func() error {
			return writeKubeconfig(plant("kubeconfig"), credentials{server: "https://127.0.0.1:1", user: "u"})
		},
		"log": func() error {
			_, err := startDetached([]string{"/bin/true"}, plant("etcd.log"), true)
			return err
		},
	} {
		if err := write(); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
			t.Errorf("%s through a symbolic link: %v, want it refused", what, err)
		}
		if b, _ := os.ReadFile(target); string(b) != "theirs" {
			t.Fatalf("%s wrote through the symbolic link: %q", what, b)
		}
	}
}

// privateTempDir is t.TempDir() as checkDir accepts it: open to no one else (t.TempDir follows the
// umask).
func privateTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}
