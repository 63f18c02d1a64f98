package state

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// encoding/json builds its decoder for a type the first time it meets the
// type: in a fresh process, reading the envelope and a run record cost
// about 0.2 ms that way, on the path of every start. The records this
// procmon writes are read here without reflection instead. Each reader
// takes only the form the writers produce and reports false for anything
// else, which encoding/json then reads; so a record edited by hand is read
// or refused exactly as before, and a success here is always what
// encoding/json would have decoded (the tests compare the two).

// parseEnvelope reads the envelope as appendEnvelope writes it:
// {"schema":N,"kind":"K","checksum":"C","body":B} and a newline, with K and
// C plain ASCII and B a single JSON value.
func parseEnvelope(data []byte) (envelope, bool) {
	var env envelope
	rest, ok := bytes.CutPrefix(data, []byte(`{"schema":`))
	if !ok {
		return env, false
	}
	n := 0
	for n < len(rest) && n < 9 && '0' <= rest[n] && rest[n] <= '9' {
		n++
	}
	if n == 0 || (n > 1 && rest[0] == '0') {
		return env, false
	}
	env.Schema, _ = strconv.Atoi(string(rest[:n]))
	if env.Kind, rest, ok = plainField(rest[n:], `,"kind":"`); !ok {
		return env, false
	}
	if env.Checksum, rest, ok = plainField(rest, `","checksum":"`); !ok {
		return env, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`","body":`)); !ok {
		return env, false
	}
	rest = bytes.TrimSuffix(rest, []byte("\n"))
	if rest, ok = bytes.CutSuffix(rest, []byte("}")); !ok || len(rest) == 0 {
		return env, false
	}
	// A body with whitespace around it, or that is not one valid value,
	// is not the writer's.
	if isSpace(rest[0]) || isSpace(rest[len(rest)-1]) || !validJSON(rest) {
		return env, false
	}
	env.Body = rest
	return env, true
}

// plainField cuts prefix, then a string of printable ASCII other than a
// quote or a backslash, up to (not including) the next quote.
func plainField(b []byte, prefix string) (string, []byte, bool) {
	b, ok := bytes.CutPrefix(b, []byte(prefix))
	if !ok {
		return "", nil, false
	}
	for i, c := range b {
		switch {
		case c == '"':
			return string(b[:i]), b[i:], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return "", nil, false
		}
	}
	return "", nil, false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

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

// decodeRunFast decodes a run body as json.Marshal writes it, when its
// strings hold no escapes. It follows encoding/json's rules for what it
// accepts: null leaves a value as it is and sets a pointer or slice to
// nil, a repeated key decodes again into what the first one set.
func decodeRunFast(body []byte, r *Run) bool {
	if bytes.IndexByte(body, '\\') >= 0 || !validJSON(body) {
		return false
	}
	var out Run
	ok := eachField(gjson.ParseBytes(body), func(k string, v gjson.Result) bool {
		switch k {
		case "run_id":
			return decodeString(v, &out.RunID)
		case "created_at_ms":
			return decodeInt64(v, &out.CreatedAtMs)
		case "policy":
			return decodeSettings(v, &out.Policy)
		case "tools":
			return decodeStrings(v, &out.Tools)
		case "native_checkpoints":
			return decodeBool(v, &out.NativeCheckpoints)
		case "owner":
			return decodePointer(v, &out.Owner, func(v gjson.Result, o *Owner) bool {
				return eachField(v, func(k string, v gjson.Result) bool {
					switch k {
					case "pid":
						var pid int64
						if !decodeInt64(v, &pid) {
							return false
						}
						if v.Type != gjson.Null {
							o.PID = int(pid)
						}
						return true
					case "start_ticks":
						return decodeUint64(v, &o.StartTicks)
					}
					return false
				})
			})
		case "ended_at_ms":
			return decodePointer(v, &out.EndedAtMs, decodeInt64)
		case "end_reason":
			return decodeString(v, &out.EndReason)
		}
		return false
	})
	if ok {
		*r = out
	}
	return ok
}

func decodeSettings(v gjson.Result, s *Settings) bool {
	return eachField(v, func(k string, v gjson.Result) bool {
		switch k {
		case "sandbox":
			return eachField(v, func(k string, v gjson.Result) bool {
				sb := &s.Sandbox
				switch k {
				case "mode":
					return decodeString(v, &sb.Mode)
				case "process_monitor":
					return decodeBool(v, &sb.ProcessMonitor)
				case "work_duration":
					return decodePointer(v, &sb.WorkDuration, func(v gjson.Result, w *WorkDuration) bool {
						return eachField(v, func(k string, v gjson.Result) bool {
							switch k {
							case "protocol":
								return decodeString(v, &w.Protocol)
							case "timeout_seconds":
								return decodePointer(v, &w.TimeoutSeconds, decodeInt64)
							}
							return false
						})
					})
				case "monitor_owner_grace_seconds":
					return decodePointer(v, &sb.MonitorOwnerGraceSeconds, decodeInt64)
				case "monitor_timeout_seconds":
					return decodePointer(v, &sb.MonitorTimeoutSeconds, decodeInt64)
				case "max_output_bytes":
					return decodePointer(v, &sb.MaxOutputBytes, decodeInt64)
				case "command_limit":
					return decodePointer(v, &sb.CommandLimit, decodeInt64)
				}
				return false
			})
		case "secret_env":
			return decodeStrings(v, &s.SecretEnv)
		case "private_paths":
			return decodeStrings(v, &s.PrivatePaths)
		}
		return false
	})
}

// eachField calls field for every member of object v (null: none), and
// reports whether v was an object and every call succeeded.
func eachField(v gjson.Result, field func(k string, v gjson.Result) bool) bool {
	if v.Type == gjson.Null {
		return true
	}
	if !v.IsObject() {
		return false
	}
	ok := true
	v.ForEach(func(k, v gjson.Result) bool {
		ok = k.Type == gjson.String && field(k.Str, v)
		return ok
	})
	return ok
}

func decodeString(v gjson.Result, s *string) bool {
	switch v.Type {
	case gjson.Null:
		return true
	case gjson.String:
		*s = v.Str
		return true
	}
	return false
}

func decodeBool(v gjson.Result, b *bool) bool {
	switch v.Type {
	case gjson.Null:
		return true
	case gjson.True, gjson.False:
		*b = v.Type == gjson.True
		return true
	}
	return false
}

func decodeInt64(v gjson.Result, n *int64) bool {
	switch v.Type {
	case gjson.Null:
		return true
	case gjson.Number:
		i, err := strconv.ParseInt(v.Raw, 10, 64)
		*n = i
		return err == nil
	}
	return false
}

func decodeUint64(v gjson.Result, n *uint64) bool {
	switch v.Type {
	case gjson.Null:
		return true
	case gjson.Number:
		u, err := strconv.ParseUint(v.Raw, 10, 64)
		*n = u
		return err == nil
	}
	return false
}

// decodeStrings replaces *s with the array v (null: nil; []: empty).
func decodeStrings(v gjson.Result, s *[]string) bool {
	switch {
	case v.Type == gjson.Null:
		*s = nil
		return true
	case !v.IsArray():
		return false
	}
	out := []string{}
	ok := true
	v.ForEach(func(_, e gjson.Result) bool {
		var str string
		ok = e.Type == gjson.String && decodeString(e, &str)
		out = append(out, str)
		return ok
	})
	*s = out
	return ok
}

// decodePointer sets *p to nil for null, else decodes v into *p, made
// first if nil.
func decodePointer[T any](v gjson.Result, p **T, decode func(gjson.Result, *T) bool) bool {
	if v.Type == gjson.Null {
		*p = nil
		return true
	}
	if *p == nil {
		*p = new(T)
	}
	return decode(v, *p)
}
