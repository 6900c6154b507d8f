package controlplane

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkDir refuses a control plane directory that another user could tamper with or read: one that
// is a symbolic link, not a directory, owned by another user, or open to group or others. It holds
// the CA key, the system:masters kubeconfig and the pids that down signals; on a shared host,
// whoever may write it could swap a certificate or plant a symbolic link where fakelet writes.
func checkDir(dir string) error {
	info, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check control plane directory %s: %w", dir, err)
	}
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("control plane directory %s is a symbolic link: give the directory itself", dir)
	case !info.IsDir():
		return fmt.Errorf("control plane directory %s is not a directory", dir)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("control plane directory %s is owned by uid %d, not by this user (uid %d): use a directory of your own (--controlplane-dir)",
			dir, st.Uid, os.Getuid())
	}
	perm := info.Mode().Perm()
	if perm&0o022 != 0 {
		return fmt.Errorf("control plane directory %s is writable by group or others (mode %04o): chmod 700 %s", dir, perm, dir)
	}
	// Read or search alone is enough to read the components' logs and the audit log of node
	// requests by name, which hold node names, tokens' audiences and what the fleet did.
	if perm&0o077 != 0 {
		return fmt.Errorf("control plane directory %s is open to group or others (mode %04o): chmod 700 %s", dir, perm, dir)
	}
	return nil
}

// openNoFollow opens path with flag, refusing a symbolic link in its last element (ELOOP), so that
// a link planted in a control plane directory never redirects a write to another file; and it
// refuses anything but a regular file.
func openNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link: fakelet does not write through one", path)
	}
	if err != nil {
		return nil, err
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s is not a regular file", path)
		}
		return nil, err
	}
	return f, nil
}

// writeFileNoFollow is os.WriteFile through openNoFollow; an existing file gets perm too.
func writeFileNoFollow(path string, data []byte, perm fs.FileMode) error {
	f, err := openNoFollow(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
