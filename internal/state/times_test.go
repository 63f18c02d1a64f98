package state

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/ids"
	"procmon/internal/protocol"
)

// TestLogOffsetAt: output since a time starts at the first mark later
// than a second before it (the bytes after a mark were written within
// the second after it), at the last mark when all are older, and a
// monitor without marks says so rather than guessing.
func TestLogOffsetAt(t *testing.T) {
	d := openTestDir(t)
	id := ids.NewID("m_")
	if err := d.mkdirPrivate(filepath.Join(monitorsDir, id)); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := d.LogOffsetAt(id, 5000, 100); ok || err != nil {
		t.Fatalf("no marks: ok %v, %v; want not ok", ok, err)
	}
	w, err := d.CreateTimes(id)
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, m := range [][2]int64{{10_000, 0}, {11_500, 40}, {20_000, 90}} {
		b = AppendTimeMark(b, m[0], m[1])
	}
	if _, err := w.Write(append(b, "25000 1"...)); err != nil { // a mark cut short
		t.Fatal(err)
	}
	w.Close()
	for _, c := range []struct{ ms, want int64 }{
		{0, 0},
		{10_500, 0},  // within the second after the first mark
		{10_999, 0},  // still: the first mark's bytes may be that late
		{11_000, 40}, // the first mark's second is over
		{12_499, 40}, // the second mark's bytes may be that late
		{12_500, 90}, // only the last mark's bytes can be this late
		{99_000, 90}, // all older: the last whole mark
	} {
		got, ok, err := d.LogOffsetAt(id, c.ms, 100)
		if !ok || err != nil || got != c.want {
			t.Errorf("since %d: %d (ok %v, %v), want %d", c.ms, got, ok, err, c.want)
		}
	}
	// A mark past the log's end is none of the guardian's (it marks an
	// offset before writing there): it ends the marks, as a broken line
	// does, rather than place the output past the end.
	for _, c := range []struct{ ms, size, want int64 }{
		{12_500, 90, 90}, // the last mark is at the end: output to come
		{12_500, 89, 40}, // the last mark is past the end
		{99_000, 39, 0},  // so are the two after the first
	} {
		got, ok, err := d.LogOffsetAt(id, c.ms, c.size)
		if !ok || err != nil || got != c.want {
			t.Errorf("since %d, log of %d bytes: %d (ok %v, %v), want %d", c.ms, c.size, got, ok, err, c.want)
		}
	}
	if _, err := d.CreateTimes(id); err == nil {
		t.Error("the marks were made twice")
	}

	// A link planted in their place is refused, never followed.
	other := ids.NewID("m_")
	if err := d.mkdirPrivate(filepath.Join(monitorsDir, other)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(d.MonitorDir(other), TimesName)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.LogOffsetAt(other, 1, 100); !protocol.HasCode(err, protocol.CodeStateUnsafe) {
		t.Errorf("planted link: %v, want state_unsafe", err)
	}

	// A FIFO planted there is refused at once, never waited on, and the
	// guardian makes no marks through it.
	fifo := ids.NewID("m_")
	if err := d.mkdirPrivate(filepath.Join(monitorsDir, fifo)); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(d.MonitorDir(fifo), TimesName), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := d.LogOffsetAt(fifo, 1, 100); done <- err }()
	select {
	case err := <-done:
		if !protocol.HasCode(err, protocol.CodeStateUnsafe) {
			t.Errorf("planted FIFO: %v, want state_unsafe", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reading the marks waited on a planted FIFO")
	}
	if w, err := d.CreateTimes(fifo); err == nil {
		w.Close()
		t.Error("the marks were made over a planted FIFO")
	}
}
