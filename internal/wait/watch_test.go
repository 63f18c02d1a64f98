//go:build linux

package wait

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// failAfter is only a failure bound for waits on events; nothing here
// asserts how fast anything happens.
const failAfter = 10 * time.Second

func waitWake(t *testing.T, w *Watcher, what string) {
	t.Helper()
	select {
	case _, ok := <-w.Events():
		if !ok {
			t.Fatalf("%s: events closed", what)
		}
	case <-time.After(failAfter):
		t.Fatalf("%s: no wake-up", what)
	}
}

type seenEvent struct {
	mask uint32
	name string
}

// recordingWatcher returns a watcher whose every event is also sent to the
// returned channel, so a test can tell exactly what arrived.
func recordingWatcher(t *testing.T, dirs ...string) (*Watcher, chan seenEvent) {
	t.Helper()
	seen := make(chan seenEvent, 1024)
	w, err := newWatcher(func(mask uint32, name string) { seen <- seenEvent{mask, name} }, dirs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, seen
}

// waitName returns the events that arrived before the first one for name.
func waitName(t *testing.T, seen chan seenEvent, name string) []seenEvent {
	t.Helper()
	var before []seenEvent
	timeout := time.After(failAfter)
	for {
		select {
		case ev := <-seen:
			if ev.name == name {
				return before
			}
			before = append(before, ev)
		case <-timeout:
			t.Fatalf("no event for %q (saw %v)", name, before)
		}
	}
}

func TestWatcherWakesOnWrite(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWatcher(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	writeFile(t, filepath.Join(dir, "ready.json"), "x")
	waitWake(t, w, "create")

	// Each kind of change wakes it again once the last wake was taken.
	drain := func() {
		for {
			select {
			case <-w.Events():
			default:
				return
			}
		}
	}
	steps := []struct {
		what string
		do   func() error
	}{
		{"append", func() error {
			f, err := os.OpenFile(filepath.Join(dir, "ready.json"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString("y")
			return err
		}},
		{"chmod", func() error { return os.Chmod(filepath.Join(dir, "ready.json"), 0o600) }},
		{"move in", func() error {
			other := t.TempDir()
			if err := os.WriteFile(filepath.Join(other, "moved"), nil, 0o644); err != nil {
				return err
			}
			return os.Rename(filepath.Join(other, "moved"), filepath.Join(dir, "moved"))
		}},
		{"delete", func() error { return os.Remove(filepath.Join(dir, "ready.json")) }},
	}
	for _, s := range steps {
		drain()
		if err := s.do(); err != nil {
			t.Fatal(err)
		}
		waitWake(t, w, s.what)
	}
}

func TestWatcherCloseUnblocks(t *testing.T) {
	w, err := NewWatcher(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- w.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(failAfter):
		t.Fatal("Close did not return: the reader stayed blocked")
	}
	// Close waited for the reader, so Events is already closed.
	select {
	case _, ok := <-w.Events():
		if ok {
			t.Fatal("a wake-up after Close")
		}
	default:
		t.Fatal("Events still open after Close")
	}
	if err := w.Err(); err != nil {
		t.Fatalf("Err after Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := w.Add(t.TempDir()); err == nil {
		t.Fatal("Add after Close succeeded")
	}
}

// TestWatcherIdle does things that must not wake a waiter (reads, stats,
// writes elsewhere), then one that must, and checks the latter is the
// first event of all.
func TestWatcherIdle(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "existing"), "x")
	w, seen := recordingWatcher(t, dir)

	if _, err := os.ReadFile(filepath.Join(dir, "existing")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if _, err := os.ReadDir(dir); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(elsewhere, "other"), "x")
	select {
	case <-w.Events():
		t.Fatal("woke up while idle")
	default:
	}

	writeFile(t, filepath.Join(dir, "barrier"), "x")
	if before := waitName(t, seen, "barrier"); len(before) != 0 {
		t.Fatalf("events while idle: %v", before)
	}
	waitWake(t, w, "barrier")
}

func TestWatcherAddFollowsNewDirectories(t *testing.T) {
	root := t.TempDir()
	w, seen := recordingWatcher(t, NearestDir(root, "run/state/ready.json"))
	if err := os.Mkdir(filepath.Join(root, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	waitName(t, seen, "run")
	dir := NearestDir(root, "run/state/ready.json")
	if dir != filepath.Join(root, "run") {
		t.Fatalf("NearestDir = %s; want %s/run", dir, root)
	}
	if err := w.Add(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "run", "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	waitName(t, seen, "state")
	if err := w.Add(NearestDir(root, "run/state/ready.json")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "run", "state", "ready.json"), "x")
	waitName(t, seen, "ready.json")
}

func TestWatcherRefusesMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	if w, err := NewWatcher(filepath.Join(dir, "not-yet")); err == nil {
		w.Close()
		t.Fatal("watching a missing directory succeeded")
	}
	writeFile(t, filepath.Join(dir, "file"), "x")
	if w, err := NewWatcher(filepath.Join(dir, "file")); err == nil {
		w.Close()
		t.Fatal("watching a regular file succeeded")
	}
	w, err := NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(filepath.Join(dir, "not-yet")); err == nil {
		t.Fatal("Add of a missing directory succeeded")
	}
}

func TestNearestDir(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "file"), "x")
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "a", "b", "link")); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{
		"ready.json":          root,
		"a/ready.json":        filepath.Join(root, "a"),
		"a/b/c/d/ready.json":  filepath.Join(root, "a", "b"),
		"a/b/link/ready.json": filepath.Join(root, "a", "b"),
		"file/x":              root,
		"z/ready.json":        root,
	} {
		if got := NearestDir(root, rel); got != want {
			t.Errorf("NearestDir(%q) = %s; want %s", rel, got, want)
		}
	}
}
