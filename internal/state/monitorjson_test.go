package state

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
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

func TestMonitorJSONMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		var m Monitor
		fill(r, reflect.ValueOf(&m).Elem())
		want, err := json.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendMonitorJSON(nil, &m); !bytes.Equal(got, want) {
			t.Fatalf("record %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// The envelope is written by hand too; it must be what encoding/json wrote
// before, so that records of every kind read back alike.
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
		if got := appendEnvelope(nil, kind, body); !bytes.Equal(got, append(want, '\n')) {
			t.Fatalf("kind %s:\n got %s\nwant %s", kind, got, want)
		}
	}
}

// A monitor record written by hand decodes, checksum and all, into the
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
