package wait

import (
	"errors"
	"io"
)

// OutputMatcher finds a literal in a stream fed in arbitrary chunks. It is
// a Knuth-Morris-Pratt automaton: its whole memory of the stream is how
// long a prefix of the literal the stream currently ends with, which is
// exactly the tail needed to straddle a chunk boundary. It never needs to
// re-read the stream from its start.
type OutputMatcher struct {
	pattern  []byte
	fail     []int // fail[i]: longest proper border of pattern[:i+1]
	state    int   // length of the pattern prefix the stream ends with
	consumed int64
	found    bool
	offset   int64
	buf      []byte // FeedFrom's read buffer, kept across calls
}

// NewOutputMatcher returns a matcher for text, compared byte for byte. An
// empty text (which Validate refuses) matches at offset 0.
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
	m := &OutputMatcher{pattern: p, fail: fail}
	if len(p) == 0 {
		m.found = true
	}
	return m
}

// Feed scans the next chunk of the stream. Once the text has been found,
// Feed keeps returning the offset of that first match (the byte offset of
// its first byte in the whole stream) and only counts further bytes.
func (m *OutputMatcher) Feed(chunk []byte) (offset int64, found bool) {
	start := m.consumed
	m.consumed += int64(len(chunk))
	if m.found {
		return m.offset, true
	}
	p, k := m.pattern, m.state
	for i, b := range chunk {
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
			return m.offset, true
		}
	}
	m.state = k
	return 0, false
}

// Consumed returns the number of bytes fed so far.
func (m *OutputMatcher) Consumed() int64 { return m.consumed }

// Found returns the offset of the first match and whether there is one.
func (m *OutputMatcher) Found() (offset int64, found bool) { return m.offset, m.found }

// feedChunk is how much FeedFrom reads at a time.
const feedChunk = 64 << 10

// FeedFrom feeds the matcher from r, starting at Consumed() and reading to
// the end of r, so a log that only grows is scanned once however often a
// waiter wakes. It stops early when the text is found.
func (m *OutputMatcher) FeedFrom(r io.ReaderAt) (offset int64, found bool, err error) {
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
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
	}
}
