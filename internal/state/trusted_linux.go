package state

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
)

// Nothing in the state directory is trusted because of where it is: a
// process of the same user (a monitored service, say) can put anything
// there. So every file and directory procmon reads or writes in it is
// opened here, one component at a time from the state directory down,
// never following a symbolic link (O_NOFOLLOW on each component), never
// blocking (O_NONBLOCK, so a FIFO planted in place of a record cannot hang
// its reader), and checked on the open descriptor before it is used: the
// type it should have, owned by the effective uid, not writable by group
// or others, one link only for a file (a hard link to a file elsewhere
// would show that file), and for a record a size no record of procmon
// reaches. A failed check is state_unsafe (something is where procmon
// would not have put it) or state_corrupt (a record too large to be one),
// naming the path.

// maxRecordBytes bounds every record procmon reads. The largest record
// procmon writes is a monitor's, and most of it is the argv, cwd and name
// of its start request, which is at most 4 MiB; the record's JSON escapes
// a byte of those in at most 6 (the \u003c of '<'), so no record of
// procmon passes 24 MiB plus its fixed fields. 32 MiB leaves room for that
// and still keeps a planted file of gigabytes from being read into memory.
const maxRecordBytes = 32 << 20

// entryKind is what a checked entry must be.
type entryKind int

const (
	kindDir entryKind = iota
	kindFile
)

// unsafeEntry is the refusal of an entry that procmon did not put there.
func unsafeEntry(path, why string) error {
	return protocol.Errorf(protocol.CodeStateUnsafe, "%s in the state directory is unsafe: %s; procmon does not use it", path, why).With("path", path)
}

// checkEntry applies the trust rules to what fstat said of path: the
// kind, the owner uid, no write permission for group or others, and for a
// file a single link. It is separate from the opening so the rules are
// tested with any uid, whoever runs the tests.
func checkEntry(path string, st *unix.Stat_t, uid int, want entryKind) error {
	switch typ := st.Mode & unix.S_IFMT; {
	case typ == unix.S_IFLNK:
		return unsafeEntry(path, "it is a symbolic link")
	case want == kindDir && typ != unix.S_IFDIR:
		return unsafeEntry(path, fmt.Sprintf("it is %s, not a directory", typeName(typ)))
	case want == kindFile && typ != unix.S_IFREG:
		return unsafeEntry(path, fmt.Sprintf("it is %s, not a regular file", typeName(typ)))
	}
	if int(st.Uid) != uid {
		return unsafeEntry(path, fmt.Sprintf("it is owned by uid %d, not by you (uid %d)", st.Uid, uid))
	}
	if perm := st.Mode & 0o7777; perm&0o022 != 0 {
		return unsafeEntry(path, fmt.Sprintf("mode %04o lets group or others write it", perm))
	}
	if want == kindFile && st.Nlink > 1 {
		return unsafeEntry(path, fmt.Sprintf("it has %d hard links, so it is also a file elsewhere", st.Nlink))
	}
	return nil
}

func typeName(typ uint32) string {
	switch typ {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFLNK:
		return "a symbolic link"
	}
	return fmt.Sprintf("of type %#o", typ)
}

// openFlags are added to every open in the state directory.
const openFlags = unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC

// resourceErr says so when err means that the machine, not the state
// directory, stopped an operation on path: out of file descriptors or of
// memory. Nothing about the file is known then, so it is neither unsafe
// nor corrupt.
func resourceErr(op, path string, err error) error {
	for _, errno := range []unix.Errno{unix.EMFILE, unix.ENFILE, unix.ENOMEM, unix.ENOBUFS} {
		if errors.Is(err, errno) {
			return protocol.Errorf(protocol.CodeInternal, "%s %s: %v; the file was not looked at", op, path, errno).With("path", path)
		}
	}
	return nil
}

// openErr turns the error of an open of path into procmon's answer: a
// missing entry stays fs.ErrNotExist, for the caller to name; a symbolic
// link or a non-directory where a directory should be is state_unsafe.
func openErr(path string, err error) error {
	if e := resourceErr("open", path, err); e != nil {
		return e
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	case errors.Is(err, unix.ELOOP):
		return unsafeEntry(path, "it is a symbolic link")
	case errors.Is(err, unix.ENOTDIR):
		// O_DIRECTORY and O_NOFOLLOW on a link say ENOTDIR too. Looked at
		// by its path for the message alone.
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return unsafeEntry(path, "it is a symbolic link")
		}
		return unsafeEntry(path, "it is not a directory")
	case errors.Is(err, unix.ENXIO):
		// O_WRONLY|O_NONBLOCK on a FIFO that nobody reads.
		return unsafeEntry(path, "it is a FIFO, not a regular file")
	case errors.Is(err, unix.EROFS), errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT):
		// The file system's doing, not the entry's: said state_unsafe, it
		// was advised to be inspected by hand.
		return protocol.Errorf(protocol.CodeInternal, "open %s: %w", path, err).With("path", path)
	}
	return protocol.Errorf(protocol.CodeStateUnsafe, "open %s: %w", path, err).With("path", path)
}

// components splits dir, which must lie inside root, into the names that
// lead to it from root. Only names procmon makes itself come here, so
// anything that could climb out is a bug, refused all the same.
func components(root, dir string) ([]string, error) {
	if dir == root {
		return nil, nil
	}
	rel, ok := strings.CutPrefix(dir, root+"/")
	if !ok {
		return nil, fmt.Errorf("%s is not inside the state directory %s", dir, root)
	}
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return nil, fmt.Errorf("%s is not a clean path inside the state directory %s", dir, root)
		}
	}
	return parts, nil
}

// openDir opens dir, a directory inside the state directory root (or root
// itself), walking down from root one checked component at a time. The
// caller closes the descriptor.
func openDir(root, dir string) (int, error) {
	parts, err := components(root, dir)
	if err != nil {
		return -1, err
	}
	uid := os.Geteuid()
	// The state directory itself may be reached through links in its
	// parents, which are the user's to choose; it may not be one itself.
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|openFlags, 0)
	if err != nil {
		return -1, openErr(root, err)
	}
	path := root
	for i := 0; ; i++ {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("fstat %s: %w", path, err)
		}
		if err := checkEntry(path, &st, uid, kindDir); err != nil {
			unix.Close(fd)
			return -1, err
		}
		if i == len(parts) {
			return fd, nil
		}
		path = filepath.Join(path, parts[i])
		next, err := unix.Openat(fd, parts[i], unix.O_RDONLY|unix.O_DIRECTORY|openFlags, 0)
		unix.Close(fd)
		if err != nil {
			return -1, openErr(path, err)
		}
		fd = next
	}
}

// openFileAt opens name in the directory dirfd (which is dir) with flags,
// and checks it as a file. With maxSize above zero, a larger file is
// state_corrupt.
func openFileAt(dirfd int, dir, name string, flags int, perm uint32, maxSize int64) (*os.File, error) {
	path := filepath.Join(dir, name)
	fd, err := unix.Openat(dirfd, name, flags|openFlags, perm)
	if err != nil {
		return nil, openErr(path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("fstat %s: %w", path, err)
	}
	if err := checkEntry(path, &st, os.Geteuid(), kindFile); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if maxSize > 0 && st.Size > maxSize {
		unix.Close(fd)
		return nil, tooLarge(path, st.Size, maxSize)
	}
	return os.NewFile(uintptr(fd), path), nil
}

func tooLarge(path string, size, limit int64) error {
	return protocol.Errorf(protocol.CodeStateCorrupt, "%s is %d bytes, more than the %d a record of procmon can be; it is not trusted", path, size, limit).With("path", path)
}

// openFile opens dir/name, dir inside the state directory root, through
// checked components.
func openFile(root, dir, name string, flags int, perm uint32, maxSize int64) (*os.File, error) {
	dirfd, err := openDir(root, dir)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	return openFileAt(dirfd, dir, name, flags, perm, maxSize)
}

// readTrusted reads a whole record file at dir/name, checked and bounded.
func readTrusted(root, dir, name string) ([]byte, error) {
	f, err := openFile(root, dir, name, unix.O_RDONLY, 0, maxRecordBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The size was checked when it was opened; a file that grows since is
	// read no further than the bound.
	data, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		if e := resourceErr("read", f.Name(), err); e != nil {
			return nil, e
		}
		return nil, protocol.Errorf(protocol.CodeStateCorrupt, "read %s: %w", f.Name(), err).With("path", f.Name())
	}
	if len(data) > maxRecordBytes {
		return nil, tooLarge(f.Name(), int64(len(data)), maxRecordBytes)
	}
	return data, nil
}

// mkdirTrusted makes dir/name (mode 0700) unless it exists, and checks it.
func mkdirTrusted(root, dir, name string) error {
	dirfd, err := openDir(root, dir)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if err := unix.Mkdirat(dirfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return protocol.Errorf(protocol.CodeStateUnsafe, "create %s: %w", filepath.Join(dir, name), err).With("path", filepath.Join(dir, name))
	}
	fd, err := openDir(root, filepath.Join(dir, name))
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

// OpenLog opens monitor m's output log for reading, checked like every
// file of the state directory (never a link, a FIFO or a file of another
// user) and its size against m's record (logSizeRuledOut). The log has no
// size bound: its readers read windows of it.
func (d *Dir) OpenLog(m *Monitor) (*os.File, error) {
	if err := ValidMonitorID(m.MonitorID); err != nil {
		return nil, err
	}
	f, err := openFile(d.Path, d.MonitorDir(m.MonitorID), LogName, unix.O_RDONLY, 0, 0)
	if errors.Is(err, fs.ErrNotExist) {
		// The log is made before the monitor's first record: a monitor
		// without one lost it. A wait that took it for a log not made
		// yet answered timeout beside the text its record counted.
		path := filepath.Join(d.MonitorDir(m.MonitorID), LogName)
		return nil, protocol.Errorf(protocol.CodeStateCorrupt, "output log %s is missing: it was removed since the monitor started, and what it held is not known; inspect the directory by hand", path).With("path", path)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat output log: %w", err)
	}
	if why := m.logSizeRuledOut(fi.Size()); why != "" {
		f.Close()
		path := filepath.Join(d.MonitorDir(m.MonitorID), LogName)
		return nil, protocol.Errorf(protocol.CodeStateCorrupt, "output log %s holds %d bytes, %s: it was cut, replaced or written to by another process, and is not trusted", path, fi.Size(), why).With("path", path)
	}
	return f, nil
}

// logSizeRuledOut says why a log of size bytes cannot be the one m's
// guardian wrote, or "". The log only grows, and the guardian counts a
// byte once written, so it is never shorter than the record's count
// (bytes written are in the page cache whenever the record was saved:
// only a reboot can lose them). Once the guardian drained the output
// into it, synced it and wrote its receipt, it holds exactly the count.
func (m *Monitor) logSizeRuledOut(size int64) string {
	switch {
	case size < m.LogBytes && m.BootID == BootID():
		return fmt.Sprintf("fewer than the %d its record counts", m.LogBytes)
	case size != m.LogBytes && m.Receipt != nil && m.Receipt.OutputDrained && m.LogError == "":
		return fmt.Sprintf("not the %d its guardian wrote in all", m.LogBytes)
	}
	return ""
}

// OpenLogForAppend opens a monitor's existing output log for appending,
// checked as OpenLog checks it; a FIFO in its place is refused at once
// rather than waited on.
func (d *Dir) OpenLogForAppend(id string) (*os.File, error) {
	if err := ValidMonitorID(id); err != nil {
		return nil, err
	}
	return openFile(d.Path, d.MonitorDir(id), LogName, unix.O_WRONLY|unix.O_APPEND, 0, 0)
}

// OpenMonitorDir opens the directory of monitor id, reached and checked
// one component at a time as every file in it is: a guardian holds it for
// its control socket, which it binds through the descriptor.
func (d *Dir) OpenMonitorDir(id string) (int, error) {
	if err := ValidMonitorID(id); err != nil {
		return -1, err
	}
	return openDir(d.Path, d.MonitorDir(id))
}

// OpenGuardianLog opens a guardian's own log in the directory of monitor
// id for appending, made 0600 if it is not there, checked as every file in
// the state directory is: a link, a FIFO or a hard link planted in its
// place is refused, not written through.
func (d *Dir) OpenGuardianLog(id string) (*os.File, error) {
	if err := ValidMonitorID(id); err != nil {
		return nil, err
	}
	return openFile(d.Path, d.MonitorDir(id), GuardianLogName, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT, 0o600, 0)
}
