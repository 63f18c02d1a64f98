package state

import (
	"fmt"
	"path/filepath"

	"github.com/gofrs/flock"
)

// lockName is the flock file beside the records it guards. Locks are
// advisory: they order procmon's own writers, nothing else.
const lockName = "lock"

// withLock runs fn while holding the exclusive flock of dir.
func withLock(dir string, fn func() error) error {
	l := flock.New(filepath.Join(dir, lockName))
	if err := l.Lock(); err != nil {
		return fmt.Errorf("lock %s: %w", dir, err)
	}
	defer l.Unlock()
	return fn()
}
