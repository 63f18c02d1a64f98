//go:build linux

package wait

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watchMask is what wakes a waiter: anything that can make a file appear,
// change or go away in a watched directory, and the directory itself going
// away (after which the caller must watch again from an ancestor).
const watchMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_ATTRIB | unix.IN_DELETE |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// Watcher is an inotify watch on a few directories. It costs no CPU while
// idle: its descriptor is non-blocking and read through os.File, so the
// reading goroutine is parked in the runtime poller, and Close wakes it.
//
// A file condition's parent directory may not exist when a wait begins.
// Watch the nearest existing ancestor (NearestDir) instead; on each wake,
// call NearestDir again and Add what it returns, so the watch follows the
// directories down as they are created. Adding a directory twice is
// harmless.
type Watcher struct {
	file      *os.File
	events    chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
	err       error // why the reader stopped, if not Close; read after done

	// onEvent, when set before the reader starts, sees every event; tests
	// use it to know exactly which events arrived.
	onEvent func(mask uint32, name string)
}

// NewWatcher watches dirs, which must exist and be directories. More can be
// added with Add.
func NewWatcher(dirs ...string) (*Watcher, error) {
	return newWatcher(nil, dirs...)
}

func newWatcher(onEvent func(mask uint32, name string), dirs ...string) (*Watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	for _, dir := range dirs {
		if err := addWatch(fd, dir); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	// os.NewFile sees the descriptor is non-blocking and hands it to the
	// runtime poller; a blocking read(2) could not be interrupted by Close.
	w := &Watcher{
		file:    os.NewFile(uintptr(fd), "inotify"),
		events:  make(chan struct{}, 1),
		done:    make(chan struct{}),
		onEvent: onEvent,
	}
	go w.read()
	return w, nil
}

func addWatch(fd int, dir string) error {
	for {
		_, err := unix.InotifyAddWatch(fd, dir, watchMask)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			// Named, so that its ENOSPC (the user's watches used up) is
			// not taken for a full disk.
			return fmt.Errorf("watch %s: %w", dir, os.NewSyscallError("inotify_add_watch", err))
		}
		return nil
	}
}

// Add watches one more directory, which must exist.
func (w *Watcher) Add(dir string) error {
	rc, err := w.file.SyscallConn()
	if err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	var addErr error
	// Control holds the descriptor open for the call, so a concurrent
	// Close cannot turn it into some other file's number.
	if err := rc.Control(func(fd uintptr) { addErr = addWatch(int(fd), dir) }); err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	return addErr
}

// Events delivers a coalesced wake-up whenever anything in a watched
// directory is created, modified, moved in or out, attribute-changed or
// deleted. One pending wake-up stands for any number of events, so after a
// wake the caller re-evaluates everything it waits for. The channel is
// closed when the watcher stops (Close, or a read error: see Err).
func (w *Watcher) Events() <-chan struct{} { return w.events }

// Err returns why the watcher stopped on its own, once Events is closed;
// it is nil after Close.
func (w *Watcher) Err() error {
	select {
	case <-w.done:
		return w.err
	default:
		return nil
	}
}

// Close stops the watcher and waits for its reader to return. It is safe
// to call more than once.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		w.closeErr = w.file.Close()
		<-w.done
	})
	return w.closeErr
}

func (w *Watcher) read() {
	defer close(w.done)
	defer close(w.events)
	// Large enough for many events with maximal names at once.
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.file.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				w.err = err
			}
			return
		}
		if w.onEvent != nil {
			parseEvents(buf[:n], w.onEvent)
		}
		select {
		case w.events <- struct{}{}:
		default:
		}
	}
}

func parseEvents(b []byte, f func(mask uint32, name string)) {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			return
		}
		name := strings.TrimRight(string(b[unix.SizeofInotifyEvent:end]), "\x00")
		f(ev.Mask, name)
		b = b[end:]
	}
}

// NearestDir returns the deepest existing directory on the way from root to
// the parent of rel (a clean relative path), without following symlinks:
// beyond a symlink a file condition is refused anyway, so there is nothing
// to wait for there. It returns root when no deeper directory exists.
func NearestDir(root, rel string) string {
	dir := root
	parent := filepath.Dir(rel)
	if parent == "." {
		return dir
	}
	for _, comp := range strings.Split(parent, "/") {
		next := filepath.Join(dir, comp)
		fi, err := os.Lstat(next)
		if err != nil || !fi.IsDir() {
			break
		}
		dir = next
	}
	return dir
}
