package wait

import (
	"bytes"
	"os"

	"procmon/internal/logtext"
)

// Tail returns the last n lines of the text of the log at path (see
// package logtext: what logs shows), from no more than its last maxBytes
// bytes of text, for evidence on a failed wait. A line cut by that bound
// is returned cut (starting at a whole character), so one very long line
// still shows its end. ended says the log will not grow, so a trailing
// partial character shows as U+FFFD rather than being left out. It
// returns nil when the file cannot be read or is empty.
func Tail(open func() (*os.File, error), n int, maxBytes int, ended bool) []string {
	if n <= 0 || maxBytes <= 0 {
		return nil
	}
	f, err := open()
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	lo, hi := logtext.LastRange(int64(maxBytes), fi.Size())
	buf := make([]byte, hi-lo)
	// A short read (the file shrank) still yields evidence.
	m, _ := f.ReadAt(buf, lo)
	if m == 0 {
		return nil
	}
	w := logtext.Last(logtext.Held{Bytes: buf[:m], Base: lo, Size: lo + int64(m), Ended: ended}, int64(maxBytes))
	text := bytes.TrimSuffix(w.Text, []byte("\n"))
	if len(text) == 0 && w.Offset > 0 {
		return nil
	}
	parts := bytes.Split(text, []byte("\n"))
	if len(parts) > n {
		parts = parts[len(parts)-n:]
	}
	lines := make([]string, len(parts))
	for i, p := range parts {
		lines[i] = string(p)
	}
	return lines
}
