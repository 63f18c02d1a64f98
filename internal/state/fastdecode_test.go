package state

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// strictRun decodes a run body as decodeRecord does without the fast path.
func strictRun(body []byte) (Run, error) {
	var r Run
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(&r)
	return r, err
}

// Every run json.Marshal writes is read by the fast path, when its strings
// need no escapes, into what encoding/json reads; with escapes it is left
// to encoding/json.
func TestDecodeRunFastMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	fast := 0
	for i := range 5000 {
		var run Run
		fill(r, reflect.ValueOf(&run).Elem())
		if i%2 == 0 {
			plainStrings(r, reflect.ValueOf(&run).Elem())
		}
		body, err := json.Marshal(&run)
		if err != nil {
			t.Fatal(err)
		}
		want, err := strictRun(body)
		if err != nil {
			t.Fatal(err)
		}
		var got Run
		ok := decodeRunFast(body, &got)
		if escaped := bytes.IndexByte(body, '\\') >= 0; ok == escaped {
			t.Fatalf("run %d: fast path taken %v, body with escapes %v:\n%s", i, ok, escaped, body)
		}
		if ok {
			fast++
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("run %d read back as\n%+v\nwant\n%+v\nfrom %s", i, got, want, body)
			}
		}
	}
	if fast < 2500 {
		t.Fatalf("only %d of 5000 runs took the fast path", fast)
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
func TestDecodeRunFastTakesStoredRuns(t *testing.T) {
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
		if !decodeRunFast(body, &got) {
			t.Fatalf("fast path refused %s", body)
		}
		if want, _ := strictRun(body); !reflect.DeepEqual(got, want) {
			t.Fatalf("read back as\n%+v\nwant\n%+v", got, want)
		}
	}
}

// Whatever the fast path accepts, encoding/json accepts too, with the same
// result: a hand-edited or damaged record is never read more leniently.
// The cases are the corners of encoding/json's rules; FuzzDecodeRunFast
// searches for more.
func TestDecodeRunFastNeverMoreLenient(t *testing.T) {
	for _, body := range runFastCorpus {
		checkDecodeRunFast(t, []byte(body))
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

func checkDecodeRunFast(t *testing.T, body []byte) {
	t.Helper()
	var got Run
	if !decodeRunFast(body, &got) {
		return
	}
	want, err := strictRun(body)
	if err != nil {
		t.Fatalf("fast path accepted what encoding/json refuses (%v): %q", err, body)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q read as\n%+v\nencoding/json reads\n%+v", body, got, want)
	}
}

func FuzzDecodeRunFast(f *testing.F) {
	for _, body := range runFastCorpus {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkDecodeRunFast(t, body)
	})
}

// Every envelope appendEnvelope writes is parsed by hand into what
// encoding/json reads.
func TestParseEnvelopeMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 2000 {
		var m Monitor
		fill(r, reflect.ValueOf(&m).Elem())
		data, err := encodeRecord([]string{"monitor", "run", "settings"}[i%3], &m)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := parseEnvelope(data)
		if !ok {
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
		got, ok := parseEnvelope([]byte(c))
		if !ok {
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
	if _, ok := parseEnvelope([]byte(good)); !ok {
		t.Fatalf("the writer's own form was not parsed: %q", good)
	}
}

// A body nested past encoding/json's limit is left to encoding/json, which
// refuses it, rather than recursed into.
func TestFastPathsLeaveDeepNesting(t *testing.T) {
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	if validJSON([]byte(deep)) {
		t.Fatal("validJSON accepted nesting past maxDepth")
	}
	if _, ok := parseEnvelope([]byte(`{"schema":1,"kind":"run","checksum":"0","body":` + deep + "}\n")); ok {
		t.Fatal("parseEnvelope accepted nesting past maxDepth")
	}
	var r Run
	if decodeRunFast([]byte(deep), &r) {
		t.Fatal("decodeRunFast accepted nesting past maxDepth")
	}
	if !validJSON([]byte(`{"a":["\"[[[",{"b":"\\"}]}`)) {
		t.Fatal("brackets inside strings counted as nesting")
	}
}
