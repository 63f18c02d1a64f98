package wait

import (
	"bytes"
	"os"
	"unicode/utf8"
)

// Tail returns the last n lines of the file at path, reading no more than
// its last maxBytes bytes, for evidence on a failed wait. A line cut by
// that bound is returned cut (starting at a whole UTF-8 character), so one
// very long line still shows its end. It returns nil when the file cannot
// be read or is empty.
func Tail(path string, n int, maxBytes int) []string {
	if n <= 0 || maxBytes <= 0 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	size := fi.Size()
	start := max(size-int64(maxBytes), 0)
	buf := make([]byte, size-start)
	// A short read (the file shrank) still yields evidence.
	m, _ := f.ReadAt(buf, start)
	if m == 0 {
		return nil
	}
	buf = buf[:m]
	if start > 0 {
		// The window may begin inside a character.
		for len(buf) > 0 && !utf8.RuneStart(buf[0]) {
			buf = buf[1:]
		}
	}
	buf = bytes.TrimSuffix(buf, []byte("\n"))
	if len(buf) == 0 && start > 0 {
		return nil
	}
	parts := bytes.Split(buf, []byte("\n"))
	if len(parts) > n {
		parts = parts[len(parts)-n:]
	}
	lines := make([]string, len(parts))
	for i, p := range parts {
		lines[i] = string(p)
	}
	return lines
}
