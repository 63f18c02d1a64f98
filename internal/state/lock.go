package state

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"procmon/internal/protocol"
)

// lockName is the flock file beside the records it guards. Locks are
// advisory: they order procmon's own writers, nothing else.
const lockName = "lock"

// lockPatience bounds the wait for a lock. Every holder keeps a lock for
// one read and one write, so only a holder that was stopped (SIGSTOP) or
// is wedged keeps it longer; a command then fails instead of hanging.
const lockPatience = 10 * time.Second

// withLock runs fn while holding the exclusive flock of dir.
func withLock(dir string, fn func() error) error {
	l := flock.New(filepath.Join(dir, lockName))
	ctx, cancel := context.WithTimeout(context.Background(), lockPatience)
	defer cancel()
	ok, err := l.TryLockContext(ctx, time.Millisecond)
	if !ok {
		if err == nil || ctx.Err() != nil {
			return protocol.Errorf(protocol.CodeInternal, "%s stayed locked for %v: a procmon process holding it is stopped or wedged; find it with: fuser %s", dir, lockPatience, filepath.Join(dir, lockName)).With("path", dir)
		}
		return fmt.Errorf("lock %s: %w", dir, err)
	}
	defer l.Unlock()
	return fn()
}
