package wait

import (
	"context"
	"fmt"
	"io"
)

// Changes is a monitor's stream of change notices, the one event source
// of a wait and of logs --follow: the guardian's notices while it sends
// them (after the log grows or the record changes), then a watch on the
// monitor's directory. A notice only says "look again"; notices that
// arrive while one is pending merge into it.
type Changes struct {
	// C receives a notice after each change. It is closed when watching
	// failed (Err says why), when the context WatchChanges was given
	// ended, or when the Changes were closed (Err is nil for both).
	C <-chan struct{}

	err    error // set before C is closed
	cancel context.CancelFunc
	done   chan struct{}
}

// WatchChanges subscribes to t's changes: to the guardian's notices
// (waiting for its answer no longer than guardianCtx allows), else to a
// watch on t.Dir. It comes before every look the caller then waits on,
// so nothing written after such a look goes unnoticed. (A look before
// it may end the wait, never leave it waiting: Evaluate.)
// When the guardian's notices end, the directory is watched from then on
// and one notice is sent: the change that ended them (a receipt, a
// guardian that died) may have come before the watch.
func WatchChanges(ctx, guardianCtx context.Context, t Target) (*Changes, error) {
	var notices <-chan struct{}
	var sub io.Closer
	if t.Changes != nil {
		if ch, s, err := t.Changes(guardianCtx); err == nil {
			notices, sub = ch, s
		}
	}
	var dir *Watcher
	if notices == nil {
		w, err := NewWatcher(t.Dir)
		if err != nil {
			return nil, err
		}
		dir = w
	}
	out := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(ctx)
	c := &Changes{C: out, cancel: cancel, done: make(chan struct{})}
	notice := func() {
		select {
		case out <- struct{}{}:
		default: // one is pending already
		}
	}
	go func() {
		defer close(c.done)
		defer close(out)
		if notices != nil {
			if !c.forward(ctx, notices, notice) {
				sub.Close()
				return
			}
			sub.Close()
			w, err := NewWatcher(t.Dir)
			if err != nil {
				c.err = err
				return
			}
			dir = w
			notice()
		}
		defer closeLater(dir)
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-dir.Events():
				if !ok {
					c.err = fmt.Errorf("watch %s: %w", t.Dir, dir.Err())
					return
				}
				notice()
			}
		}
	}()
	return c, nil
}

// forward passes the guardian's notices on until they end (true) or ctx
// does (false).
func (c *Changes) forward(ctx context.Context, notices <-chan struct{}, notice func()) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case _, ok := <-notices:
			if !ok {
				return true
			}
			notice()
		}
	}
}

// Err says why C was closed: nil when the Changes were closed.
func (c *Changes) Err() error { return c.err }

// Close ends the subscription and the watch.
func (c *Changes) Close() {
	c.cancel()
	<-c.done
}
