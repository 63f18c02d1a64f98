//go:build linux

package wait

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// MaxFileSize bounds the read of a file condition. A larger file is refused
// as too_large rather than read: a wait must not be a way to make procmon
// hash an unbounded amount of data.
const MaxFileSize = 64 << 20

// The reasons a file observation reports. Absent is not a refusal (the file
// may appear later); every other reason means the observation did not
// satisfy the condition. An OS error is reported as its text.
const (
	ReasonAbsent         = "absent"
	ReasonSymlink        = "symlink"
	ReasonNotRegular     = "not_regular"
	ReasonHardlinked     = "hardlinked"
	ReasonUnstable       = "unstable"
	ReasonDigestMismatch = "digest_mismatch"
	ReasonTooLarge       = "too_large"
	ReasonInvalidPath    = "invalid_path"
)

// The reasons the component root gives no evidence. Each makes a wait
// unavailable (process_ended, once the monitor has ended): the file is
// not read, or what was read is not trusted.
const (
	// ReasonComponentUnproven: no descriptor of the root held since the
	// start could be had (its guardian is gone, or did not hand it over).
	ReasonComponentUnproven = "component_unproven"
	// ReasonComponentMoved: the root's path names nothing now.
	ReasonComponentMoved = "component_moved"
	// ReasonComponentReplaced: the root's path names another directory
	// (or leads through a symlink to one).
	ReasonComponentReplaced = "component_replaced"
	// ReasonComponentDeleted: the held root was deleted.
	ReasonComponentDeleted = "component_deleted"
)

// componentProblem checks that rootFD, the component root held since the
// start, is still the directory its path names, as the service's chdir
// found it (following symlinks): it returns a ReasonComponent... or "".
// The path is only compared, never used to reach a file.
func componentProblem(rootFD int, path string) string {
	var held, named unix.Stat_t
	if err := fstat(rootFD, &held); err != nil {
		return ReasonComponentUnproven
	}
	if held.Nlink == 0 {
		return ReasonComponentDeleted
	}
	err := stat(path, &named)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return ReasonComponentMoved
	case err != nil:
		return ReasonComponentUnproven
	case !sameFile(&held, &named):
		return ReasonComponentReplaced
	}
	return ""
}

// resolveBeneath is how every path of a file condition is resolved: never
// above the root, never through a symlink or a /proc magic link. Crossing
// mount points is allowed, since a component root may well contain one.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// OpenRoot opens the component root for openat2 resolution. The descriptor
// is O_PATH: it grants no read access by itself and only anchors lookups.
// The caller closes it with unix.Close.
func OpenRoot(root string) (fd int, err error) {
	for {
		fd, err = unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return -1, &os.PathError{Op: "open component root", Path: root, Err: err}
	}
	return fd, nil
}

// FileObservation is the evidence of one evaluation of a file condition.
// SHA256 and Size describe what was read, even when the read did not
// satisfy the condition (unstable, digest_mismatch), so the evidence shows
// what was actually there.
type FileObservation struct {
	Path      string `json:"path"`
	Satisfied bool   `json:"-"`
	SHA256    string `json:"sha256,omitempty"`
	Size      int64  `json:"size,omitempty"`
	Refusal   string `json:"refusal,omitempty"`
}

// CheckFile evaluates a file condition once at run time, resolving its path
// beneath rootFD (from OpenRoot). Only a regular, singly linked file reached
// without any symlink and read whole while it did not change satisfies it;
// with a sha256, its digest must match too.
func CheckFile(rootFD int, c Condition) FileObservation {
	return checkFile(rootFD, c, nil)
}

// checkFile is CheckFile with a hook run between the read and the second
// fstat, so tests can change the file at exactly that point.
func checkFile(rootFD int, c Condition, afterRead func()) FileObservation {
	obs := FileObservation{Path: c.Path}
	if c.Kind != KindFile {
		obs.Refusal = ReasonInvalidPath
		return obs
	}
	if reason, _ := lexicalPathProblem(c.Path); reason != "" {
		// Validate refused this already; re-checking keeps CheckFile safe
		// on its own, since openat2 would accept some of these spellings.
		obs.Refusal = ReasonInvalidPath
		return obs
	}

	// Look first through an O_PATH descriptor, which opens nothing: a
	// device node or FIFO is refused here before any open that could
	// have side effects on it.
	probe, reason := lookup(rootFD, c.Path)
	if reason != "" {
		obs.Refusal = reason
		return obs
	}
	if reason := regularReason(&probe); reason != "" {
		obs.Refusal = reason
		return obs
	}

	fd, err := openat2(rootFD, c.Path, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK,
		Resolve: resolveBeneath,
	})
	if err != nil {
		obs.Refusal = openReason(err)
		return obs
	}
	defer unix.Close(fd)

	var before unix.Stat_t
	if err := fstat(fd, &before); err != nil {
		obs.Refusal = err.Error()
		return obs
	}
	if reason := regularReason(&before); reason != "" {
		obs.Refusal = reason
		return obs
	}
	if !sameFile(&probe, &before) {
		// Replaced between the look and the open.
		obs.Refusal = ReasonUnstable
		return obs
	}
	if before.Size > MaxFileSize {
		obs.Size = before.Size
		obs.Refusal = ReasonTooLarge
		return obs
	}

	data, err := readAll(fd, before.Size)
	if err != nil {
		obs.Refusal = err.Error()
		return obs
	}
	obs.Size = int64(len(data))
	if len(data) > MaxFileSize {
		// It grew past the bound while being read; a digest of a prefix
		// would describe nothing.
		obs.Refusal = ReasonTooLarge
		return obs
	}
	sum := sha256.Sum256(data)
	obs.SHA256 = hex.EncodeToString(sum[:])

	if afterRead != nil {
		afterRead()
	}

	var after unix.Stat_t
	if err := fstat(fd, &after); err != nil {
		obs.Refusal = err.Error()
		return obs
	}
	if after.Nlink > 1 {
		obs.Refusal = ReasonHardlinked
		return obs
	}
	if !sameContent(&before, &after) || int64(len(data)) != after.Size {
		obs.Refusal = ReasonUnstable
		return obs
	}
	// The descriptor keeps its inode however the path changes; look the
	// path up again so a file renamed over it during the read (the usual
	// way to publish a file) is seen, and what was read is known to be
	// what the path names now.
	again, reason := lookup(rootFD, c.Path)
	if reason != "" || !sameFile(&again, &after) {
		obs.Refusal = ReasonUnstable
		return obs
	}

	if c.SHA256 != "" && c.SHA256 != obs.SHA256 {
		obs.Refusal = ReasonDigestMismatch
		return obs
	}
	obs.Satisfied = true
	return obs
}

// lookup resolves p beneath rootFD without opening the file and returns
// its status, or the reason it could not.
func lookup(rootFD int, p string) (unix.Stat_t, string) {
	var st unix.Stat_t
	fd, err := openat2(rootFD, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: resolveBeneath,
	})
	if err != nil {
		return st, openReason(err)
	}
	defer unix.Close(fd)
	if err := fstat(fd, &st); err != nil {
		return st, err.Error()
	}
	return st, ""
}

// regularReason refuses anything but a regular file with one link. With
// O_PATH|O_NOFOLLOW a trailing symlink is opened as itself instead of
// failing, so it is named here.
func regularReason(st *unix.Stat_t) string {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return ReasonSymlink
	default:
		return ReasonNotRegular
	}
	if st.Nlink > 1 {
		// Another name for the same inode may lie outside the root or in
		// a private path; its content is not the component's to show.
		return ReasonHardlinked
	}
	return ""
}

// openReason maps an openat2 error to a reason.
func openReason(err error) string {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		// ENOTDIR: a parent component is not a directory (yet). Like a
		// missing file, that can change, so it is not a refusal.
		return ReasonAbsent
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		// RESOLVE_NO_SYMLINKS fails with ELOOP on any symlink on the way;
		// RESOLVE_BENEATH fails with EXDEV on one that would leave the root.
		return ReasonSymlink
	case errors.Is(err, unix.ENXIO):
		// A socket cannot be opened for reading.
		return ReasonNotRegular
	case errors.Is(err, unix.EAGAIN):
		// The kernel could not rule out a racing rename during resolution.
		return ReasonUnstable
	}
	return err.Error()
}

func sameFile(a, b *unix.Stat_t) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// sameContent reports whether nothing that a write, truncate, chmod or
// replace would change differs between two fstats of one descriptor.
func sameContent(a, b *unix.Stat_t) bool {
	return sameFile(a, b) &&
		a.Size == b.Size &&
		a.Mtim == b.Mtim &&
		a.Ctim == b.Ctim
}

func openat2(dirfd int, p string, how *unix.OpenHow) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, p, how)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func stat(path string, st *unix.Stat_t) error {
	for {
		err := unix.Stat(path, st)
		if err != unix.EINTR {
			return err
		}
	}
}

func fstat(fd int, st *unix.Stat_t) error {
	for {
		err := unix.Fstat(fd, st)
		if err != unix.EINTR {
			return err
		}
	}
}

// readAll reads fd to its end, but never more than MaxFileSize+1 bytes: one
// byte beyond the bound is enough to know the file grew past it.
func readAll(fd int, sizeHint int64) ([]byte, error) {
	limit := int64(MaxFileSize + 1)
	capacity := min(max(sizeHint+1, 512), limit)
	buf := make([]byte, 0, capacity)
	for int64(len(buf)) < limit {
		if len(buf) == cap(buf) {
			grown := min(int64(cap(buf))*2, limit)
			buf = append(make([]byte, 0, grown), buf...)
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	return buf, nil
}
