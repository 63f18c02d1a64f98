package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
)

// MaxRequestBytes bounds a request body, and a tool call's arguments; no
// legitimate request comes near it.
const MaxRequestBytes = 4 << 20

// ReadRequest reads ONE {"request": {...}} object from r and decodes its
// request into v, refusing unknown fields, wrong types, an empty body and
// trailing data with an invalid_request error that names the problem.
func ReadRequest(r io.Reader, v any) error {
	body, err := io.ReadAll(io.LimitReader(r, MaxRequestBytes+1))
	if err != nil {
		return Errorf(CodeInvalidRequest, "read request from stdin: %w", err)
	}
	if len(body) > MaxRequestBytes {
		return Errorf(CodeInvalidRequest, "request body is larger than %d bytes", MaxRequestBytes).With("field", "request")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return Errorf(CodeInvalidRequest, `empty request body: send {"request": {...}} on stdin, or use the command's flags (see --help)`)
	}
	var envelope struct {
		Request json.RawMessage `json:"request"`
	}
	if err := DecodeStrict(body, &envelope); err != nil {
		return err
	}
	if len(envelope.Request) == 0 || string(envelope.Request) == "null" {
		return Errorf(CodeInvalidRequest, `missing "request": send {"request": {...}}`).With("field", "request")
	}
	return DecodeStrict(envelope.Request, v)
}

// DecodeStrict decodes exactly one JSON value from data into v, refusing
// unknown fields, wrong types and trailing data, and, at every level of
// nesting, duplicate keys and keys that match a field only when case is
// ignored (encoding/json would take "ARGV" for "argv", and the last of two
// "argv" keys). What a json.RawMessage field holds is left to its owner,
// which decodes it as strictly and names its faults in its own terms (a
// wait's condition is invalid_condition).
func DecodeStrict(data []byte, v any) error {
	if err := checkKeys(data, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(integralNumbers(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Errorf(CodeInvalidRequest, "trailing data after the request object: send exactly one JSON object")
	}
	return nil
}

// decodeError turns a json error into an invalid_request naming the field.
func decodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "request"
		}
		return Errorf(CodeInvalidRequest, "field %q: expected %s, got JSON %s", field, typeName(typeErr.Type.String()), typeErr.Value).With("field", field)
	case errors.As(err, &syntaxErr):
		return Errorf(CodeInvalidRequest, "malformed JSON at byte %d: %v", syntaxErr.Offset, err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return Errorf(CodeInvalidRequest, "truncated JSON: the request object is incomplete")
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return Errorf(CodeInvalidRequest, "unknown field %q", name).With("field", name)
	}
	if pe := (*Error)(nil); errors.As(err, &pe) {
		return pe
	}
	return Errorf(CodeInvalidRequest, "invalid request: %s", strings.TrimPrefix(msg, "json: "))
}

func typeName(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "map["), strings.Contains(goType, "."):
		return "an object"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "*int"), strings.HasPrefix(goType, "uint"), strings.HasPrefix(goType, "*uint"):
		return "an integer in range"
	case strings.HasPrefix(goType, "float"), strings.HasPrefix(goType, "*float"):
		return "a number"
	case strings.HasSuffix(goType, "string"):
		return "a string"
	case strings.HasSuffix(goType, "bool"):
		return "a boolean"
	}
	return goType
}

// WriteJSON writes v as one JSON object and a newline, without HTML escaping.
func WriteJSON(w io.Writer, v any, pretty bool) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if pretty {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

// ErrorObject is the wire form of an error response.
type ErrorObject struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody holds the code, message and details of an error response.
type ErrorBody struct {
	Code    Code           `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Object returns the wire form of e.
func (e *Error) Object() ErrorObject {
	return ErrorObject{Error: ErrorBody{Code: e.Code, Message: e.Message, Details: e.Details}}
}

// PositiveOrNull refuses a limit that is set but not a positive integer.
func PositiveOrNull(field string, v *int64) error {
	if v != nil && *v <= 0 {
		return Errorf(CodeInvalidRequest, "field %q must be a positive integer or null, got %d", field, *v).With("field", field)
	}
	return nil
}

// MaxSeconds bounds every duration given in seconds: a hundred years,
// far past any deadline, and far from overflowing as milliseconds.
const MaxSeconds = 100 * 365 * 24 * 3600

// SecondsOrNull refuses a duration in seconds that is not positive or is
// over MaxSeconds.
func SecondsOrNull(field string, v *int64) error {
	if err := PositiveOrNull(field, v); err != nil {
		return err
	}
	if v != nil && *v > MaxSeconds {
		return Errorf(CodeInvalidRequest, "field %q is %d seconds, over the limit of %d (a hundred years)", field, *v, MaxSeconds).With("field", field)
	}
	return nil
}
