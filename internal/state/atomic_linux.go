package state

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"procmon/internal/ids"
)

// tempPrefix marks files that a writer has not yet renamed into place; a
// reader ignores them, whoever left them.
const tempPrefix = ".tmp-"

// writeFileAtomic replaces dir/name, dir inside the state directory root,
// with data so that a reader sees either the old file or the new one,
// never a mix. The directory is reached through checked components and
// the temp file is made new (O_EXCL, no link followed), so nothing is
// written outside the state directory whatever was planted in it.
//
// The data is always synced before the rename, so that a crash of the
// machine leaves the old file or the new one, each whole, never an empty
// or torn one (which would be state_corrupt, and reconcile could not act
// on it). durable true also syncs the directory, so that the new file
// survives a crash; with durable false a crash may bring the old one back,
// for records that a reboot makes stale anyway.
func writeFileAtomic(root, dir, name string, data []byte, durable bool) (err error) {
	dirfd, err := openDir(root, dir)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	tmp := ids.NewID(tempPrefix + name + "-")
	f, err := openFileAt(dirfd, dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600, 0)
	if err != nil {
		return fmt.Errorf("create temp file for %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	if err = unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		return fmt.Errorf("rename %s into place in %s: %w", name, dir, err)
	}
	if durable {
		if err = unix.Fsync(dirfd); err != nil {
			return fmt.Errorf("fsync directory %s: %w", dir, err)
		}
	}
	return nil
}

// syncTrusted fsyncs dir, a directory inside the state directory root.
func syncTrusted(root, dir string) error {
	fd, err := openDir(root, dir)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// syncDir fsyncs the directory at dir, one procmon has just made or
// written through. It opens only a directory, never through a link at its
// end, and never waits on what it opens.
func syncDir(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|openFlags, 0)
	if err != nil {
		return fmt.Errorf("open %s to fsync: %w", dir, err)
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// isTemp reports whether a directory entry is a writer's temp file.
func isTemp(name string) bool { return strings.HasPrefix(name, tempPrefix) }

// removeTrusted removes dir/name, dir inside the state directory root,
// unless it is missing.
func removeTrusted(root, dir, name string) error {
	dirfd, err := openDir(root, dir)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if err := unix.Unlinkat(dirfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}
