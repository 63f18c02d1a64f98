package state

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// awkward are strings on every branch of encoding/json's string escaping.
var awkward = []string{
	"", "plain", "m_0123456789abcdefghijklmn", `quote " and \ backslash`,
	"<script>&amp;</script>", "\b\f\n\r\t", "\x00\x01\x1f\x7f", "é漢字🙂",
	"\u2028line\u2029para", "bad \xff\xfe utf-8", "\xe6\x97", "tail\xe2\x80",
	"[REDACTED]", "sk_live_0123456789abcdef",
}

// randomString is one of the awkward strings, or random bytes that are
// sometimes valid UTF-8 and sometimes not.
func randomString(r *rand.Rand) string {
	if r.IntN(3) > 0 {
		return awkward[r.IntN(len(awkward))]
	}
	b := make([]byte, r.IntN(12))
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	if r.IntN(2) == 0 {
		return string(bytes.ToValidUTF8(b, []byte("\u2028")))
	}
	return string(b)
}

// fill sets v (a settable value) at random through reflection, so that a
// field added to Monitor or Receipt is exercised without this test naming
// it: nil and empty slices, nil pointers, zero values (for omitempty) and
// extreme numbers all come up.
func fill(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(randomString(r))
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int64:
		vals := []int64{0, 1, -1, 42, 1796041821674, -1 << 63, 1<<63 - 1, r.Int64()}
		v.SetInt(vals[r.IntN(len(vals))])
	case reflect.Uint64:
		vals := []uint64{0, 1, 1<<64 - 1, r.Uint64()}
		v.SetUint(vals[r.IntN(len(vals))])
	case reflect.Pointer:
		if r.IntN(3) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(r, p.Elem())
		v.Set(p)
	case reflect.Slice:
		switch r.IntN(4) {
		case 0:
			v.SetZero()
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			s := reflect.MakeSlice(v.Type(), 1+r.IntN(3), 3)
			for i := range s.Len() {
				fill(r, s.Index(i))
			}
			v.Set(s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fill(r, v.Field(i))
		}
	default:
		panic("fill: add a case for " + v.Kind().String())
	}
}

// strictDecode decodes body into a new value of v's type as decodeRecord
// does without the fast path.
func strictDecode(body []byte, v any) (any, error) {
	out := reflect.New(reflect.TypeOf(v).Elem()).Interface()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(out)
	return out, err
}

// Every record has one spelling, its struct's fields and tags; every
// encoding comes from it: encoding/json, and the encoder and decoder
// generated from the struct (TestGeneratedJSONIsCurrent holds those to
// the struct as it is now). This holds them to one another for every
// record type, whatever its fields hold, so that a field added to a
// record is encoded and decoded alike by all of them or fails here.
func TestRecordEncodingsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range recordTypes {
		if typ == reflect.TypeFor[envelope]() {
			continue // TestEnvelopeMatchesEncodingJSON
		}
		fast := 0
		for i := range 3000 {
			v := reflect.New(typ)
			fill(r, v.Elem())
			if i%2 == 0 {
				plainStrings(r, v.Elem())
			}
			want, err := json.Marshal(v.Interface())
			if err != nil {
				t.Fatal(err)
			}
			got, ok := appendGenerated(nil, v.Interface())
			if !ok || !bytes.Equal(got, want) {
				t.Fatalf("%s %d: generated encoder (taken %v)\n got %s\nwant %s", typ, i, ok, got, want)
			}
			strict, err := strictDecode(want, v.Interface())
			if err != nil {
				t.Fatal(err)
			}
			back := reflect.New(typ).Interface()
			taken := decodeGenerated(want, back)
			if escaped := bytes.IndexByte(want, '\\') >= 0; taken == escaped {
				t.Fatalf("%s %d: fast decode taken %v, body with escapes %v:\n%s", typ, i, taken, escaped, want)
			}
			if taken {
				fast++
				if !reflect.DeepEqual(back, strict) {
					t.Fatalf("%s %d: generated decoder read\n%+v\nencoding/json reads\n%+v\nfrom %s", typ, i, back, strict, want)
				}
			}
		}
		if fast < 1500 {
			t.Fatalf("%s: only %d of 3000 records took the fast decoder", typ, fast)
		}
	}
}

// The envelope is written by the generated encoder too; it must be what
// encoding/json wrote before, so that records of every kind read back
// alike.
func TestEnvelopeMatchesEncodingJSON(t *testing.T) {
	for _, kind := range []string{"monitor", "run", "settings", "budget"} {
		// A body as the encoders make it: compact, with '<' escaped.
		body, err := json.Marshal(map[string]any{"a": []any{1, "<x>"}, "b": nil})
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(envelope{Schema: SchemaVersion, Kind: kind, Checksum: checksum(body), Body: body})
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeRecord(kind, json.RawMessage(body))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, append(want, '\n')) {
			t.Fatalf("kind %s:\n got %s\nwant %s", kind, got, want)
		}
	}
}

// A monitor record written by the generated encoder decodes, checksum and all, into the
// record it was made from.
func TestMonitorRecordRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 500 {
		var m Monitor
		fill(r, reflect.ValueOf(&m).Elem())
		data, err := encodeRecord("monitor", &m)
		if err != nil {
			t.Fatal(err)
		}
		var back Monitor
		if err := decodeRecord("record.json", "monitor", data, &back); err != nil {
			t.Fatalf("record %d: %v\n%s", i, err, data)
		}
		// Decoding loses what encoding/json loses (invalid UTF-8, empty
		// slices marked omitempty): compare with the record as encoding/json
		// itself round-trips it.
		want, _ := json.Marshal(&m)
		var viaJSON Monitor
		if err := json.Unmarshal(want, &viaJSON); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, viaJSON) {
			t.Fatalf("record %d read back as\n%+v\nwant\n%+v", i, back, viaJSON)
		}
	}
}

// plainStrings sets every string in v to one that needs no escape in JSON.
func plainStrings(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		plain := []string{"", "default", "host", "forge-work-duration-v2", "A_*", ".git", "start_process", "é漢字🙂 ok"}
		v.SetString(plain[r.IntN(len(plain))])
	case reflect.Pointer:
		if !v.IsNil() {
			plainStrings(r, v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			plainStrings(r, v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			plainStrings(r, v.Field(i))
		}
	}
}

// The runs procmon stores are the ones the fast path is for.
func TestDecodePlainTakesStoredRuns(t *testing.T) {
	owner := &Owner{PID: 4242, StartTicks: 1 << 40}
	ended := int64(1796041821674)
	for _, run := range []Run{
		{RunID: DefaultRun, CreatedAtMs: 1796041821000, Policy: ExampleSettings(), Tools: Tools},
		{RunID: "r_0123456789abcdefghijklmn", Policy: ExampleSettings(), Tools: []string{}, Owner: owner, EndedAtMs: &ended, EndReason: "owner_exited"},
	} {
		body, err := json.Marshal(&run)
		if err != nil {
			t.Fatal(err)
		}
		var got Run
		if !decodeGenerated(body, &got) {
			t.Fatalf("fast path refused %s", body)
		}
		if want, _ := strictDecode(body, &Run{}); !reflect.DeepEqual(&got, want) {
			t.Fatalf("read back as\n%+v\nwant\n%+v", got, want)
		}
	}
}

// Whatever the fast path accepts, encoding/json accepts too, with the same
// result: a hand-edited or damaged record is never read more leniently.
// The cases are the corners of encoding/json's rules; FuzzDecodePlainRun
// searches for more.
func TestDecodePlainNeverMoreLenient(t *testing.T) {
	for _, body := range runFastCorpus {
		checkDecodePlainRun(t, []byte(body))
	}
}

var runFastCorpus = []string{
	`{"run_id":"default","created_at_ms":1,"policy":{"sandbox":{"mode":"host","process_monitor":true,"work_duration":{"protocol":"forge-work-duration-v2","timeout_seconds":null},"monitor_owner_grace_seconds":30,"monitor_timeout_seconds":null,"max_output_bytes":1000000,"command_limit":20}},"tools":["start_process"],"native_checkpoints":false}`,
	`{"run_id":"a","run_id":null}`,                  // null leaves the first value
	`{"owner":{"pid":1},"owner":{"start_ticks":2}}`, // a repeated key merges
	`{"owner":{"pid":1},"owner":null}`,
	`{"tools":[]}`, `{"tools":null}`, `{"tools":["a",null]}`, `{"tools":[1]}`,
	`{"created_at_ms":1.5}`, `{"created_at_ms":1e3}`, `{"created_at_ms":-0}`, `{"created_at_ms":9223372036854775808}`,
	`{"owner":{"pid":-1,"start_ticks":-1}}`, `{"owner":{"start_ticks":18446744073709551615}}`,
	`{"Run_ID":"x"}`, `{"unknown":1}`, `{"policy":{"sandbox":{"extra":1}}}`,
	`{"policy":null}`, `{"policy":{"sandbox":null}}`, `{"policy":[]}`,
	`null`, `[]`, `1`, `"x"`, `{}`, ` {}`, `{} `, `{"run_id":"a"} {}`,
	`{"run_id":"\u0041"}`, "{\"run_id\":\"a\x01\"}", "{\"run_id\":\"\xff\"}", `{"run_id":"a`,
	`{"native_checkpoints":null}`, `{"native_checkpoints":"true"}`, `{"end_reason":7}`,
	`{"policy":{"secret_env":["A_*"],"private_paths":[".git"]}}`,
	`{"policy":{"sandbox":{"work_duration":{"protocol":"x"},"work_duration":{"timeout_seconds":5}}}}`,
	`{"run_id":01}`, `{"created_at_ms":01}`, `{"created_at_ms":+1}`,
}

func checkDecodePlainRun(t *testing.T, body []byte) {
	t.Helper()
	var got Run
	if !decodeGenerated(body, &got) {
		return
	}
	want, err := strictDecode(body, &Run{})
	if err != nil {
		t.Fatalf("fast path accepted what encoding/json refuses (%v): %q", err, body)
	}
	if !reflect.DeepEqual(&got, want) {
		t.Fatalf("%q read as\n%+v\nencoding/json reads\n%+v", body, got, want)
	}
}

func FuzzDecodePlainRun(f *testing.F) {
	for _, body := range runFastCorpus {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkDecodePlainRun(t, body)
	})
}

// Every envelope encodeRecord writes is read by the generated decoder into
// what encoding/json reads.
func TestParseEnvelopeMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 2000 {
		var m Monitor
		fill(r, reflect.ValueOf(&m).Elem())
		data, err := encodeRecord([]string{"monitor", "run", "settings"}[i%3], &m)
		if err != nil {
			t.Fatal(err)
		}
		var got envelope
		if !decodeGenerated(data, &got) {
			t.Fatalf("record %d: envelope not parsed: %s", i, data)
		}
		var want envelope
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("record %d: parsed as %+v, want %+v", i, got, want)
		}
	}
}

// An envelope in any other form is left to encoding/json, never misread.
func TestParseEnvelopeNeverMisreads(t *testing.T) {
	body := `{"a":1}`
	good := `{"schema":1,"kind":"run","checksum":"ab12","body":` + body + "}\n"
	cases := []string{
		good, strings.TrimSuffix(good, "\n"), good + "\n", " " + good,
		strings.Replace(good, `"schema":1`, `"schema":01`, 1),
		strings.Replace(good, `"schema":1`, `"schema":-1`, 1),
		strings.Replace(good, `"schema":1`, `"schema": 1`, 1),
		strings.Replace(good, `"kind":"run"`, `"kind":"r\u0075n"`, 1),
		strings.Replace(good, `"kind":"run"`, "\"kind\":\"r\x01n\"", 1),
		strings.Replace(good, `"kind":"run"`, "\"kind\":\"r\xffn\"", 1),
		strings.Replace(good, body, ` {"a":1}`, 1),
		strings.Replace(good, body, `{"a":1},"x":2`, 1),
		strings.Replace(good, body, `{"a":1`, 1),
		strings.Replace(good, body, "\"\xff\"", 1),
		`{"schema":1,"kind":"run","checksum":"ab12","body":}` + "\n",
		`{"schema":1,"kind":"run","checksum":"ab12","body":{"a":1}}}` + "\n",
		`{"schema":1}`, ``, `{`,
	}
	for _, c := range cases {
		var got envelope
		if !decodeGenerated([]byte(c), &got) {
			continue
		}
		var want envelope
		if err := json.Unmarshal([]byte(c), &want); err != nil {
			t.Fatalf("parsed what encoding/json refuses (%v): %q", err, c)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q parsed as %+v, encoding/json reads %+v", c, got, want)
		}
	}
	if !decodeGenerated([]byte(good), &envelope{}) {
		t.Fatalf("the writer's own form was not parsed: %q", good)
	}
}

// A body nested past encoding/json's limit is left to encoding/json, which
// refuses it, rather than recursed into.
func TestFastPathsLeaveDeepNesting(t *testing.T) {
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	if decodeGenerated([]byte(`{"schema":1,"kind":"run","checksum":"0","body":`+deep+"}\n"), &envelope{}) {
		t.Fatal("the envelope's fast decoder accepted nesting past encoding/json's limit")
	}
	if decodeGenerated([]byte(`{"tools":`+deep+"}"), &Run{}) {
		t.Fatal("the run's fast decoder accepted nesting past encoding/json's limit")
	}
}
