package state

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// Truncation reasons of a log window.
const (
	TruncCaptureLimit   = "capture_limit"
	TruncWindow         = "window"
	TruncIncompleteUTF8 = "incomplete_utf8"
)

// LogWindow is a bounded piece of a monitor's redacted output: the text of
// the stream's bytes [Offset, NextOffset). A window never splits a UTF-8
// sequence; invalid bytes from the child are shown as U+FFFD, and
// OutputBytes and OutputSHA256 describe exactly the text returned.
type LogWindow struct {
	Text         string
	Offset       int64
	NextOffset   int64
	StreamBytes  int64
	OutputBytes  int
	OutputSHA256 string
	// Window is set when the window left part of the stream out;
	// IncompleteUTF8 when a trailing partial sequence was held back.
	Window         bool
	IncompleteUTF8 bool
}

// ReadLogWindow reads a window of at most maxBytes of a monitor's output
// log: from offset when one is given, else the last maxBytes. final says
// the stream has ended, so a trailing partial sequence is shown (as
// U+FFFD) rather than held back for the bytes that complete it. The log is
// opened as OpenLog opens it: a link, a FIFO or a file of another user in
// its place is refused, never read.
func (d *Dir) ReadLogWindow(id string, offset *int64, maxBytes int64, final bool) (*LogWindow, error) {
	f, err := d.OpenLog(id)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLogWindow(f, offset, maxBytes, final)
}

func readLogWindow(f *os.File, offset *int64, maxBytes int64, final bool) (*LogWindow, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat output log: %w", err)
	}
	size := fi.Size()
	var start, end int64
	w := &LogWindow{StreamBytes: size}
	if offset != nil {
		start = min(*offset, size)
		end = min(start+maxBytes, size)
	} else {
		start = max(size-maxBytes, 0)
		end = size
	}
	// Read up to 3 bytes on each side, to see the sequences the edges cut.
	lo := max(start-3, 0)
	hi := min(end+3, size)
	buf := make([]byte, hi-lo)
	if _, err := f.ReadAt(buf, lo); err != nil && err != io.EOF {
		return nil, fmt.Errorf("read output log: %w", err)
	}
	at := func(pos int64) []byte { return buf[pos-lo:] }

	if offset == nil {
		// A tail window starts at the next character boundary.
		for n := 0; n < 3 && start < end && !utf8.RuneStart(at(start)[0]); n++ {
			start++
		}
	}
	// The end moves back to the start of a sequence it would split: to be
	// read whole by the next window, or, at the end of a live stream, to be
	// completed by bytes the child has not written yet.
	for back := int64(1); back <= 3 && end-back >= start; back++ {
		p := end - back
		b := at(p)[0]
		if !utf8.RuneStart(b) {
			continue
		}
		if need := int64(seqLen(b)); need > back {
			switch {
			case p+need <= size:
				end = p
			case !final:
				end = p
				w.IncompleteUTF8 = true
			}
		}
		break
	}
	w.Offset, w.NextOffset = start, end
	w.Window = start > 0 && offset == nil || end < size && !w.IncompleteUTF8
	w.Text = strings.ToValidUTF8(string(buf[start-lo:end-lo]), "\uFFFD")
	w.OutputBytes = len(w.Text)
	sum := sha256.Sum256([]byte(w.Text))
	w.OutputSHA256 = hex.EncodeToString(sum[:])
	return w, nil
}

// seqLen is the length of the UTF-8 sequence a lead byte starts (1 for
// ASCII and for bytes that start no valid sequence).
func seqLen(b byte) int {
	switch {
	case b&0xE0 == 0xC0:
		return 2
	case b&0xF0 == 0xE0:
		return 3
	case b&0xF8 == 0xF0:
		return 4
	}
	return 1
}
