package logtext

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// held holds all of stream.
func held(stream string, ended bool) Held {
	return Held{Bytes: []byte(stream), Size: int64(len(stream)), Ended: ended}
}

const fffd = "\uFFFD"

func TestFromEdges(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stream   string
		ended    bool
		offset   int64
		max      int64
		text     string
		off, nxt int64
		cut, und bool
	}{
		{"inside a 2-byte character", "aéb", true, 2, 10, "b", 3, 4, true, false},
		{"inside a 3-byte character", "a中b", true, 2, 10, "b", 4, 5, true, false},
		{"last byte of a 3-byte character", "a中b", true, 3, 10, "b", 4, 5, true, false},
		{"inside a 4-byte character", "a🙂b", true, 3, 10, "b", 5, 6, true, false},
		{"end before a 4-byte character", "a🙂b", true, 0, 4, "a", 0, 1, true, false},
		{"invalid byte at the start", "\xffab", true, 0, 4, fffd + "a", 0, 2, true, false},
		{"invalid byte in the middle", "a\x80b", true, 1, 10, fffd + "b", 1, 3, false, false},
		{"continuation byte no character holds", "a\x80\x80b", true, 2, 10, fffd + "b", 2, 4, false, false},
		{"invalid byte at the end", "ab\xff", false, 0, 10, "ab" + fffd, 0, 3, false, false},
		{"bad bytes never pass max_bytes", "\xff\xff\xff", true, 0, 4, fffd, 0, 1, true, false},
		{"a truncated sequence is one unit per byte", "a\xe4\xb8b", true, 0, 10, "a" + fffd + fffd + "b", 0, 4, false, false},
		{"offset inside a truncated sequence", "a\xe4\xb8b", true, 2, 10, fffd + "b", 2, 4, false, false},
		{"incomplete at the end of a live stream", "ab\xe4\xb8", false, 0, 10, "ab", 0, 2, false, true},
		{"offset inside it, live", "ab\xe4\xb8", false, 3, 10, "", 3, 3, false, true},
		{"incomplete at the end of an ended stream", "ab\xe4\xb8", true, 0, 10, "ab" + fffd + fffd, 0, 4, false, false},
		{"offset inside it, ended", "ab\xe4\xb8", true, 3, 10, fffd, 3, 4, false, false},
		{"CRLF untouched", "a\r\nb\r\n", true, 0, 10, "a\r\nb\r\n", 0, 6, false, false},
		{"U+FFFD printed is itself", "a" + fffd, true, 0, 10, "a" + fffd, 0, 4, false, false},
		{"past the end", "ab", true, 9, 10, "", 2, 2, false, false},
	} {
		w := From(held(tc.stream, tc.ended), tc.offset, tc.max)
		if string(w.Text) != tc.text || w.Offset != tc.off || w.NextOffset != tc.nxt || w.Cut != tc.cut || w.Undecided != tc.und {
			t.Errorf("%s: From(%q, %d, %d) = %q [%d,%d) cut %v undecided %v; want %q [%d,%d) cut %v undecided %v",
				tc.name, tc.stream, tc.offset, tc.max, w.Text, w.Offset, w.NextOffset, w.Cut, w.Undecided,
				tc.text, tc.off, tc.nxt, tc.cut, tc.und)
		}
	}
}

func TestLastEdges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream string
		ended  bool
		max    int64
		text   string
		off    int64
	}{
		{"starts after a character it would split", "a中b", true, 3, "b", 4},
		{"a bad byte that does not fit is left out", "\xffab", true, 4, "ab", 1},
		{"a bad byte that fits", "\xffab", true, 5, fffd + "ab", 0},
		{"bad bytes at the end", "ab\xff\xff", true, 6, fffd + fffd, 2},
		{"live: the incomplete end is held back", "ab\xf0\x9f\x99", false, 4, "ab", 0},
		{"live: the held bytes take no room", "abc\xf0\x9f\x98\x80\xf0\x9f\x98", false, 4, "\U0001F600", 3},
		{"live: a window of one byte", "ab\xf0\x9f\x99", false, 1, "b", 1},
		{"ended: it shows", "ab\xf0\x9f\x99", true, 10, "b" + fffd + fffd + fffd, 1},
	} {
		w := Last(held(tc.stream, tc.ended), tc.max)
		if string(w.Text) != tc.text || w.Offset != tc.off || w.Cut != (tc.off > 0) {
			t.Errorf("%s: Last(%q, %d) = %q at %d cut %v; want %q at %d", tc.name, tc.stream, tc.max, w.Text, w.Offset, w.Cut, tc.text, tc.off)
		}
	}
}

// pieces are what random streams are made of: every kind of unit, and
// the parts of characters.
var pieces = []string{"a", "\n", "\r\n", "é", "中", "🙂", fffd, "\xff", "\x80", "\xc3", "\xe4\xb8", "\xf0\x9f", "\xf0\x9f\x99", "\xed\xa0\x80", "\xc0\xaf"}

func randomStream(rng *rand.Rand, n int) string {
	var s []byte
	for range n {
		s = append(s, pieces[rng.IntN(len(pieces))]...)
	}
	return string(s)
}

// TestTextIsRuneConversion pins the text of an ended stream to Go's own
// conversion, which replaces each byte that begins no character.
func TestTextIsRuneConversion(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		s := randomStream(rng, rng.IntN(12))
		text, used := Text([]byte(s), true)
		if want := string([]rune(s)); string(text) != want || used != len(s) {
			t.Fatalf("Text(%q) = %q (%d bytes used); want %q", s, text, used, want)
		}
		// A live stream shows the same, less its undecided end.
		live, n := Text([]byte(s), false)
		if want := string([]rune(s[:n])); string(live) != want {
			t.Fatalf("live Text(%q) = %q; want %q", s, live, want)
		}
		if rest := s[n:]; len(rest) > 3 || len(rest) > 0 && fullRune(rest) {
			t.Fatalf("live Text(%q) held back %q, which is decided", s, rest)
		}
	}
}

func fullRune(s string) bool {
	n, _ := Unit([]byte(s), false)
	return n > 0
}

// TestWindowsTile cuts random streams into windows of random sizes at
// random offsets and checks that they tile the stream's text, and that a
// window's text never passes its bound.
func TestWindowsTile(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 3000 {
		s := randomStream(rng, rng.IntN(20))
		ended := rng.IntN(2) == 0
		want, used := Text([]byte(s), ended)
		h := held(s, ended)
		var got []byte
		off := int64(0)
		for {
			max := int64(4 + rng.IntN(8))
			w := From(h, off, max)
			if int64(len(w.Text)) > max {
				t.Fatalf("%q at %d: %d bytes of text, bound %d", s, off, len(w.Text), max)
			}
			if w.Offset != off {
				t.Fatalf("%q: window asked at a unit start %d begins at %d", s, off, w.Offset)
			}
			if w.StreamOffset(len(w.Text)) != w.NextOffset {
				t.Fatalf("%q at %d: StreamOffset of the end %d; want %d", s, off, w.StreamOffset(len(w.Text)), w.NextOffset)
			}
			got = append(got, w.Text...)
			if w.NextOffset == off {
				break
			}
			off = w.NextOffset
		}
		if string(got) != string(want) || off != int64(used) {
			t.Fatalf("%q (ended %v): windows show %q up to %d; want %q up to %d", s, ended, got, off, want, used)
		}
	}
}

// TestHugeBoundsSaturate: a window's bound is the caller's, up to the
// largest int64; the range to hold never overflows past the stream, and
// the window is the whole of what is there.
func TestHugeBoundsSaturate(t *testing.T) {
	const stream = "0123456789abcdef"
	size := int64(len(stream))
	for _, max := range []int64{math.MaxInt64, math.MaxInt64 - Margin, math.MaxInt64 - 15, math.MaxInt64/2 + 1} {
		for _, off := range []int64{0, 5, size, size + 1, math.MaxInt64} {
			lo, hi := FromRange(off, max, size)
			if lo < 0 || hi > size || lo > hi {
				t.Fatalf("FromRange(%d, %d, %d) = [%d, %d); want inside [0, %d]", off, max, size, lo, hi, size)
			}
			w := From(held(stream, true), off, max)
			if want := stream[min(off, size):]; string(w.Text) != want || w.Cut {
				t.Errorf("From(%d, %d) = %q cut %v; want %q", off, max, w.Text, w.Cut, want)
			}
		}
		lo, hi := LastRange(max, size)
		if lo != 0 || hi != size {
			t.Fatalf("LastRange(%d, %d) = [%d, %d); want [0, %d)", max, size, lo, hi, size)
		}
		if w := Last(held(stream, true), max); string(w.Text) != stream || w.Cut {
			t.Errorf("Last(%d) = %q cut %v; want all of it", max, w.Text, w.Cut)
		}
	}
	if n := Span(math.MaxInt64); n != math.MaxInt64 {
		t.Errorf("Span(MaxInt64) = %d; want it saturated", n)
	}
}

func TestStartOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream string
		ended  bool
		p      int64
		want   int64
	}{
		{"a unit start", "a中b", true, 1, 1},
		{"inside a 3-byte character", "a中b", true, 2, 1},
		{"its last byte", "a中b", true, 3, 1},
		{"inside a 4-byte character", "abc🙂d", true, 5, 3},
		{"a continuation byte no character holds", "a\\x80\\x80b", true, 2, 2},
		{"after a truncated sequence", "a\\xe4\\xb8b", true, 3, 3},
		{"inside a character not yet whole", "abc\\xf0\\x9f", false, 4, 3},
		{"the end, before a character not yet whole", "abc\\xe2", false, 4, 3},
		{"past the end, before it", "abc\\xf0\\x9f\\x98", false, 99, 3},
		{"the end of an ended stream", "abc\\xe2", true, 4, 4},
		{"the end after a whole character", "ab中", false, 5, 5},
		{"the end after a bad byte", "ab\\xff", false, 3, 3},
		{"before the start", "abc", true, -1, 0},
	} {
		s := tc.stream
		if u, err := strconv.Unquote(`"` + s + `"`); err == nil {
			s = u
		}
		lo, hi := StartOfRange(tc.p, int64(len(s)))
		h := Held{Bytes: []byte(s)[lo:hi], Base: lo, Size: int64(len(s)), Ended: tc.ended}
		if got := StartOf(h, tc.p); got != tc.want {
			t.Errorf("%s: StartOf(%q, %d) = %d; want %d", tc.name, s, tc.p, got, tc.want)
		}
	}
}

// TestStartOfShowsTheWholeCharacter: a window from StartOf of any byte
// shows the text from the unit that holds it, which ends with the text
// of the window from that byte itself, for random streams.
func TestStartOfShowsTheWholeCharacter(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 3000 {
		s := randomStream(rng, rng.IntN(12))
		ended := rng.IntN(2) == 0
		h := held(s, ended)
		for p := int64(0); p <= int64(len(s)); p++ {
			start := StartOf(h, p)
			from := From(h, start, 1<<20)
			if start > p || from.Offset != start {
				t.Fatalf("%q (ended %v): StartOf(%d) = %d, which is not a unit start at or before it (a window there begins at %d)", s, ended, p, start, from.Offset)
			}
			if at := From(h, p, 1<<20); !strings.HasSuffix(string(from.Text), string(at.Text)) || from.NextOffset != at.NextOffset && !at.Undecided {
				t.Fatalf("%q (ended %v): from StartOf(%d) = %d the text is %q; from %d, %q", s, ended, p, start, from.Text, p, at.Text)
			}
		}
	}
}
