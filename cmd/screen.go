package cmd

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// screenWriter shows a service's text on a terminal as text. A service
// that prints the terminal's control sequences would otherwise drive the
// terminal of the person reading its logs: clear the screen, hide or
// overwrite a line, retitle the window, write the clipboard (OSC 52). So
// every control character shows in caret notation (^[ for ESC, ^G, ^?
// for DEL), a carriage return too unless a line feed follows it, and a C1
// control (U+0080 to U+009F, which some terminals obey as ESC sequences)
// as <U+009B>, as does a bidirectional formatting character (U+202E and
// its kin), with which a terminal that reorders text shows a line in
// another order than its bytes have; tab and line feed stay. Colour shows as
// its sequence: kept, a colour code can hide text as well (SGR 8, or
// black on black). Piped, the text is not rewritten: it is the service's
// own.
type screenWriter struct {
	w io.Writer
	// held is what the last write ended with when the next decides it: a
	// carriage return, or the beginning of a character's UTF-8.
	held []byte
}

func (s *screenWriter) Write(p []byte) (int, error) {
	buf := append(s.held, p...)
	s.held = nil
	out := make([]byte, 0, len(buf))
	for i := 0; i < len(buf); i++ {
		b := buf[i]
		if b == '\r' && i+1 == len(buf) || b >= utf8.RuneSelf && !utf8.FullRune(buf[i:]) {
			s.held = append([]byte(nil), buf[i:]...)
			break
		}
		switch {
		case b == '\n', b == '\t', b == '\r' && buf[i+1] == '\n':
			out = append(out, b)
		case b < 0x20 || b == 0x7f:
			out = append(out, '^', b^0x40)
		case b >= utf8.RuneSelf:
			// Bytes that are no UTF-8 stay as they are, a byte at a time.
			r, n := utf8.DecodeRune(buf[i:])
			if obeyed(r) {
				out = fmt.Appendf(out, "<U+%04X>", r)
			} else {
				out = append(out, buf[i:i+n]...)
			}
			i += n - 1
		default:
			out = append(out, b)
		}
	}
	if _, err := s.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// obeyed reports whether r is a C1 control or a bidirectional formatting
// character, which a terminal obeys rather than shows.
func obeyed(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f,
		r == 0x061c, r == 0x200e, r == 0x200f,
		r >= 0x202a && r <= 0x202e,
		r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Flush writes what the last write held: the text has ended.
func (s *screenWriter) Flush() error {
	if len(s.held) == 0 {
		return nil
	}
	out := s.held
	if out[0] == '\r' {
		out = []byte("^M")
	}
	s.held = nil
	_, err := s.w.Write(out)
	return err
}

// screenText is text as screenWriter shows it.
func screenText(text string) string {
	var b strings.Builder
	s := screenWriter{w: &b}
	s.Write([]byte(text))
	s.Flush()
	return b.String()
}
