package wait

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"procmon/internal/protocol"
)

// The kinds of condition that exist. Every other kind is refused.
const (
	KindOutput = "output"
	KindExit   = "exit"
	KindFile   = "file"
)

// kindsText is how refusals name the kinds that exist, so that a caller who
// asked for "http" or "port" learns what to ask for instead.
const kindsText = `"output", "exit" and "file"`

// Condition is one decoded condition object of a wait request.
type Condition struct {
	Kind   string `json:"kind"`
	Text   string `json:"text,omitempty"`
	Path   string `json:"path,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// fieldKinds says which kind each known field belongs to; "kind" belongs to
// all of them.
var fieldKinds = map[string]string{
	"kind":   "",
	"text":   KindOutput,
	"path":   KindFile,
	"sha256": KindFile,
}

// refuse builds the invalid_condition error for one field. The field is
// also a detail so a client can point at it without parsing the message.
func refuse(field, format string, args ...any) *protocol.Error {
	return protocol.Errorf(protocol.CodeInvalidCondition, format, args...).With("field", field)
}

// refuseObject builds the invalid_condition error for a condition that is
// not one well-formed object, where no single field is to blame.
func refuseObject(format string, args ...any) *protocol.Error {
	return protocol.Errorf(protocol.CodeInvalidCondition, format, args...)
}

// ParseCondition strictly decodes one condition object. It refuses, as
// invalid_condition naming the field: anything but a single JSON object,
// duplicate or unknown fields, a field whose value is not a string, a field
// that does not belong to the kind, an unknown kind, empty or non-UTF-8
// text, an empty path and a sha256 that is not 64 lowercase hex digits.
// Path rules that need the component root are checked by Validate.
func ParseCondition(raw json.RawMessage) (Condition, error) {
	keys, values, err := decodeObject(raw)
	if err != nil {
		return Condition{}, err
	}
	// The kind comes first: a caller asking for an "http" condition is
	// best told which kinds exist, not that "url" is an unknown field.
	rawKind, ok := values["kind"]
	if !ok {
		return Condition{}, refuse("kind", "condition has no \"kind\"; the kinds are %s", kindsText)
	}
	kind, err := decodeString(rawKind)
	if err != nil {
		return Condition{}, refuse("kind", "condition field \"kind\" %v; it names one of %s", err, kindsText)
	}
	if err := checkKind(kind); err != nil {
		return Condition{}, err
	}
	for _, k := range keys {
		if _, ok := fieldKinds[k]; !ok {
			return Condition{}, refuse(k, "condition field %q is unknown; a condition has kind, text (output), path and sha256 (file)", k)
		}
	}
	strs := make(map[string]string, len(keys))
	for _, k := range keys {
		s, err := decodeString(values[k])
		if err != nil {
			return Condition{}, refuse(k, "condition field %q %v", k, err)
		}
		strs[k] = s
	}
	for _, k := range keys {
		if owner := fieldKinds[k]; owner != "" && owner != kind {
			return Condition{}, refuse(k, "condition field %q belongs to %s conditions, not to %s conditions", k, owner, kind)
		}
	}
	c := Condition{Kind: kind, Text: strs["text"], Path: strs["path"], SHA256: strs["sha256"]}
	switch kind {
	case KindOutput:
		if _, ok := strs["text"]; !ok {
			return Condition{}, refuse("text", "output condition has no \"text\"; give the literal to find in the output")
		}
	case KindFile:
		if _, ok := strs["path"]; !ok {
			return Condition{}, refuse("path", "file condition has no \"path\"; give a path relative to the component root")
		}
		if _, ok := strs["sha256"]; ok && c.SHA256 == "" {
			// Present but empty is not "no digest": refuse rather than
			// silently widen the condition.
			return Condition{}, refuse("sha256", "condition field \"sha256\" is empty; give 64 lowercase hex digits or leave it out")
		}
	}
	if err := c.checkShape(); err != nil {
		return Condition{}, err
	}
	return c, nil
}

// checkKind refuses a kind that does not exist.
func checkKind(kind string) error {
	switch kind {
	case KindOutput, KindExit, KindFile:
		return nil
	}
	return refuse("kind", "condition kind %q is not supported; the kinds are %s", kind, kindsText).
		With("kinds", []string{KindOutput, KindExit, KindFile})
}

// CheckShape refuses, as invalid_condition, a condition built without
// ParseCondition (from command-line flags) whose fields do not fit its
// kind: everything ParseCondition checks of a decoded object. The rules
// that need the component root are Validate's.
func (c Condition) CheckShape() error { return c.checkShape() }

// checkShape refuses a condition whose fields do not fit its kind. It needs
// no rules, so ParseCondition and Validate share it; Validate repeats it
// because a Condition can also be built without ParseCondition.
func (c Condition) checkShape() error {
	if err := checkKind(c.Kind); err != nil {
		return err
	}
	if c.Kind != KindOutput && c.Text != "" {
		return refuse("text", "condition field \"text\" belongs to output conditions, not to %s conditions", c.Kind)
	}
	if c.Kind != KindFile {
		if c.Path != "" {
			return refuse("path", "condition field \"path\" belongs to file conditions, not to %s conditions", c.Kind)
		}
		if c.SHA256 != "" {
			return refuse("sha256", "condition field \"sha256\" belongs to file conditions, not to %s conditions", c.Kind)
		}
	}
	switch c.Kind {
	case KindOutput:
		if c.Text == "" {
			return refuse("text", "output condition \"text\" is empty; give the literal to find in the output")
		}
		if !utf8.ValidString(c.Text) {
			return refuse("text", "output condition \"text\" is not valid UTF-8")
		}
	case KindFile:
		if c.SHA256 != "" && !isLowerHex64(c.SHA256) {
			return refuse("sha256", "file condition \"sha256\" must be 64 lowercase hex digits")
		}
		if reason, msg := lexicalPathProblem(c.Path); reason != "" {
			return refuse("path", "file condition path %q %s", c.Path, msg).With("reason", reason)
		}
	}
	return nil
}

func isLowerHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('0' <= b && b <= '9' || 'a' <= b && b <= 'f') {
			return false
		}
	}
	return true
}

// lexicalPathProblem checks the rules that need no root: a clean, relative,
// NUL-free path of real components. It returns a short reason and a message
// fragment, or "" when the path is acceptable.
func lexicalPathProblem(p string) (reason, msg string) {
	switch {
	case p == "":
		return "empty", "is empty; give a path relative to the component root (the service's working directory)"
	case strings.IndexByte(p, 0) >= 0:
		return "nul", "contains a NUL byte"
	case !utf8.ValidString(p):
		return "not_utf8", "is not valid UTF-8"
	case strings.HasPrefix(p, "/"):
		return "absolute", "is absolute; give a path relative to the component root (the service's working directory)"
	}
	for _, comp := range strings.Split(p, "/") {
		switch comp {
		case "":
			return "empty_component", "has an empty component; " + cleanAdvice(p)
		case ".":
			return "dot_component", "has a \".\" component; " + cleanAdvice(p)
		case "..":
			return "dotdot", "has a \"..\" component; a file condition stays beneath the component root (the service's working directory)"
		}
	}
	// The component checks above already imply a clean path; this is the
	// backstop that makes "only the clean spelling" the rule itself.
	if path.Clean(p) != p {
		return "alias", fmt.Sprintf("is not in clean form (%q); write it in clean form", path.Clean(p))
	}
	return "", ""
}

// cleanAdvice says how to write p, whose only fault is that it is not in
// clean form ("./ready.json", "logs//out"), when its clean form is a path
// a condition takes.
func cleanAdvice(p string) string {
	// Cleaning folds a ".." away ("./a/../b" is "b"), which would take a
	// path that climbs for one that does not.
	if c := path.Clean(p); c != p && !slices.Contains(strings.Split(p, "/"), "..") {
		if r, _ := lexicalPathProblem(c); r == "" {
			return fmt.Sprintf("write it in clean form: %q", c)
		}
	}
	return "write it in clean form"
}

// Rules are what a file condition is checked against. Root and StateDir are
// absolute paths; PrivatePaths are relative to Root.
type Rules struct {
	Root         string
	StateDir     string
	PrivatePaths []string
}

// Validate refuses a condition lexically (invalid_condition): a shape that
// does not fit its kind, and for a file condition a path that is not a
// clean relative path, that names a private path, or that lies inside the
// state directory. Nothing is touched on disk: a path that passes may still
// be refused when it is evaluated (a symlink, a hardlink, not a regular
// file).
func (c Condition) Validate(r Rules) error {
	if err := c.checkShape(); err != nil {
		return err
	}
	if c.Kind != KindFile {
		return nil
	}
	if !filepath.IsAbs(r.Root) || !filepath.IsAbs(r.StateDir) {
		return protocol.Errorf(protocol.CodeInternal, "wait rules need an absolute root and state directory (root %q, state directory %q)", r.Root, r.StateDir)
	}
	comps := strings.Split(c.Path, "/")
	for _, priv := range r.PrivatePaths {
		pc := privateComponents(priv)
		if pc == nil {
			continue
		}
		if containsRun(comps, pc) {
			return refuse("path", "file condition path %q is within the private path %q; a wait cannot observe it", c.Path, strings.Join(pc, "/")).
				With("reason", "private")
		}
	}
	full := filepath.Join(r.Root, c.Path)
	if within(filepath.Clean(r.StateDir), full) {
		return refuse("path", "file condition path %q is inside procmon's state directory; a wait cannot observe it", c.Path).
			With("reason", "state_dir")
	}
	return nil
}

// privateComponents normalizes a configured private path into its
// components, or nil when it names nothing (empty or ".").
func privateComponents(priv string) []string {
	p := strings.Trim(path.Clean("/"+priv), "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// containsRun reports whether run appears as consecutive components of
// comps. A private name is private wherever it appears: "sub/.git/config"
// is as much a repository's internals as ".git/config".
func containsRun(comps, run []string) bool {
	for i := 0; i+len(run) <= len(comps); i++ {
		match := true
		for j := range run {
			if comps[i+j] != run[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// within reports whether p is dir or lies beneath it, lexically.
func within(dir, p string) bool {
	if p == dir {
		return true
	}
	if dir == "/" {
		return true
	}
	return strings.HasPrefix(p, dir+"/")
}

// decodeObject splits raw into the keys of one JSON object, in order, and
// their raw values. Duplicate keys and trailing data are refused: a client
// that sends them meant something this decoder would otherwise guess at.
func decodeObject(raw []byte) ([]string, map[string]json.RawMessage, error) {
	bad := refuseObject
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, bad("condition is not valid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		// The request's own field is at fault: a string, a number, a list.
		return nil, nil, refuse("condition", "condition must be a JSON object with a \"kind\"; the kinds are %s", kindsText)
	}
	var keys []string
	values := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, bad("condition is not valid JSON: %v", err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, nil, bad("condition is not valid JSON")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, refuse(key, "condition field %q is not valid JSON: %v", key, err)
		}
		if _, dup := values[key]; dup {
			return nil, nil, refuse(key, "condition field %q appears more than once", key)
		}
		keys = append(keys, key)
		values[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, bad("condition is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, bad("condition has data after its closing brace; send exactly one object")
	}
	return keys, values, nil
}

// decodeString decodes a JSON string value strictly. encoding/json would
// replace invalid UTF-8 and unpaired surrogate escapes with U+FFFD; that
// silently changes what a wait looks for, so both are refused here.
func decodeString(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", errors.New("must be a string")
	}
	in := raw[1 : len(raw)-1]
	var out strings.Builder
	out.Grow(len(in))
	for i := 0; i < len(in); {
		b := in[i]
		switch {
		case b == '\\':
			if i+1 >= len(in) {
				return "", errors.New("is not a valid JSON string")
			}
			esc := in[i+1]
			i += 2
			switch esc {
			case '"', '\\', '/':
				out.WriteByte(esc)
			case 'b':
				out.WriteByte('\b')
			case 'f':
				out.WriteByte('\f')
			case 'n':
				out.WriteByte('\n')
			case 'r':
				out.WriteByte('\r')
			case 't':
				out.WriteByte('\t')
			case 'u':
				r, ok := hex4(in, i)
				if !ok {
					return "", errors.New("is not a valid JSON string")
				}
				i += 4
				if utf16.IsSurrogate(r) {
					var r2 rune
					if i+6 <= len(in) && in[i] == '\\' && in[i+1] == 'u' {
						r2, ok = hex4(in, i+2)
					} else {
						ok = false
					}
					dec := utf16.DecodeRune(r, r2)
					if !ok || dec == utf8.RuneError {
						return "", errors.New("is not valid UTF-8 (unpaired surrogate escape)")
					}
					i += 6
					r = dec
				}
				out.WriteRune(r)
			default:
				return "", errors.New("is not a valid JSON string")
			}
		case b < 0x20:
			return "", errors.New("is not a valid JSON string")
		case b < utf8.RuneSelf:
			out.WriteByte(b)
			i++
		default:
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && size == 1 {
				return "", errors.New("is not valid UTF-8")
			}
			out.Write(in[i : i+size])
			i += size
		}
	}
	return out.String(), nil
}

func hex4(in []byte, i int) (rune, bool) {
	if i+4 > len(in) {
		return 0, false
	}
	var r rune
	for _, c := range in[i : i+4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
