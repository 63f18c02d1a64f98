package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// encoding/json matches an object's keys to struct fields ignoring case and
// lets the last of two equal keys win. A request is read exactly as sent,
// so checkKeys walks it first, beside the type it is decoded into, and
// refuses both. It reports only these two faults: anything else wrong with
// the request (bad syntax, a wrong type, an unknown field) is left to the
// decoder, which names it.

// maxKeyDepth is encoding/json's nesting limit: deeper input is left to
// the decoder, which refuses it, rather than walked.
const maxKeyDepth = 10000

// checkKeys refuses duplicate keys at any depth of data, keys that name
// a field of the type at their place only when case is ignored, and
// strings that hold no text (checkText). A json.RawMessage field is not
// looked into: its owner decodes it strictly in turn, and names its
// fields from there.
func checkKeys(data []byte, t reflect.Type) error {
	w := keyWalk{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	w.dec.UseNumber()
	err, _ := w.value(t, "", 0)
	return err
}

type keyWalk struct {
	data []byte
	dec  *json.Decoder
}

// token reads the next token, and refuses a string (a key or a value at
// path) that holds no text.
func (w *keyWalk) token(path string) (json.Token, error, bool) {
	from := w.dec.InputOffset()
	tok, err := w.dec.Token()
	if err != nil {
		return nil, nil, false
	}
	if _, ok := tok.(string); ok {
		// The bytes read hold the string's literal, after the separators
		// and spaces before it.
		if err := checkText(w.data[from:w.dec.InputOffset()], path); err != nil {
			return nil, err, true
		}
	}
	return tok, nil, true
}

// value reads one value, where the type t (nil when unknown) is expected
// at path. ok is false when the input cannot be walked (bad syntax, too
// deep): the decoder then says what is wrong.
func (w *keyWalk) value(t reflect.Type, path string, depth int) (err error, ok bool) {
	dec := w.dec
	if depth > maxKeyDepth {
		return nil, false
	}
	if t == rawMessage {
		var skipped json.RawMessage
		return nil, dec.Decode(&skipped) == nil
	}
	tok, err, ok := w.token(path)
	if err != nil || !ok {
		return err, ok
	}
	delim, isDelim := tok.(json.Delim)
	if tok == nil && strings.HasSuffix(path, "[]") && t != nil && scalar(t.Kind()) {
		// encoding/json reads a null element as the zero value: a secret
		// of "" was then refused as too short.
		field := strings.TrimSuffix(path, "[]")
		return Errorf(CodeInvalidRequest, "field %q holds a null: each of its elements is a %s", field, kindName(t.Kind())).With("field", field), true
	}
	if !isDelim {
		return nil, true
	}
	t = deref(t)
	switch delim {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t != rawMessage {
			elem = t.Elem()
		}
		for dec.More() {
			if err, ok := w.value(elem, path+"[]", depth+1); err != nil || !ok {
				return err, ok
			}
		}
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			tok, err, ok := w.token(path)
			if err != nil || !ok {
				return err, ok
			}
			key, _ := tok.(string)
			field := joinPath(path, key)
			if seen[key] {
				return Errorf(CodeInvalidRequest, "field %q appears more than once: send each field once", field).With("field", field), true
			}
			seen[key] = true
			next, err := keyType(t, key, field)
			if err != nil {
				return err, true
			}
			if err, ok := w.value(next, field, depth+1); err != nil || !ok {
				return err, ok
			}
		}
	default:
		return nil, false
	}
	if _, terr := dec.Token(); terr != nil {
		return nil, false
	}
	return nil, true
}

var rawMessage = reflect.TypeOf(json.RawMessage(nil))

// checkText refuses a string literal (raw, as sent) that holds bytes that
// are not UTF-8, or an escaped UTF-16 surrogate without its other half.
// encoding/json reads either as U+FFFD, so the request would go on with a
// character that was not sent: a command run on another file's name, a
// secret redacted with one of its bytes changed. Python writes a lone
// surrogate for each byte of a file name that is not UTF-8 (os.fsdecode).
func checkText(raw []byte, path string) error {
	field := strings.TrimSuffix(path, "[]")
	if field == "" {
		field = "request"
	}
	if !utf8.Valid(raw) {
		return Errorf(CodeInvalidRequest, "field %q holds bytes that are not UTF-8: a request is UTF-8 text, and a byte string that is not (a file name, a secret) cannot be sent in one", field).With("field", field)
	}
	for i := 0; i+1 < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++ // the escaped byte
		if raw[i] != 'u' || i+4 >= len(raw) {
			continue
		}
		v, err := strconv.ParseUint(string(raw[i+1:i+5]), 16, 16)
		if err != nil || !utf16.IsSurrogate(rune(v)) {
			continue
		}
		i += 4
		if v < 0xDC00 && i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
			if lo, err := strconv.ParseUint(string(raw[i+3:i+7]), 16, 16); err == nil && lo >= 0xDC00 && lo < 0xE000 {
				i += 6
				continue
			}
		}
		return Errorf(CodeInvalidRequest, "field %q holds %s, half of a UTF-16 surrogate pair without the other half: it stands for no character (Python writes one for each byte of a file name that is not UTF-8)", field, raw[i-5:i+1]).With("field", field)
	}
	return nil
}

// scalar reports whether a JSON null cannot stand for a value of kind k.
func scalar(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// kindName is the JSON name of a scalar kind.
func kindName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	}
	return "number"
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// keyType is the type expected under key in an object decoded into t: the
// field named exactly key of a struct, the element of a map, nil when
// unknown (an unknown field, left to the decoder, or a value not decoded
// into a type, whose keys are still checked for duplicates). A key that
// matches a field only when case is ignored is refused.
func keyType(t reflect.Type, key, field string) (reflect.Type, error) {
	if t == nil {
		return nil, nil
	}
	switch t.Kind() {
	case reflect.Map:
		return t.Elem(), nil
	case reflect.Struct:
	default:
		return nil, nil
	}
	var folded string
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f.Type, nil
		}
		if strings.EqualFold(name, key) {
			folded = name
		}
	}
	if folded != "" {
		return nil, Errorf(CodeInvalidRequest, "unknown field %q: field names are case-sensitive; did you mean %q?", field, folded).With("field", field)
	}
	return nil, nil
}
