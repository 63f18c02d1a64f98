package state

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func writeLog(t *testing.T, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), LogName)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// windowOf reads a window of the log file at path.
func windowOf(t *testing.T, path string, offset *int64, maxBytes int64, final bool) (*LogWindow, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return readLogWindow(f, offset, maxBytes, final)
}

const mixed = "ascii é 中文 🙂 end\nline two ü€𝄞\n"

func TestLogWindowCursorReassemblesExactly(t *testing.T) {
	path := writeLog(t, mixed)
	for size := int64(4); size <= int64(len(mixed))+1; size++ {
		var got strings.Builder
		var off int64
		for off < int64(len(mixed)) {
			w, err := windowOf(t, path, &off, size, true)
			if err != nil {
				t.Fatal(err)
			}
			if w.NextOffset <= off {
				t.Fatalf("size %d: no progress at offset %d", size, off)
			}
			if w.Offset != off || w.NextOffset-w.Offset > size {
				t.Fatalf("size %d: window [%d,%d) breaks its bounds", size, w.Offset, w.NextOffset)
			}
			if !utf8.ValidString(w.Text) {
				t.Fatalf("size %d: invalid UTF-8 %q", size, w.Text)
			}
			sum := sha256.Sum256([]byte(w.Text))
			if w.OutputBytes != len(w.Text) || w.OutputSHA256 != hex.EncodeToString(sum[:]) {
				t.Fatalf("size %d: bytes/sha256 do not describe the text", size)
			}
			if w.Window != (w.NextOffset < int64(len(mixed))) {
				t.Fatalf("size %d at %d: window flag %v", size, off, w.Window)
			}
			got.WriteString(w.Text)
			off = w.NextOffset
		}
		if got.String() != mixed {
			t.Fatalf("size %d: reassembled %q", size, got.String())
		}
	}
}

func TestLogWindowTailNeverSplitsACharacter(t *testing.T) {
	path := writeLog(t, mixed)
	for size := int64(1); size <= int64(len(mixed))+2; size++ {
		w, err := windowOf(t, path, nil, size, false)
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.ValidString(w.Text) || strings.ContainsRune(w.Text, utf8.RuneError) {
			t.Fatalf("size %d: split character in %q", size, w.Text)
		}
		if !strings.HasSuffix(mixed, w.Text) || int64(len(w.Text)) > size {
			t.Fatalf("size %d: %q is not a tail of at most %d bytes", size, w.Text, size)
		}
		if w.Window != (int64(len(w.Text)) < int64(len(mixed))) {
			t.Fatalf("size %d: window flag %v", size, w.Window)
		}
	}
}

func TestLogWindowIncompleteTail(t *testing.T) {
	live := "ready 中"[:len("ready 中")-1] // the child has written 2 of 3 bytes
	path := writeLog(t, live)
	w, err := windowOf(t, path, nil, 100, false)
	if err != nil {
		t.Fatal(err)
	}
	if w.Text != "ready " || !w.IncompleteUTF8 || w.Window || w.NextOffset != 6 {
		t.Fatalf("live stream: %+v", w)
	}
	// Once the stream has ended, the partial sequence is shown, replaced.
	w, _ = windowOf(t, path, nil, 100, true)
	if w.Text != "ready \uFFFD" || w.IncompleteUTF8 {
		t.Fatalf("ended stream: %+v", w)
	}
}

func TestLogWindowInvalidBytesAreReplaced(t *testing.T) {
	path := writeLog(t, "a\xffb\xc3(c")
	w, _ := windowOf(t, path, nil, 100, true)
	if w.Text != "a\uFFFDb\uFFFD(c" || w.OutputBytes != len(w.Text) {
		t.Fatalf("got %+v", w)
	}
	off := int64(99)
	w, _ = windowOf(t, path, &off, 10, true)
	if w.Text != "" || w.Offset != 6 || w.NextOffset != 6 {
		t.Fatalf("offset past the end: %+v", w)
	}
}
