package state

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// CustodyName is the custody fence of a monitor directory: an empty file
// made with the directory, writable by its owner while the guardian may
// claim custody. A reader that shows the monitor as needing
// reconciliation because its guardian let its window lapse, or did not
// answer once it had, takes the write bit away before it answers; a
// guardian that finds it taken away never claims custody again, and
// drains. A guardian that cannot store its receipt (a full disk) takes it
// away itself, so that readers ask it rather than trust a record that says
// running. Changing a mode needs no space, so the fence holds where the
// record cannot be written, and it is never given back.
const CustodyName = "custody"

// Custody is what a monitor directory's fence says.
type Custody int

const (
	// CustodyUnfenced: the directory has no fence (an earlier procmon made
	// it), and the record alone decides.
	CustodyUnfenced Custody = iota
	// CustodyOpen: custody may be claimed.
	CustodyOpen
	// CustodyGivenUp: custody may never be claimed again.
	CustodyGivenUp
)

// createCustody makes the fence in dir, a monitor directory being made,
// open whatever the umask (one without the owner's write bit would make it
// given up from the start).
func createCustody(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, CustodyName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = f.Chmod(0o600)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Custody reads the fence of monitor id. A fence that is not an empty
// regular file of the state directory's owner, with one link, counts as
// given up: nothing that could have been planted (a link to another
// monitor's fence among them) lets custody be claimed.
func (d *Dir) Custody(id string) Custody {
	if ValidMonitorID(id) != nil {
		return CustodyGivenUp
	}
	var st unix.Stat_t
	err := unix.Lstat(filepath.Join(d.MonitorDir(id), CustodyName), &st)
	switch {
	case errors.Is(err, unix.ENOENT):
		return CustodyUnfenced
	case err != nil, st.Mode&unix.S_IFMT != unix.S_IFREG, st.Uid != uint32(os.Geteuid()), st.Nlink != 1, st.Size != 0, st.Mode&0o200 == 0:
		return CustodyGivenUp
	}
	return CustodyOpen
}

// ReadOnly reports whether the state directory's file system is mounted
// read-only, where no fence can be changed: a guardian that drained and
// cannot store its receipt cannot give its custody up either, so readers
// ask it instead of trusting a record that says running.
func (d *Dir) ReadOnly() bool {
	var st unix.Statfs_t
	return unix.Statfs(d.Path, &st) == nil && st.Flags&unix.ST_RDONLY != 0
}

// GiveUpCustody takes the write bit away from the fence of monitor id, for
// good. A directory without a fence has nothing to give up.
func (d *Dir) GiveUpCustody(id string) error {
	if err := ValidMonitorID(id); err != nil {
		return err
	}
	path := filepath.Join(d.MonitorDir(id), CustodyName)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
		return nil // no fence, or a link that reads as given up
	}
	if err != nil {
		// Out of descriptors, say: a fence that stayed open would let a
		// guardian shown as lapsed claim custody again. A link planted
		// between the look and the change would be followed to a file of
		// the same user, who could have changed its mode anyway.
		var st unix.Stat_t
		if lerr := unix.Lstat(path, &st); lerr != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
			return nil
		}
		return unix.Fchmodat(unix.AT_FDCWD, path, 0o400, 0)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		// No fence of ours: it reads as given up already, and changing
		// it would change the file it is a link of.
		return nil
	}
	return unix.Fchmod(fd, 0o400)
}
