package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

type strictCondition struct {
	Kind string `json:"kind"`
}

type strictRequest struct {
	Argv      []string          `json:"argv"`
	Env       map[string]string `json:"env,omitempty"`
	Cwd       *string           `json:"cwd,omitempty"`
	Nested    *strictCondition  `json:"nested,omitempty"`
	List      []strictCondition `json:"list,omitempty"`
	Condition json.RawMessage   `json:"condition,omitempty"`
}

// Keys are read as sent: a key that matches a field only when case is
// ignored, or one that appears twice, is invalid_request naming the field,
// at every level of the request.
func TestReadRequestKeysAreExact(t *testing.T) {
	cases := []struct {
		name, body, field string
	}{
		{"upper-case field", `{"request":{"ARGV":["true"]}}`, "ARGV"},
		{"mixed-case field", `{"request":{"Argv":["true"]}}`, "Argv"},
		{"upper-case envelope", `{"Request":{"argv":["true"]}}`, "Request"},
		{"duplicate field", `{"request":{"argv":["true"],"argv":["false"]}}`, "argv"},
		{"duplicate by case", `{"request":{"argv":["true"],"ARGV":["false"]}}`, "ARGV"},
		{"duplicate envelope", `{"request":{"argv":["a"]},"request":{"argv":["b"]}}`, "request"},
		{"duplicate map key", `{"request":{"argv":["a"],"env":{"A":"1","A":"2"}}}`, "env.A"},
		{"case in a nested struct", `{"request":{"argv":["a"],"nested":{"KIND":"exit"}}}`, "nested.KIND"},
		{"duplicate in a nested struct", `{"request":{"argv":["a"],"nested":{"kind":"exit","kind":"output"}}}`, "nested.kind"},
		{"case in an array of structs", `{"request":{"argv":["a"],"list":[{"kind":"a"},{"Kind":"b"}]}}`, "list[].Kind"},
		// encoding/json would read a null element as "".
		{"null in a list of strings", `{"request":{"argv":["a",null]}}`, "argv"},
		{"null first in a list", `{"request":{"argv":[null]}}`, "argv"},
		// encoding/json would read each as U+FFFD, a character not sent.
		{"bytes not UTF-8", "{\"request\":{\"argv\":[\"cat\",\"f\xff\"]}}", "argv"},
		{"bytes not UTF-8 in a key", "{\"request\":{\"argv\":[\"a\"],\"env\":{\"K\xfe\":\"v\"}}}", "env"},
		{"a lone low surrogate", `{"request":{"argv":["cat","f\udcff"]}}`, "argv"},
		{"a lone high surrogate", `{"request":{"argv":["a"],"env":{"A":"x\ud83dy"}}}`, "env.A"},
		{"a high surrogate at the end", `{"request":{"argv":["a"],"cwd":"\ud83d"}}`, "cwd"},
		{"two high surrogates", `{"request":{"argv":["\ud83d\ud83d"]}}`, "argv"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var req strictRequest
			err := ReadRequest(strings.NewReader(c.body), &req)
			if err == nil {
				t.Fatalf("decoded %+v, want invalid_request naming %q", req, c.field)
			}
			pe := AsError(err)
			if pe.Code != CodeInvalidRequest || pe.Details["field"] != c.field {
				t.Fatalf("got %v (details %v), want invalid_request naming %q", err, pe.Details, c.field)
			}
			if !strings.Contains(pe.Message, c.field) {
				t.Fatalf("message %q does not name %q", pe.Message, c.field)
			}
		})
	}
}

// Exact keys still decode; map keys that differ only in case are distinct
// keys, as environment variable names are.
func TestReadRequestExactKeysDecode(t *testing.T) {
	var req strictRequest
	body := `{"request":{"argv":["true","\ud83d\udd11 \\udcff \u00e9 é"],"env":{"a":"1","A":"2"},"nested":{"kind":"exit"},"list":[{"kind":"a"}],"condition":{"kind":"exit","x":{"kind":1,"n":[null]}}}}`
	if err := ReadRequest(strings.NewReader(body), &req); err != nil {
		t.Fatal(err)
	}
	if len(req.Argv) != 2 || req.Env["a"] != "1" || req.Env["A"] != "2" || req.Nested.Kind != "exit" {
		t.Fatalf("decoded %+v", req)
	}
	// A pair is one character, and an escaped backslash before u begins
	// no escape.
	if want := "\U0001F511 \\udcff \u00e9 \u00e9"; req.Argv[1] != want {
		t.Fatalf("argv[1] = %q, want %q", req.Argv[1], want)
	}
}

// Input the walk cannot read is left to the decoder, which names what is
// wrong; nesting past encoding/json's limit is refused, not walked.
func TestReadRequestMalformedStillRefused(t *testing.T) {
	deep := `{"request":{"argv":["a"],"condition":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}`
	for _, body := range []string{`{"request":{"argv":`, `{"request":{"argv":["a"]}} x`, `{"request":{"argv":[}}`, deep} {
		var req strictRequest
		if err := ReadRequest(strings.NewReader(body), &req); !HasCode(err, CodeInvalidRequest) {
			t.Errorf("%.40q: got %v, want invalid_request", body, err)
		}
	}
}

// TestRawJSONIsLeftToItsOwner: what a json.RawMessage field holds is not
// looked into: its owner decodes it as strictly, in its own terms (a
// wait's condition refuses these as invalid_condition, where a refusal
// here made the same fault invalid_request).
func TestRawJSONIsLeftToItsOwner(t *testing.T) {
	for _, raw := range []string{
		`{"kind":"exit","kind":"exit"}`,
		`{"x":[{"y":{"z":1,"z":2}}]}`,
		"{\"text\":\"\xc3\"}",
		`{"text":"\udc80"}`,
	} {
		var req strictRequest
		if err := ReadRequest(strings.NewReader(`{"request":{"argv":["a"],"condition":`+raw+`}}`), &req); err != nil {
			t.Errorf("%q: %v", raw, err)
		} else if string(req.Condition) != raw {
			t.Errorf("%q came through as %q", raw, req.Condition)
		}
	}
}
