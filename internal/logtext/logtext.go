// Package logtext owns the one text procmon shows of a monitor's redacted
// output stream: the text that `procmon logs` returns (and --follow
// writes), that output_bytes and output_sha256 describe, that the log tail
// of a wait's evidence quotes, and that `procmon wait --output` searches.
//
// The stream is whatever bytes the service wrote, redacted; nothing makes
// it UTF-8. It is read as a sequence of units, each a valid UTF-8
// character or a single byte that begins none, and its text is the text
// of its units in order:
//
//   - a character is itself, so a stream that is valid UTF-8 is its own
//     text byte for byte (CR, LF, NUL and U+FFFD included);
//   - any other byte is U+FFFD, the three bytes EF BF BD, one for each such
//     byte (as Go's []rune conversion and encoding/json count them). A
//     U+FFFD in the text stands for such a byte or for one the service
//     printed, and a search for U+FFFD finds both.
//
// Offsets are always offsets of the stored stream, never of the text. A
// window is a run of whole units, so its stream bytes [Offset, NextOffset)
// and its text correspond exactly, and the windows of a cursor tile the
// stream with no gap or overlap. A window asked to start inside a
// character starts where that character ends: its Offset says so. At the
// end of a stream that may still grow, 1 to 3 bytes that begin a
// character whose remaining bytes have not been written are undecided:
// no window and no search includes them until the rest of the character
// arrives, or the stream ends and each of them is shown as U+FFFD.
//
// One U+FFFD per byte, and not one per run of bad bytes (as
// strings.ToValidUTF8 does): a unit is decided by the 4 bytes from its
// start, so the text of a stream is the same however it is cut into
// windows or fed to a search, and a window that holds a bad byte holds
// its whole text. U+FFFD rather than an escape such as \xff: the text stays
// valid UTF-8 that JSON carries unchanged, and an escape would look exactly
// like the same characters printed by the service.
//
// The package only computes; it never reads files.
package logtext

import (
	"math"
	"sort"
	"unicode/utf8"
)

// Replacement is the text of a byte that begins no UTF-8 character.
const Replacement = "\uFFFD"

// Unit returns the length n in the stream of the unit that p begins with,
// and the length of its text. It returns 0, 0 when p is empty, and when p
// is the start of a character whose remaining bytes are not in p while
// the stream may still bring them (ended is false). The caller must pass
// at least 4 bytes, or every byte up to the stream's end.
func Unit(p []byte, ended bool) (n, width int) {
	if len(p) == 0 {
		return 0, 0
	}
	if p[0] < utf8.RuneSelf {
		return 1, 1
	}
	if !ended && !utf8.FullRune(p) {
		return 0, 0
	}
	r, size := utf8.DecodeRune(p)
	if r == utf8.RuneError && size == 1 {
		return 1, len(Replacement)
	}
	return size, size
}

// replacement is Replacement, for UnitText to return without allocating.
var replacement = []byte(Replacement)

// UnitText returns the text of the unit u, as Unit cut it: u itself, or
// U+FFFD for a byte that begins no character. The result must not be
// modified.
func UnitText(u []byte) []byte {
	if len(u) == 1 && u[0] >= utf8.RuneSelf {
		return replacement
	}
	return u
}

// AppendUnit appends the text of the unit u, as Unit cut it, to dst.
func AppendUnit(dst, u []byte) []byte { return append(dst, UnitText(u)...) }

// Text is the text of the stream bytes p, ended or not, and how many
// bytes of p it shows: all of them, unless the stream may still grow and
// p ends with undecided bytes.
func Text(p []byte, ended bool) (text []byte, used int) {
	text = make([]byte, 0, len(p))
	for used < len(p) {
		n, _ := Unit(p[used:], ended)
		if n == 0 {
			break
		}
		text = AppendUnit(text, p[used:used+n])
		used += n
	}
	return text, used
}

// Margin is how far past the bytes a window shows its reader must hold,
// and how far before its start: enough to decide the units at both edges.
const Margin = 2 * utf8.UTFMax

// Held is the part of a stream its reader holds: Bytes are the stream's
// bytes from offset Base, of a stream Size bytes long so far. Ended says
// the stream will not grow.
type Held struct {
	Bytes []byte
	Base  int64
	Size  int64
	Ended bool
}

// Window is a run of whole units of a stream and their text.
type Window struct {
	Text []byte
	// Offset and NextOffset bound the window's bytes in the stream.
	Offset, NextOffset int64
	// Cut says the window left out stream bytes that were asked for:
	// the end of the stream for want of room, or the part of a character
	// that was asked to start the window.
	Cut bool
	// Undecided says the window stopped before undecided bytes at the end
	// of a stream that may still grow.
	Undecided bool
	// replaced holds the index in Text of each U+FFFD that stands for one
	// byte of the stream, in order.
	replaced []int
}

// StreamOffset returns the stream offset of the text's byte i, which must
// begin a unit (or be len(Text)).
func (w *Window) StreamOffset(i int) int64 {
	n := sort.SearchInts(w.replaced, i)
	return w.Offset + int64(i) - int64(n)*int64(len(Replacement)-1)
}

// Span is how many stream bytes past one edge of a window of at most
// maxBytes of text its reader may need: maxBytes (a unit's text is never
// shorter than its bytes) and the Margin. A bound is the caller's, up to
// the largest int64, so the sum saturates there rather than overflow.
func Span(maxBytes int64) int64 {
	maxBytes = max(maxBytes, 0)
	if maxBytes > math.MaxInt64-Margin {
		return math.MaxInt64
	}
	return maxBytes + Margin
}

// FromRange is the part of a stream of size bytes that From needs held,
// [lo, hi), for a window at offset of at most maxBytes of text.
func FromRange(offset, maxBytes, size int64) (lo, hi int64) {
	offset = min(max(offset, 0), size)
	return max(offset-Margin, 0), offset + min(Span(maxBytes), size-offset)
}

// LastRange is the part of a stream of size bytes that Last needs held,
// [lo, hi), for a window of at most maxBytes of text at its end.
func LastRange(maxBytes, size int64) (lo, hi int64) {
	return size - min(Span(maxBytes), size), size
}

// From returns the window of at most maxBytes of text that begins at
// offset (past the end of the stream: at its end), or at the end of the
// character offset falls inside; h holds FromRange of the stream.
func From(h Held, offset, maxBytes int64) Window {
	offset = min(max(offset, 0), h.Size)
	start, decided := h.unitStart(offset)
	if !decided {
		return Window{Offset: offset, NextOffset: offset, Undecided: true}
	}
	w := h.fill(start, maxBytes)
	w.Cut = w.Cut || start > offset
	return w
}

// Last returns the window of at most maxBytes of text that ends where the
// stream does (before its undecided bytes); h holds LastRange of it.
func Last(h Held, maxBytes int64) Window {
	// Counted back from the end of the decided units: counted from the
	// stream's end, the bytes held back took room from a character that
	// fits (abc😀 and a character's first 3 bytes showed nothing in 4).
	end := h.decidedEnd()
	first := end - min(max(maxBytes, 0), end)
	start, decided := h.unitStart(first)
	if !decided {
		return Window{Offset: first, NextOffset: first, Cut: first > 0, Undecided: true}
	}
	// A byte shown as U+FFFD takes 3 bytes of text: leave out whole units
	// from the front until the rest fits.
	width := int64(0)
	for p := start; p < h.Size; {
		n, w := Unit(h.at(p), h.Ended)
		if n == 0 {
			break
		}
		width += int64(w)
		p += int64(n)
	}
	for width > maxBytes {
		n, w := Unit(h.at(start), h.Ended)
		width -= int64(w)
		start += int64(n)
	}
	w := h.fill(start, maxBytes)
	w.Cut = start > 0
	return w
}

// StartOfRange is the part of a stream of size bytes that StartOf needs
// held, [lo, hi), for the unit that holds byte p.
func StartOfRange(p, size int64) (lo, hi int64) {
	p = min(max(p, 0), size)
	return max(p-Margin, 0), p + min(Margin, size-p)
}

// StartOf returns where the unit that holds the stream's byte p begins:
// p itself when a unit begins there, else the start of the character p
// falls inside, whole or not yet. At the stream's end (or past it), it is
// where the decided units end: before the bytes of a character not yet
// whole. A window from there shows all of the character that holds p, so
// a start computed in stream bytes (a time mark, the end) loses none of
// it. h holds StartOfRange of the stream.
func StartOf(h Held, p int64) int64 {
	p = min(max(p, 0), h.Size)
	if p < h.Size && !isContinuation(h.at(p)[0]) {
		return p
	}
	for q := p - 1; q >= max(p-(utf8.UTFMax-1), h.Base); q-- {
		if isContinuation(h.at(q)[0]) {
			continue
		}
		if n, _ := Unit(h.at(q), h.Ended); n == 0 || q+int64(n) > p {
			return q
		}
		break
	}
	return p
}

// at returns the held bytes from stream offset p.
func (h Held) at(p int64) []byte { return h.Bytes[p-h.Base:] }

// unitStart returns the first unit start at or after p (at most the
// stream's end). A continuation byte is a unit of its own unless a
// character that begins at most 3 bytes before it holds it; decided is
// false when that character is an undecided one.
func (h Held) unitStart(p int64) (start int64, decided bool) {
	if p < h.Size && !isContinuation(h.at(p)[0]) {
		return p, true
	}
	// A continuation byte, or the end of a stream, which a character not
	// yet whole may cross.
	for q := p - 1; q >= max(p-(utf8.UTFMax-1), h.Base); q-- {
		if isContinuation(h.at(q)[0]) {
			continue
		}
		n, _ := Unit(h.at(q), h.Ended)
		switch {
		case n == 0:
			return p, false
		case q+int64(n) > p:
			return q + int64(n), true
		}
		break
	}
	return p, true
}

// decidedEnd returns where the decided units of the stream end: before
// the 1 to 3 bytes that begin a character not yet whole at the end of a
// stream that may still grow, else at its end.
func (h Held) decidedEnd() int64 {
	for q := h.Size - 1; q >= max(h.Size-(utf8.UTFMax-1), h.Base); q-- {
		if isContinuation(h.at(q)[0]) {
			continue
		}
		if n, _ := Unit(h.at(q), h.Ended); n == 0 {
			return q
		}
		break
	}
	return h.Size
}

// fill returns the window of whole units from start with at most
// maxBytes of text.
func (h Held) fill(start, maxBytes int64) Window {
	w := Window{Offset: start}
	p := start
	for p < h.Size {
		u := h.at(p)
		n, width := Unit(u, h.Ended)
		if n == 0 {
			w.Undecided = true
			break
		}
		if int64(len(w.Text)+width) > maxBytes {
			w.Cut = true
			break
		}
		if width != n {
			w.replaced = append(w.replaced, len(w.Text))
		}
		w.Text = AppendUnit(w.Text, u[:n])
		p += int64(n)
	}
	w.NextOffset = p
	return w
}

func isContinuation(b byte) bool { return b&0xC0 == 0x80 }
