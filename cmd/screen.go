package cmd

import (
	"fmt"
	"io"
	"strings"
)

// screenWriter shows a service's text on a terminal as text. A service
// that prints the terminal's control sequences would otherwise drive the
// terminal of the person reading its logs: clear the screen, hide or
// overwrite a line, retitle the window, write the clipboard (OSC 52). So
// every control character shows in caret notation (^[ for ESC, ^G, ^?
// for DEL), a carriage return too unless a line feed follows it, and a C1
// control (U+0080 to U+009F, which some terminals obey as ESC sequences)
// as <U+009B>; tab and line feed stay. Colour shows as its sequence:
// kept, a colour code can hide text as well (SGR 8, or black on black).
// Piped, the text is not rewritten: it is the service's own.
type screenWriter struct {
	w io.Writer
	// held is the last byte of the last write when the next decides it:
	// a carriage return, or the lead byte of a C1 control's UTF-8.
	held []byte
}

func (s *screenWriter) Write(p []byte) (int, error) {
	buf := append(s.held, p...)
	s.held = nil
	out := make([]byte, 0, len(buf))
	for i := 0; i < len(buf); i++ {
		b := buf[i]
		switch {
		case (b == '\r' || b == 0xc2) && i+1 == len(buf):
			s.held = []byte{b}
		case b == '\n', b == '\t', b == '\r' && buf[i+1] == '\n':
			out = append(out, b)
		case b < 0x20 || b == 0x7f:
			out = append(out, '^', b^0x40)
		case b == 0xc2 && buf[i+1] >= 0x80 && buf[i+1] <= 0x9f:
			out = fmt.Appendf(out, "<U+%04X>", buf[i+1])
			i++
		default:
			out = append(out, b)
		}
	}
	if _, err := s.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
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
