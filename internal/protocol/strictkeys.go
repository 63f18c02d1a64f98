package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
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

// checkKeys refuses duplicate keys at any depth of data, and keys that name
// a field of the type at their place only when case is ignored. With
// skipRaw, a json.RawMessage field is not looked into: its caller decodes
// it strictly in turn, and names its fields from there.
func checkKeys(data []byte, t reflect.Type, skipRaw bool) error {
	w := keyWalk{dec: json.NewDecoder(bytes.NewReader(data)), skipRaw: skipRaw}
	w.dec.UseNumber()
	err, _ := w.value(t, "", 0)
	return err
}

type keyWalk struct {
	dec     *json.Decoder
	skipRaw bool
}

// value reads one value, where the type t (nil when unknown) is expected
// at path. ok is false when the input cannot be walked (bad syntax, too
// deep): the decoder then says what is wrong.
func (w *keyWalk) value(t reflect.Type, path string, depth int) (err error, ok bool) {
	dec := w.dec
	if depth > maxKeyDepth {
		return nil, false
	}
	if w.skipRaw && t == rawMessage {
		var skipped json.RawMessage
		return nil, dec.Decode(&skipped) == nil
	}
	tok, terr := dec.Token()
	if terr != nil {
		return nil, false
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
			tok, terr := dec.Token()
			if terr != nil {
				return nil, false
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
