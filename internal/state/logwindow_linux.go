package state

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"procmon/internal/logtext"
)

// Truncation reasons of a log window.
const (
	TruncCaptureLimit   = "capture_limit"
	TruncWindow         = "window"
	TruncIncompleteUTF8 = "incomplete_utf8"
	// TruncOutputUndrained is an exec's only: its output pipe was not
	// read to its end (something outside its custody held it open), so
	// the text may leave out what was written last.
	TruncOutputUndrained = "output_undrained"
	// TruncLogLost: the log could not store all of the output (a full
	// disk). It is an exact prefix of the redacted stream, so the text
	// may leave out what came after it.
	TruncLogLost = "log_lost"
)

// LogWindow is a bounded piece of a monitor's redacted output: the text of
// the stream's bytes [Offset, NextOffset), as package logtext defines it.
// The text is whole characters, with each byte that begins no UTF-8
// character shown as U+FFFD; it never holds more than the bytes of text
// asked for, and OutputBytes and OutputSHA256 describe exactly it. Offset
// and NextOffset are offsets of the stored stream, so windows read with
// the NextOffset of the one before tile the stream exactly.
type LogWindow struct {
	Text         string
	Offset       int64
	NextOffset   int64
	StreamBytes  int64
	OutputBytes  int
	OutputSHA256 string
	// Window is set when the window left out part of what was asked for
	// (the end of the stream, or, for an offset inside a character, that
	// character's first bytes); IncompleteUTF8 when a trailing partial
	// sequence was held back.
	Window         bool
	IncompleteUTF8 bool

	cut logtext.Window
}

// StreamOffset returns the stream offset of the text's byte i, which
// must begin a character of the text (or be its length).
func (w *LogWindow) StreamOffset(i int) int64 { return w.cut.StreamOffset(i) }

// ReadLogWindow reads a window of at most maxBytes bytes of text of a
// monitor's output log: from offset when one is given (from the end of
// the character offset falls inside, if it does), else the last maxBytes.
// final says the stream has ended, so a trailing partial sequence is shown
// (as U+FFFD) rather than held back for the bytes that complete it. The
// log is opened as OpenLog opens it: a link, a FIFO or a file of another
// user in its place is refused, never read.
func (d *Dir) ReadLogWindow(m *Monitor, offset *int64, maxBytes int64, final bool) (*LogWindow, error) {
	f, err := d.OpenLog(m)
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
	var lo, hi int64
	if offset != nil {
		lo, hi = logtext.FromRange(*offset, maxBytes, size)
	} else {
		lo, hi = logtext.LastRange(maxBytes, size)
	}
	buf := make([]byte, hi-lo)
	n, err := f.ReadAt(buf, lo)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("read output log: %w", err)
	}
	// A log that shrank under the read (it never should) is read as
	// ending where the read did.
	held := logtext.Held{Bytes: buf[:n], Base: lo, Size: min(size, lo+int64(n)), Ended: final}
	if n < len(buf) {
		size = held.Size
	}
	var cut logtext.Window
	if offset != nil {
		cut = logtext.From(held, *offset, maxBytes)
	} else {
		cut = logtext.Last(held, maxBytes)
	}
	w := &LogWindow{
		Text:           string(cut.Text),
		Offset:         cut.Offset,
		NextOffset:     cut.NextOffset,
		StreamBytes:    size,
		Window:         cut.Cut,
		IncompleteUTF8: cut.Undecided,
		cut:            cut,
	}
	w.OutputBytes = len(w.Text)
	sum := sha256.Sum256([]byte(w.Text))
	w.OutputSHA256 = hex.EncodeToString(sum[:])
	return w, nil
}

// LineStartBefore returns where the n-th line before byte offset before
// of a monitor's log begins: just after the n-th line feed back from
// before, or 0 when fewer come before it (before itself for n 0). A line
// feed is the same byte in the stream and in its text (no character's
// encoding holds one, and a byte shown as U+FFFD is never one), so the
// stream is read as is, a chunk at a time: no text is made of it, and no
// more is held than a chunk, however long the lines.
func (d *Dir) LineStartBefore(m *Monitor, before int64, n int) (int64, error) {
	f, err := d.OpenLog(m)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if n <= 0 {
		return before, nil
	}
	buf := make([]byte, 1<<20)
	for hi := before; hi > 0; {
		lo := max(hi-int64(len(buf)), 0)
		k, err := f.ReadAt(buf[:hi-lo], lo)
		if err != nil && err != io.EOF {
			return 0, fmt.Errorf("read output log: %w", err)
		}
		for i := k - 1; i >= 0; i-- {
			if buf[i] == '\n' {
				if n--; n == 0 {
					return lo + int64(i) + 1, nil
				}
			}
		}
		if k < int(hi-lo) {
			break // a log that shrank under the read (it never should)
		}
		hi = lo
	}
	return 0, nil
}

// LogTextStart returns where the text of a monitor's log that shows
// byte offset begins, as logtext.StartOf places it: offset itself, or
// the start of the character it falls inside; at or past the end of the
// stored stream, where its decided text ends. A start found in stream
// bytes (a time mark, the log's end) is made a start of the text with
// it, so a window from there shows the whole character rather than
// losing it. final is as for ReadLogWindow.
func (d *Dir) LogTextStart(m *Monitor, offset int64, final bool) (int64, error) {
	f, err := d.OpenLog(m)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return logTextStart(f, offset, final)
}

func logTextStart(f *os.File, offset int64, final bool) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat output log: %w", err)
	}
	lo, hi := logtext.StartOfRange(offset, fi.Size())
	buf := make([]byte, hi-lo)
	n, err := f.ReadAt(buf, lo)
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("read output log: %w", err)
	}
	size := fi.Size()
	if n < len(buf) {
		size = lo + int64(n) // as in readLogWindow, a log that shrank under the read ends there
	}
	return logtext.StartOf(logtext.Held{Bytes: buf[:n], Base: lo, Size: size, Ended: final}, offset), nil
}
