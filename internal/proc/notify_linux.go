package proc

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"procmon/internal/state"
)

// changeFeed tells the waits that asked (control op "watch") that what
// they look at changed: the output log grew or the record did. A notice
// carries nothing; the wait reads the log and the record itself, so a
// notice merged with another costs nothing and one too many costs a look.
// This is how a wait on a live monitor learns of new output: straight from
// the guardian that wrote it, with no inotify instance to retire when the
// wait exits (which costs the kernel an SRCU grace period, often
// milliseconds).
type changeFeed struct {
	n    atomic.Int32 // subscribers, read without the lock on every write
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

func (f *changeFeed) subscribe() chan struct{} {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[chan struct{}]struct{}{}
	}
	f.subs[ch] = struct{}{}
	f.n.Add(1)
	return ch
}

func (f *changeFeed) unsubscribe(ch chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.subs, ch)
	f.n.Add(-1)
}

// notify marks every subscriber changed without ever blocking.
func (f *changeFeed) notify() {
	if f.n.Load() == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// serveWatch sends a newline when the subscription starts and one after
// each change, and closes the connection once the receipt is durable. A
// subscriber that hangs up, or stops reading, is dropped at once: a quiet
// service would otherwise keep the connection of every wait that ever
// ended.
func (g *guardian) serveWatch(conn *net.UnixConn) {
	ch := g.feed.subscribe()
	defer g.feed.unsubscribe(ch)
	gone := make(chan struct{})
	go func() {
		// A subscriber sends nothing more: any return is its hang-up.
		conn.Read(make([]byte, 1))
		close(gone)
	}()
	notice := []byte{'\n'}
	for {
		conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write(notice); err != nil {
			return
		}
		select {
		case <-ch:
		case <-gone:
			return
		case <-g.finished:
			return
		}
	}
}

// WatchChanges subscribes to the change notices of a monitor's live
// guardian. The channel receives after the output log grows or the record
// changes (notices merge), and is closed when the guardian ends custody or
// dies. Closing the Closer ends the subscription. It returns errNoGuardian
// when no guardian answers, before ctx ends or within 10 s.
func WatchChanges(ctx context.Context, dir *state.Dir, m *state.Monitor) (<-chan struct{}, io.Closer, error) {
	conn, err := dialGuardian(dir, m)
	if err != nil {
		return nil, nil, err
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	stop := unblockOnDone(ctx, conn)
	defer stop()
	data, _ := json.Marshal(controlRequest{Op: "watch"})
	ack := make([]byte, 1)
	if _, err := conn.Write(append(data, '\n')); err != nil {
		conn.Close()
		return nil, nil, errNoGuardian
	}
	if _, err := io.ReadFull(conn, ack); err != nil || ack[0] != '\n' {
		// The guardian ended custody between the dial and the request.
		conn.Close()
		return nil, nil, errNoGuardian
	}
	conn.SetDeadline(time.Time{})
	ch := make(chan struct{}, 1)
	go func() {
		defer close(ch)
		buf := make([]byte, 64)
		for {
			n, err := conn.Read(buf)
			if n > 0 {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return ch, conn, nil
}
