package state

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
)

// lockName is the flock file beside the records it guards. Locks are
// advisory: they order procmon's own writers, nothing else.
const lockName = "lock"

// lockPatience bounds the wait for a lock. Every holder keeps a lock for
// one read and one write, so only a holder that was stopped (SIGSTOP) or
// is wedged keeps it longer; a command then fails instead of hanging.
const lockPatience = 10 * time.Second

// lockRetry is how often a lock held by another process is tried again.
const lockRetry = time.Millisecond

// withLock runs fn while holding the exclusive flock of dir, a directory
// inside the state directory root. The lock file is opened (and made when
// missing) like every file of the state directory: a link, a FIFO or a
// file of another user in its place is refused, never followed or
// created elsewhere.
func withLock(root, dir string, fn func() error) error {
	f, err := openFile(root, dir, lockName, unix.O_RDWR|unix.O_CREAT, 0o600, 0)
	if err != nil {
		return err
	}
	defer f.Close() // closing the last descriptor releases the lock
	fd := int(f.Fd())
	deadline := time.Now().Add(lockPatience)
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("lock %s: %w", dir, err)
		}
		if time.Now().After(deadline) {
			return protocol.Errorf(protocol.CodeInternal, "%s stayed locked for %v: a procmon process holding it is stopped or wedged", dir, lockPatience).With("path", dir).With("lock", filepath.Join(dir, lockName))
		}
		time.Sleep(lockRetry)
	}
	defer unix.Flock(fd, unix.LOCK_UN)
	return fn()
}
