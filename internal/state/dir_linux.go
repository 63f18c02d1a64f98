package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
)

// Dir is an opened, checked state directory.
type Dir struct {
	Path string
}

// Open creates the state directory if needed (mode 0700) and refuses one
// that another user owns or that group or others may write; so too its
// runs/ and monitors/ directories.
func Open(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, protocol.Errorf(protocol.CodeStateUnsafe, "create state directory %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeStateUnsafe, "inspect state directory %s: %w", path, err)
	}
	if err := CheckOwnership(path, fi, os.Geteuid()); err != nil {
		return nil, err
	}
	d := &Dir{Path: path}
	for _, sub := range []string{runsDir, monitorsDir} {
		if err := d.mkdirPrivate(sub); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Look opens the state directory for a command that only reads it or
// acts on what is in it: one that does not exist is not created, and
// reads as empty (no monitor, no run), and so do its runs/ and monitors/
// when they are not there. What is there is checked as Open checks it: a
// runs/ or monitors/ that is a link, or that others may write, is
// state_unsafe, never listed.
func Look(path string) (*Dir, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Dir{Path: path}, nil
	}
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeStateUnsafe, "inspect state directory %s: %w", path, err)
	}
	if err := CheckOwnership(path, fi, os.Geteuid()); err != nil {
		return nil, err
	}
	for _, sub := range []string{runsDir, monitorsDir} {
		fd, err := openDir(path, filepath.Join(path, sub))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		unix.Close(fd)
	}
	return &Dir{Path: path}, nil
}

// CheckOwnership refuses a state directory (or a file in it) that is not a
// plain directory or file owned by uid, or that group or others may write.
// It is separate from Open so the rule is tested whoever runs the tests.
func CheckOwnership(path string, fi fs.FileInfo, uid int) error {
	unsafe := func(why, fix string) error {
		return protocol.Errorf(protocol.CodeStateUnsafe, "state directory %s is unsafe: %s; %s", path, why, fix).With("path", path)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return unsafe("it is a symbolic link", "point PROCMON_STATE_DIR at the real directory")
	}
	if !fi.IsDir() {
		return unsafe("it is not a directory", "remove it or choose another PROCMON_STATE_DIR")
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && int(st.Uid) != uid {
		return unsafe(fmt.Sprintf("it is owned by uid %d, not by you (uid %d)", st.Uid, uid), "use a directory of your own")
	}
	if mode := fi.Mode(); mode.Perm()&0o022 != 0 {
		why := fmt.Sprintf("mode %04o lets group or others write it", unixMode(mode))
		if mode&fs.ModeSticky != 0 {
			// A directory shared on purpose, like /tmp: making it private
			// would break everyone else who uses it.
			return unsafe(why+" (it is shared, like /tmp)", "point PROCMON_STATE_DIR at a directory of your own, or leave it unset")
		}
		return unsafe(why, fmt.Sprintf("run: chmod 700 %s", path))
	}
	return nil
}

// unixMode is a FileMode's permission bits as chmod writes them, with
// the setuid, setgid and sticky bits.
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}

const (
	runsDir     = "runs"
	monitorsDir = "monitors"
)

func (d *Dir) mkdirPrivate(rel string) error {
	return mkdirTrusted(d.Path, d.Path, rel)
}

// Contains reports whether an absolute path lies inside the state directory.
func (d *Dir) Contains(path string) bool {
	rel, err := filepath.Rel(d.Path, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
