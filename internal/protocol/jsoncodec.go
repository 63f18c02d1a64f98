package protocol

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// The records that a fresh process writes or reads on the way to a user
// are encoded and decoded by code generated from their structs (see
// package jsongen), into exactly what encoding/json writes and reads:
// encoding/json builds a type's codec by reflection the first time it
// meets the type, which a fresh process pays on the figure the user
// waits for. These are the pieces the generated code is made of. The
// generated file says which figures it protects and by how much.

// AppendKey appends a struct field's key, "name": given with its
// quotes and colon, after a comma unless it is the object's first.
func AppendKey(b []byte, key string) []byte {
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	return append(b, key...)
}

// AppendRaw appends a json.RawMessage that holds compact JSON (null for
// nil), as encoding/json writes it.
func AppendRaw(b []byte, raw json.RawMessage) []byte {
	if raw == nil {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// AppendInt appends an integer of any size.
func AppendInt[I ~int | ~int8 | ~int16 | ~int32 | ~int64](b []byte, v I) []byte {
	return strconv.AppendInt(b, int64(v), 10)
}

// AppendUint appends an unsigned integer of any size.
func AppendUint[U ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64](b []byte, v U) []byte {
	return strconv.AppendUint(b, uint64(v), 10)
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

// DecodeJSON decodes data, one JSON value, into *v with decode, made by
// the generator, and reports whether it did. It takes only the form the
// generated encoders write (keys as the tags spell them, no escape in a
// string, nesting no deeper than encoding/json allows) and reports false
// for anything else, leaving *v as it was, for encoding/json to read or
// refuse; so a success here is always what encoding/json would have
// decoded into a zero value. The helpers follow encoding/json's rules for
// what they accept: null leaves a value as it is and sets a pointer or
// slice to nil, a repeated key decodes again into what the first one set.
func DecodeJSON[T any](data []byte, v *T, decode func(gjson.Result, *T) bool) bool {
	if !validJSON(data) {
		return false
	}
	var out T
	if !decode(gjson.ParseBytes(data), &out) {
		return false
	}
	*v = out
	return true
}

// EachField calls field for every member of object r (null: none), and
// reports whether r was an object and every call succeeded.
func EachField(r gjson.Result, field func(key string, r gjson.Result) bool) bool {
	if r.Type == gjson.Null {
		return true
	}
	if !r.IsObject() {
		return false
	}
	ok := true
	r.ForEach(func(k, r gjson.Result) bool {
		ok = k.Type == gjson.String && !strings.Contains(k.Raw, `\`) && field(k.Str, r)
		return ok
	})
	return ok
}

// DecodeString decodes a string without escapes.
func DecodeString[S ~string](r gjson.Result, p *S) bool {
	switch {
	case r.Type == gjson.Null:
		return true
	case r.Type == gjson.String && !strings.Contains(r.Raw, `\`):
		*p = S(r.Str)
		return true
	}
	return false
}

// DecodeBool decodes a boolean.
func DecodeBool[B ~bool](r gjson.Result, p *B) bool {
	switch r.Type {
	case gjson.Null:
		return true
	case gjson.True, gjson.False:
		*p = r.Type == gjson.True
		return true
	}
	return false
}

// DecodeInt decodes an integer that fits *p.
func DecodeInt[I ~int | ~int8 | ~int16 | ~int32 | ~int64](r gjson.Result, p *I) bool {
	switch r.Type {
	case gjson.Null:
		return true
	case gjson.Number:
		n, err := strconv.ParseInt(r.Raw, 10, 64)
		*p = I(n)
		return err == nil && int64(*p) == n
	}
	return false
}

// DecodeUint decodes an unsigned integer that fits *p.
func DecodeUint[U ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64](r gjson.Result, p *U) bool {
	switch r.Type {
	case gjson.Null:
		return true
	case gjson.Number:
		n, err := strconv.ParseUint(r.Raw, 10, 64)
		*p = U(n)
		return err == nil && uint64(*p) == n
	}
	return false
}

// DecodeRaw keeps the value as it is written (null too, as
// encoding/json does).
func DecodeRaw(r gjson.Result, p *json.RawMessage) bool {
	*p = append(json.RawMessage(nil), r.Raw...)
	return true
}

// DecodePointer sets *p to nil for null, else decodes r into *p, made
// first if nil.
func DecodePointer[T any](r gjson.Result, p **T, decode func(gjson.Result, *T) bool) bool {
	if r.Type == gjson.Null {
		*p = nil
		return true
	}
	if *p == nil {
		*p = new(T)
	}
	return decode(r, *p)
}

// DecodeSlice replaces *p with the array r (null: nil; []: empty).
func DecodeSlice[T any](r gjson.Result, p *[]T, decode func(gjson.Result, *T) bool) bool {
	switch {
	case r.Type == gjson.Null:
		*p = nil
		return true
	case !r.IsArray():
		return false
	}
	out := []T{}
	ok := true
	r.ForEach(func(_, e gjson.Result) bool {
		var v T
		ok = decode(e, &v)
		out = append(out, v)
		return ok
	})
	*p = out
	return ok
}

// maxDepth is encoding/json's nesting limit; gjson has none and recurses,
// so anything deeper is left to encoding/json, which refuses it.
const maxDepth = 10000

// validJSON reports whether b is one valid JSON value nested no deeper
// than maxDepth.
func validJSON(b []byte) bool {
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			if depth++; depth > maxDepth {
				return false
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return utf8.Valid(b) && gjson.ValidBytes(b)
}
