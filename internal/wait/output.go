package wait

import (
	"bytes"
	"errors"
	"io"
	"unicode/utf8"

	"procmon/internal/logtext"
)

// OutputMatcher finds a literal in the text of a stream fed in arbitrary
// chunks: the text package logtext defines, in which each byte that
// begins no UTF-8 character reads as U+FFFD, the text that logs shows.
// The search is a Knuth-Morris-Pratt automaton over that text: its memory
// of the stream is how long a prefix of the literal the text currently
// ends with, the undecided bytes that may begin a character, and where
// the stream's last few units began, so it never re-reads the stream.
type OutputMatcher struct {
	pattern  []byte
	fail     []int // fail[i]: longest proper border of pattern[:i+1]
	state    int   // length of the pattern prefix the text ends with
	consumed int64
	found    bool
	offset   int64
	buf      []byte // FeedFrom's read buffer, kept across calls
	// pending holds the stream's last bytes while they are undecided: the
	// start of a character whose remaining bytes have not been fed.
	pending []byte
	// starts is a ring of the stream offsets of the last units, indexed
	// by the count of units seen: a match is as many units as the literal
	// has characters, so it begins where the unit that many back did.
	// Only a literal that holds U+FFFD needs it: a match of any other
	// holds no byte shown as U+FFFD, so it is as long in the stream as in
	// the text.
	starts []int64
	units  int64
	// never is set for a literal that is not valid UTF-8, which no text
	// holds.
	never bool
}

// NewOutputMatcher returns a matcher for text, compared byte for byte
// with the stream's text. An empty text (which Validate refuses) matches
// at offset 0; one that is not valid UTF-8 (which Validate refuses too)
// never matches.
func NewOutputMatcher(text string) *OutputMatcher {
	p := []byte(text)
	fail := make([]int, len(p))
	for i, k := 1, 0; i < len(p); i++ {
		for k > 0 && p[i] != p[k] {
			k = fail[k-1]
		}
		if p[i] == p[k] {
			k++
		}
		fail[i] = k
	}
	m := &OutputMatcher{pattern: p, fail: fail, never: !utf8.Valid(p)}
	if bytes.Contains(p, []byte(logtext.Replacement)) {
		m.starts = make([]int64, utf8.RuneCount(p))
	}
	if len(p) == 0 {
		m.found = true
	}
	return m
}

// Feed scans the next chunk of the stream, which may still grow: bytes at
// its end that may begin a character wait for the next chunk, or for End.
// Once the text has been found, Feed keeps returning the offset of that
// first match (the stream offset of its first byte, which is where logs
// shows it) and only counts further bytes.
func (m *OutputMatcher) Feed(chunk []byte) (offset int64, found bool) {
	return m.feed(chunk, false)
}

// End scans the undecided bytes at the end of a stream that has ended
// (each shows as U+FFFD). Nothing may be fed after it.
func (m *OutputMatcher) End() (offset int64, found bool) {
	return m.feed(nil, true)
}

func (m *OutputMatcher) feed(chunk []byte, ended bool) (int64, bool) {
	at := m.consumed // the stream offset of chunk[0]
	m.consumed += int64(len(chunk))
	if m.found {
		return m.offset, true
	}
	if m.never {
		return 0, false
	}
	if np := len(m.pending); np > 0 {
		// Decide the pending units with the chunk's first bytes: a unit
		// that starts among them ends within 4 bytes.
		take := min(len(chunk), utf8.UTFMax)
		joined := append(append(make([]byte, 0, np+take), m.pending...), chunk[:take]...)
		joinedEnded := ended && take == len(chunk)
		base := at - int64(np)
		i := 0
		for i < np {
			n, _ := logtext.Unit(joined[i:], joinedEnded)
			if n == 0 {
				// Still undecided, so the whole chunk is in joined.
				m.pending = append(m.pending[:0], joined[i:]...)
				return 0, false
			}
			if m.scanUnit(joined[i:i+n], base+int64(i)) {
				return m.offset, true
			}
			i += n
		}
		m.pending = m.pending[:0]
		chunk = chunk[i-np:]
		at += int64(i - np)
	}
	for i := 0; i < len(chunk); {
		if m.starts == nil && chunk[i] < utf8.RuneSelf {
			// ASCII is its own text, one unit a byte: scanned in this loop
			// rather than a unit at a time (on an ASCII log, 500 MB/s
			// against 350 on this 2-core machine, as fast as before the
			// text had units).
			p, k := m.pattern, m.state
			for ; i < len(chunk) && chunk[i] < utf8.RuneSelf; i++ {
				b := chunk[i]
				for k > 0 && b != p[k] {
					k = m.fail[k-1]
				}
				if b == p[k] {
					k++
				}
				if k == len(p) {
					m.found = true
					m.offset = at + int64(i) + 1 - int64(len(p))
					m.state = k
					return m.offset, true
				}
			}
			m.state = k
			continue
		}
		n, _ := logtext.Unit(chunk[i:], ended)
		if n == 0 {
			m.pending = append(m.pending[:0], chunk[i:]...)
			break
		}
		if m.scanUnit(chunk[i:i+n], at+int64(i)) {
			return m.offset, true
		}
		i += n
	}
	return 0, false
}

// scanUnit runs the automaton over the text of the unit u, which begins
// at stream offset start, and says whether the literal ends with it. A
// valid literal in valid text begins and ends at character boundaries, so
// a match ends at the end of a unit.
func (m *OutputMatcher) scanUnit(u []byte, start int64) bool {
	if m.starts == nil {
		return m.scanPlain(logtext.UnitText(u), start)
	}
	ring := int64(len(m.starts))
	m.starts[m.units%ring] = start
	m.units++
	p, k := m.pattern, m.state
	for _, b := range logtext.UnitText(u) {
		for k > 0 && b != p[k] {
			k = m.fail[k-1]
		}
		if b == p[k] {
			k++
		}
		if k == len(p) {
			m.found = true
			m.offset = m.starts[m.units%ring]
			m.state = k
			return true
		}
	}
	m.state = k
	return false
}

// scanPlain runs the automaton over text that begins at stream offset
// start, for a literal without U+FFFD: a match of it holds no byte shown
// as U+FFFD, so it is as long in the stream as in the text, and begins
// len(literal) bytes before its end. text is whole characters, or the
// U+FFFD of one byte, in which no such match can end.
func (m *OutputMatcher) scanPlain(text []byte, start int64) bool {
	p, k := m.pattern, m.state
	for i, b := range text {
		for k > 0 && b != p[k] {
			k = m.fail[k-1]
		}
		if b == p[k] {
			k++
		}
		if k == len(p) {
			m.found = true
			m.offset = start + int64(i) + 1 - int64(len(p))
			m.state = k
			return true
		}
	}
	m.state = k
	return false
}

// Consumed returns the number of bytes fed so far.
func (m *OutputMatcher) Consumed() int64 { return m.consumed }

// Found returns the offset of the first match and whether there is one.
func (m *OutputMatcher) Found() (offset int64, found bool) { return m.offset, m.found }

// feedChunk is how much FeedFrom reads at a time.
const feedChunk = 64 << 10

// FeedFrom feeds the matcher from r, starting at Consumed() and reading to
// the end of r, so a log that only grows is scanned once however often a
// waiter wakes. It stops early when the text is found. ended says the log
// will not grow: its undecided last bytes are scanned too (see End).
func (m *OutputMatcher) FeedFrom(r io.ReaderAt, ended bool) (offset int64, found bool, err error) {
	if m.found {
		return m.offset, true, nil
	}
	if m.buf == nil {
		// Kept, because a waiter on a chatty service calls FeedFrom on
		// every wake-up.
		m.buf = make([]byte, feedChunk)
	}
	buf := m.buf
	for {
		n, err := r.ReadAt(buf, m.consumed)
		if n > 0 {
			if off, ok := m.Feed(buf[:n]); ok {
				return off, true, nil
			}
		}
		if errors.Is(err, io.EOF) {
			if ended {
				off, ok := m.End()
				return off, ok, nil
			}
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
	}
}
