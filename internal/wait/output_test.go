package wait

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// feedAll feeds chunks in order and returns the first report of a match.
func feedAll(m *OutputMatcher, chunks ...string) (int64, bool) {
	var off int64
	var found bool
	for _, c := range chunks {
		if o, ok := m.Feed([]byte(c)); ok && !found {
			off, found = o, true
		}
	}
	return off, found
}

func TestOutputMatcherSplitAtEveryOffset(t *testing.T) {
	const stream = "booting\nListen on :80 failed\nListening on :8080\nListening again\n"
	const text = "Listening"
	want := int64(strings.Index(stream, text))
	for i := 0; i <= len(stream); i++ {
		m := NewOutputMatcher(text)
		off, ok := feedAll(m, stream[:i], stream[i:])
		if !ok || off != want {
			t.Fatalf("split at %d: (%d, %v); want (%d, true)", i, off, ok, want)
		}
		if m.Consumed() != int64(len(stream)) {
			t.Fatalf("split at %d: consumed %d; want %d", i, m.Consumed(), len(stream))
		}
	}
	// Three pieces, the match cut twice.
	for i := 0; i <= len(stream); i++ {
		for j := i; j <= len(stream); j++ {
			off, ok := feedAll(NewOutputMatcher(text), stream[:i], stream[i:j], stream[j:])
			if !ok || off != want {
				t.Fatalf("split at %d,%d: (%d, %v); want (%d, true)", i, j, off, ok, want)
			}
		}
	}
}

func TestOutputMatcherFirstFeed(t *testing.T) {
	m := NewOutputMatcher("ready")
	off, ok := m.Feed([]byte("x ready y"))
	if !ok || off != 2 {
		t.Fatalf("(%d, %v); want (2, true)", off, ok)
	}
	// Later feeds keep reporting the first match and keep counting.
	off, ok = m.Feed([]byte("ready again"))
	if !ok || off != 2 || m.Consumed() != 20 {
		t.Fatalf("after more output: (%d, %v), consumed %d; want (2, true), 20", off, ok, m.Consumed())
	}
	if off, ok := m.Found(); !ok || off != 2 {
		t.Fatalf("Found() = (%d, %v); want (2, true)", off, ok)
	}
}

func TestOutputMatcherNoMatch(t *testing.T) {
	m := NewOutputMatcher("Listening")
	for _, c := range []string{"Listen", "xin", "", "g?", "Listenin"} {
		if _, ok := m.Feed([]byte(c)); ok {
			t.Fatalf("found a match in %q", c)
		}
	}
	if m.Consumed() != 19 {
		t.Fatalf("consumed %d; want 19", m.Consumed())
	}
	// The pending "Listenin" completes with the next byte.
	if off, ok := m.Feed([]byte("g")); !ok || off != 11 {
		t.Fatalf("(%d, %v); want (11, true)", off, ok)
	}
}

func TestOutputMatcherSelfOverlap(t *testing.T) {
	for _, tc := range []struct{ text, stream string }{
		{"aab", "aaab"},
		{"aab", "aaaaaab"},
		{"abab", "ababab"},
		{"abab", "abaabab"},
		{"aaa", "aabaaa"},
		{"abcabd", "abcabcabd"},
	} {
		want := int64(strings.Index(tc.stream, tc.text))
		for i := 0; i <= len(tc.stream); i++ {
			for j := i; j <= len(tc.stream); j++ {
				off, ok := feedAll(NewOutputMatcher(tc.text), tc.stream[:i], tc.stream[i:j], tc.stream[j:])
				if !ok || off != want {
					t.Fatalf("%q in %q split at %d,%d: (%d, %v); want (%d, true)", tc.text, tc.stream, i, j, off, ok, want)
				}
			}
		}
		// One byte at a time.
		m := NewOutputMatcher(tc.text)
		var chunks []string
		for _, b := range []byte(tc.stream) {
			chunks = append(chunks, string(b))
		}
		if off, ok := feedAll(m, chunks...); !ok || off != want {
			t.Fatalf("%q in %q bytewise: (%d, %v); want (%d, true)", tc.text, tc.stream, off, ok, want)
		}
	}
}

func TestOutputMatcherUTF8SplitInsideRune(t *testing.T) {
	const stream = "état: prêt ✓ démarré"
	const text = "prêt ✓"
	want := int64(strings.Index(stream, text))
	for i := 0; i <= len(stream); i++ {
		if off, ok := feedAll(NewOutputMatcher(text), stream[:i], stream[i:]); !ok || off != want {
			t.Fatalf("split at %d: (%d, %v); want (%d, true)", i, off, ok, want)
		}
	}
}

// TestOutputMatcherRandom compares with bytes.Index on random streams over
// a two-letter alphabet, where partial matches are everywhere.
func TestOutputMatcherRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab"[rng.IntN(2)]
		}
		return b
	}
	for range 5000 {
		text := randBytes(1 + rng.IntN(6))
		stream := randBytes(rng.IntN(40))
		want := int64(bytes.Index(stream, text))
		m := NewOutputMatcher(string(text))
		var off int64 = -1
		for rest := stream; len(rest) > 0; {
			n := rng.IntN(len(rest) + 1)
			if o, ok := m.Feed(rest[:n]); ok && off < 0 {
				off = o
			}
			rest = rest[n:]
		}
		if off != want {
			t.Fatalf("%q in %q: offset %d; want %d", text, stream, off, want)
		}
	}
}

func TestOutputMatcherEmptyText(t *testing.T) {
	if off, ok := NewOutputMatcher("").Feed(nil); !ok || off != 0 {
		t.Fatalf("(%d, %v); want (0, true)", off, ok)
	}
}

// recordingReaderAt remembers the lowest offset read since reset.
type recordingReaderAt struct {
	r      io.ReaderAt
	lowest int64
}

func (r *recordingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if r.lowest < 0 || off < r.lowest {
		r.lowest = off
	}
	return r.r.ReadAt(p, off)
}

func TestOutputMatcherFeedFromGrowingLog(t *testing.T) {
	name := filepath.Join(t.TempDir(), "output.log")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := strings.Repeat("noise line\n", 10000) + "Listen"
	if _, err := f.WriteString(head); err != nil {
		t.Fatal(err)
	}
	m := NewOutputMatcher("Listening")
	rec := &recordingReaderAt{r: f, lowest: -1}
	if _, ok, err := m.FeedFrom(rec, false); err != nil || ok {
		t.Fatalf("first scan: found %v, err %v; want neither", ok, err)
	}
	if m.Consumed() != int64(len(head)) {
		t.Fatalf("consumed %d; want %d", m.Consumed(), len(head))
	}
	if _, err := f.WriteString("ing on :8080\n"); err != nil {
		t.Fatal(err)
	}
	rec.lowest = -1
	off, ok, err := m.FeedFrom(rec, false)
	if err != nil || !ok || off != int64(len(head)-len("Listen")) {
		t.Fatalf("second scan: (%d, %v, %v); want (%d, true, nil)", off, ok, err, len(head)-len("Listen"))
	}
	if rec.lowest != int64(len(head)) {
		t.Fatalf("second scan read from %d; want only the new bytes from %d", rec.lowest, len(head))
	}
}

// TestOutputMatcherRendering searches the text logs shows: each byte that
// begins no character reads as U+FFFD, and the match offset is where the
// stream holds the text, not where the text does.
func TestOutputMatcherRendering(t *testing.T) {
	for _, tc := range []struct {
		stream, text string
		want         int64
	}{
		{"a\xffb ready", "ready", 4},                  // a bad byte before: stream offsets
		{"a\xff\xfeb", "a\uFFFD\uFFFDb", 0},           // bad bytes inside the match
		{"\x80x \uFFFDx", "\uFFFDx", 0},               // a bad byte and a printed U+FFFD read the same
		{"é\xe4\xb8(", "\uFFFD\uFFFD(", 2},            // a truncated character, byte by byte
		{"a\r\nb", "\r\n", 1},                         // CR LF untouched
		{"x\xf0\x9f\x99\x82 🙂", "🙂", 1},               // a whole 4-byte character
		{"\xf0\x9f\x99 🙂", "\uFFFD\uFFFD\uFFFD 🙂", 0}, // and one cut short
	} {
		for i := 0; i <= len(tc.stream); i++ {
			m := NewOutputMatcher(tc.text)
			off, ok := feedAll(m, tc.stream[:i], tc.stream[i:])
			if !ok {
				off, ok = m.End()
			}
			if !ok || off != tc.want {
				t.Fatalf("%q in %q split at %d: (%d, %v); want (%d, true)", tc.text, tc.stream, i, off, ok, tc.want)
			}
		}
	}
	// A byte of a character is not a character.
	if _, ok := feedAll(NewOutputMatcher("\xb8"), "中"); ok {
		t.Fatal("a text that is not UTF-8 matched inside a character")
	}
}

// TestOutputMatcherEndOfStream holds back the start of a character until
// the stream brings the rest of it, or ends.
func TestOutputMatcherEndOfStream(t *testing.T) {
	name := filepath.Join(t.TempDir(), "output.log")
	if err := os.WriteFile(name, []byte("ready \xe4\xb8"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := NewOutputMatcher("ready \uFFFD")
	if _, ok, err := m.FeedFrom(f, false); ok || err != nil {
		t.Fatalf("live: found %v, err %v; the last bytes may still become 中", ok, err)
	}
	if off, ok, err := m.FeedFrom(f, true); !ok || off != 0 || err != nil {
		t.Fatalf("ended: (%d, %v, %v); want (0, true, nil)", off, ok, err)
	}
	m = NewOutputMatcher("y 中")
	feedAll(m, "read", "y \xe4")
	if off, ok := m.Feed([]byte("\xb8\xad")); !ok || off != 4 {
		t.Fatalf("completed character: (%d, %v); want (4, true)", off, ok)
	}
}
