package cmd

import (
	"strings"
	"testing"
)

// TestScreenText: on a terminal a service's control characters show as
// text, whatever the writes that bring them; tab, line feed, a CR before
// a line feed and every printable character (UTF-8 included) stay.
func TestScreenText(t *testing.T) {
	cases := map[string]string{
		"plain é ü 服务\ttab\n":                  "plain é ü 服务\ttab\n",
		"a\x1b]52;c;aGk=\x07b":                 "a^[]52;c;aGk=^Gb",
		"clear\x1b[2J\x1b[8mhidden\x1b[0m":     "clear^[[2J^[[8mhidden^[[0m",
		"crlf\r\nover\rwrite\r":                "crlf\r\nover^Mwrite^M",
		"nul\x00del\x7f":                       "nul^@del^?",
		"csi\u009b2Jnbsp\u00a0":                "csi<U+009B>2Jnbsp\u00a0",
		"\x1b":                                 "^[",
		"end with a lead byte alone \xc2":      "end with a lead byte alone \xc2",
		"before a C1 \xc2\x85 and after \xc2x": "before a C1 <U+0085> and after \xc2x",
		"file\u202egnp.exe and \u2067x\u2069":  "file<U+202E>gnp.exe and <U+2067>x<U+2069>",
		"marks \u200e\u200f\u061c, not \u2010": "marks <U+200E><U+200F><U+061C>, not \u2010",
		"a cut character \xe2\x80":             "a cut character \xe2\x80",
		"bytes \xe2\x80x and \xff":             "bytes \xe2\x80x and \xff",
	}
	for in, want := range cases {
		if got := screenText(in); got != want {
			t.Errorf("screenText(%q) = %q, want %q", in, got, want)
		}
		// Any split into two writes shows the same.
		for i := 0; i <= len(in); i++ {
			var b strings.Builder
			s := screenWriter{w: &b}
			s.Write([]byte(in[:i]))
			s.Write([]byte(in[i:]))
			s.Flush()
			if b.String() != want {
				t.Errorf("%q written as %q and %q: %q, want %q", in, in[:i], in[i:], b.String(), want)
			}
		}
	}
}
