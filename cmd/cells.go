//go:build linux

package cmd

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"
)

// cellWidth is how many columns s takes on a terminal: a wide or fullwidth
// character (an ideograph, kana, hangul, most emoji) takes two, a
// combining mark none, any other character one. It counts as terminals
// do, one character at a time (wcwidth); the views have already escaped
// every control and formatting character (see quoteArg), so none of
// those reaches a cell.
func cellWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeCellWidth(r)
	}
	return n
}

func runeCellWidth(r rune) int {
	switch {
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	case r >= 0x1160 && r <= 0x11ff, r >= 0xd7b0 && r <= 0xd7ff:
		// Conjoining hangul vowels and finals join the syllable they
		// follow in the cells it takes.
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// ellipsis ends text cut short.
const ellipsis = "…"

// cutToWidth cuts s to at most width cells, ending what is cut with an
// ellipsis; s as it is when it fits.
func cutToWidth(s string, width int) string {
	if cellWidth(s) <= width {
		return s
	}
	room := width - cellWidth(ellipsis)
	end := 0
	for end < len(s) {
		r, size := utf8.DecodeRuneInString(s[end:])
		if runeCellWidth(r) > room {
			break
		}
		room -= runeCellWidth(r)
		end += size
	}
	return s[:end] + ellipsis
}
