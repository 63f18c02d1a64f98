package protocol

import (
	"strconv"
	"unicode/utf8"
)

// The few responses and records on the way to a start's answer are
// encoded by hand with these, into exactly the bytes encoding/json
// produces: encoding/json builds a type's encoder by reflection the first
// time it meets the type, which costs a fresh process a few tenths of a
// millisecond. Their tests hold each hand encoder to encoding/json's
// output.

// JSONAppender is a value that appends its own JSON encoding, as
// encoding/json with HTML escaping off would encode it.
type JSONAppender interface {
	AppendJSON(b []byte) []byte
}

// AppendOptionalInt appends *v, or null.
func AppendOptionalInt(b []byte, v *int64) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *v, 10)
}

// AppendStrings appends vs as an array of strings, or null for nil.
func AppendStrings(b []byte, vs []string, escapeHTML bool) []byte {
	if vs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, v, escapeHTML)
	}
	return append(b, ']')
}

// AppendInts appends vs as an array of numbers.
func AppendInts(b []byte, vs []int) []byte {
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(v), 10)
	}
	return append(b, ']')
}

// AppendString appends s quoted with encoding/json's escaping: the short
// escapes it knows, \u00XX for other control bytes (and, with escapeHTML,
// for '<', '>' and '&'), \ufffd for each byte of invalid UTF-8, and
// \u2028 and \u2029 escaped.
func AppendString(b []byte, s string, escapeHTML bool) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	from := 0 // s[from:i] is still to be copied as it is
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!escapeHTML || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[from:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, `\b`...)
			case '\f':
				b = append(b, `\f`...)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			case '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			from = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[from:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[from:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		from = i
	}
	b = append(b, s[from:]...)
	return append(b, '"')
}
