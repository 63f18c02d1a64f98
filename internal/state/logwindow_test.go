package state

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"procmon/internal/wait"
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
	// Once the stream has ended, each byte of the partial sequence is
	// shown as U+FFFD.
	w, _ = windowOf(t, path, nil, 100, true)
	if w.Text != "ready \uFFFD\uFFFD" || w.IncompleteUTF8 || w.NextOffset != 8 {
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

// renderPieces are what random streams are made of: every kind of unit
// (ASCII, CR LF, 2-, 3- and 4-byte characters, a U+FFFD the service
// printed) and bytes that begin none (stray continuation bytes, lead
// bytes cut short, overlong and surrogate forms).
var renderPieces = []string{"a", "b", "\n", "\r\n", "é", "中", "🙂", "\uFFFD", "\xff", "\x80", "\xbf", "\xc3", "\xe4\xb8", "\xf0\x9f", "\xf0\x9f\x99", "\xed\xa0\x80", "\xc0\xaf"}

// oracle returns the offsets where the units of the stream s start, as
// Go's own decoding cuts them (one unit for each byte that begins no
// character), and the end of the last one: a live stream leaves out a
// last character that is not whole yet. The text of whole units is then
// Go's own conversion, string([]rune(...)).
func oracle(s string, ended bool) (starts map[int64]bool, decided int64) {
	starts = map[int64]bool{}
	i := 0
	for i < len(s) {
		if !ended && !utf8.FullRuneInString(s[i:]) {
			break
		}
		starts[int64(i)] = true
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
	}
	starts[int64(i)] = true
	return starts, int64(i)
}

// feedMatcher searches for text in s fed in random chunks, as a wait
// does, and ends the stream when it has ended.
func feedMatcher(rng *rand.Rand, text, s string, ended bool) (int64, bool) {
	m := wait.NewOutputMatcher(text)
	var off int64
	found := false
	for rest := s; len(rest) > 0; {
		n := 1 + rng.IntN(len(rest))
		if o, ok := m.Feed([]byte(rest[:n])); ok && !found {
			off, found = o, true
		}
		rest = rest[n:]
	}
	if ended {
		if o, ok := m.End(); ok && !found {
			off, found = o, true
		}
	}
	return off, found
}

// TestLogRenderingAgrees feeds random byte streams through every reader
// of the redacted stream: a window at a random offset or at the end, of
// a random size, of a stream that has ended or may still grow; a cursor
// that follows the stream as it grows; output_bytes and output_sha256;
// the log tail of a wait's evidence; and the output condition of a wait,
// which must find the text of every window where the window begins, and
// nowhere the window's offset would not show it.
func TestLogRenderingAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for iter := range 1000 {
		var b []byte
		for range rng.IntN(16) {
			b = append(b, renderPieces[rng.IntN(len(renderPieces))]...)
		}
		s := string(b)
		ended := rng.IntN(2) == 0
		path := writeLog(t, s)
		starts, decided := oracle(s, ended)

		maxBytes := int64(4 + rng.IntN(12))
		var offset *int64
		if rng.IntN(3) > 0 {
			o := int64(rng.IntN(len(s) + 2))
			offset = &o
		}
		w, err := windowOf(t, path, offset, maxBytes, ended)
		if err != nil {
			t.Fatal(err)
		}
		desc := fmt.Sprintf("#%d %q (ended %v) window at %v of %d", iter, s, ended, ptrString(offset), maxBytes)
		if int64(len(w.Text)) > maxBytes {
			t.Fatalf("%s: %d bytes of text", desc, len(w.Text))
		}
		sum := sha256.Sum256([]byte(w.Text))
		if w.OutputBytes != len(w.Text) || w.OutputSHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("%s: output_bytes/output_sha256 do not describe the text", desc)
		}
		switch {
		case w.IncompleteUTF8 && w.Offset == w.NextOffset && w.Offset > decided:
			// Asked to begin inside a character not yet whole.
		case !starts[w.Offset] || !starts[w.NextOffset]:
			t.Fatalf("%s: [%d,%d) does not begin and end at unit starts", desc, w.Offset, w.NextOffset)
		}
		if want := string([]rune(s[w.Offset:w.NextOffset])); w.Text != want {
			t.Fatalf("%s: text %q; the stream's [%d,%d) shows as %q", desc, w.Text, w.Offset, w.NextOffset, want)
		}
		if offset != nil && (!w.IncompleteUTF8 || *offset <= decided) {
			// The window begins at the first unit start at or after the
			// offset.
			first := min(*offset, int64(len(s)))
			for !starts[first] && first < int64(len(s)) {
				first++
			}
			if w.Offset != first {
				t.Fatalf("%s: begins at %d; want the unit start %d", desc, w.Offset, first)
			}
		}
		// The window holds as much as fits: it ends where the stream's
		// whole units do, or the next unit would not fit.
		if w.NextOffset < decided {
			next := w.NextOffset + 1
			for !starts[next] {
				next++
			}
			if grown := string([]rune(s[w.Offset:next])); int64(len(grown)) <= maxBytes {
				t.Fatalf("%s: [%d,%d) stops short; %q fits", desc, w.Offset, w.NextOffset, grown)
			}
		}
		if offset == nil && w.NextOffset < decided {
			t.Fatalf("%s: the tail ends at %d, before the stream's %d", desc, w.NextOffset, decided)
		}
		if offset == nil && w.Offset > 0 {
			prev := w.Offset - 1
			for !starts[prev] {
				prev--
			}
			if prev >= int64(len(s))-maxBytes {
				if grown := string([]rune(s[prev:w.NextOffset])); int64(len(grown)) <= maxBytes {
					t.Fatalf("%s: the tail [%d,%d) begins late; %q fits", desc, w.Offset, w.NextOffset, grown)
				}
			}
		}
		if w.IncompleteUTF8 != (w.NextOffset >= decided && decided < int64(len(s))) {
			t.Fatalf("%s: incomplete_utf8 %v ending at %d, the decided end is %d", desc, w.IncompleteUTF8, w.NextOffset, decided)
		}
		if offset == nil {
			tail := strings.Join(wait.Tail(func() (*os.File, error) { return os.Open(path) }, 1<<20, int(maxBytes), ended), "\n")
			if want := strings.TrimSuffix(w.Text, "\n"); tail != want {
				t.Fatalf("%s: the wait's log tail shows %q; logs shows %q", desc, tail, want)
			}
		}

		// The wait finds the window's text, first at most where the window
		// begins, and logs shows that text there; searched from the
		// window's offset on, it is found right there.
		if w.Text != "" {
			off, found := feedMatcher(rng, w.Text, s, ended)
			if !found || off > w.Offset {
				t.Fatalf("%s: a wait for %q found (%d, %v)", desc, w.Text, off, found)
			}
			at, err := windowOf(t, path, &off, int64(len(w.Text)), ended)
			if err != nil {
				t.Fatal(err)
			}
			if at.Text != w.Text || at.Offset != off {
				t.Fatalf("%s: the wait found %q at %d, where logs shows %q", desc, w.Text, off, at.Text)
			}
			if off, found := feedMatcher(rng, w.Text, s[w.Offset:], ended); !found || off != 0 {
				t.Fatalf("%s: a wait over the stream from %d found %q at (%d, %v)", desc, w.Offset, w.Text, off, found)
			}
		}

		// A cursor that follows the stream while it grows, as logs
		// --follow does, shows the whole text once it has ended.
		follow := writeLog(t, "")
		f, err := os.OpenFile(follow, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		var shown strings.Builder
		var cursor int64
		for rest := s; ; {
			n := rng.IntN(len(rest) + 1)
			if _, err := f.WriteString(rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
			final := rest == "" && rng.IntN(2) == 0
			for {
				fw, err := windowOf(t, follow, &cursor, maxBytes, final)
				if err != nil {
					t.Fatal(err)
				}
				if fw.Offset != cursor {
					t.Fatalf("%s: following, the window at %d begins at %d", desc, cursor, fw.Offset)
				}
				shown.WriteString(fw.Text)
				cursor = fw.NextOffset
				if fw.NextOffset >= fw.StreamBytes || fw.IncompleteUTF8 {
					break
				}
			}
			if final {
				break
			}
		}
		f.Close()
		if whole := string([]rune(s)); shown.String() != whole || cursor != int64(len(s)) {
			t.Fatalf("%s: following showed %q up to %d; want %q", desc, shown.String(), cursor, whole)
		}
	}
}

func ptrString(p *int64) string {
	if p == nil {
		return "the end"
	}
	return fmt.Sprint(*p)
}

// TestLogWindowHugeMaxBytes: any max_bytes up to the largest int64 reads
// the whole rest of the log, from an offset or from the end, never
// overflowing into an impossible read.
func TestLogWindowHugeMaxBytes(t *testing.T) {
	path := writeLog(t, "0123456789abcdef")
	for _, max := range []int64{math.MaxInt64, math.MaxInt64 - 15} {
		for _, off := range []int64{0, 16} {
			w, err := windowOf(t, path, &off, max, true)
			if err != nil {
				t.Fatal(err)
			}
			if want := "0123456789abcdef"[off:]; w.Text != want || w.NextOffset != 16 || w.Window {
				t.Errorf("offset %d, max_bytes %d: %q up to %d (window %v); want %q up to 16", off, max, w.Text, w.NextOffset, w.Window, want)
			}
		}
		w, err := windowOf(t, path, nil, max, true)
		if err != nil {
			t.Fatal(err)
		}
		if w.Text != "0123456789abcdef" || w.Offset != 0 {
			t.Errorf("tail, max_bytes %d: %q at %d; want all of it", max, w.Text, w.Offset)
		}
	}
}

// TestLogTextStart: a start inside a character moves back to where it
// begins, and the end of a live log stops before a character not yet
// whole, however far the log reaches past the bytes read.
func TestLogTextStart(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, tc := range []struct {
		log    string
		offset int64
		final  bool
		want   int64
	}{
		{"abc\xf0\x9f\x98\x80def\n" + long, 5, false, 3},
		{"abc\xf0\x9f\x98\x80def\n" + long, 7, false, 7},
		{"abc\xe2", math.MaxInt64, false, 3},
		{"abc\xe2", 4, false, 3},
		{"abc\xe2", math.MaxInt64, true, 4},
		{long + "€", 101, true, 100},
	} {
		f, err := os.Open(writeLog(t, tc.log))
		if err != nil {
			t.Fatal(err)
		}
		got, err := logTextStart(f, tc.offset, tc.final)
		f.Close()
		if err != nil || got != tc.want {
			t.Errorf("%q from %d (final %v): %d, %v; want %d", tc.log, tc.offset, tc.final, got, err, tc.want)
		}
	}
}
