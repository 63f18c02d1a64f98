package protocol

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// awkward are strings on every branch of encoding/json's string escaping.
var awkward = []string{
	"", "plain", `quote " and \ backslash`, "<script>&amp;</script>",
	"\b\f\n\r\t", "\x00\x01\x1f\x7f", "é漢字🙂", "\u2028line\u2029para",
	"bad \xff\xfe utf-8", "\xe6\x97", "tail\xe2\x80", string([]byte{0xed, 0xa0, 0x80}),
}

// encodeString is s as encoding/json writes it, with or without HTML
// escaping (json.Marshal escapes; WriteJSON's encoder does not).
func encodeString(t *testing.T, s string, escapeHTML bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var cases []string
	cases = append(cases, awkward...)
	for c := range 256 { // every byte alone, and inside text
		cases = append(cases, string(rune(c)), string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"z")
	}
	for _, c := range []rune{0x7ff, 0x800, 0xffff, 0x10000, 0x10ffff, 0xfffd, 0x2027, 0x202a} {
		cases = append(cases, string(c)+"x")
	}
	for range 20000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		cases = append(cases, string(b))
	}
	for _, escapeHTML := range []bool{true, false} {
		for _, s := range cases {
			want := encodeString(t, s, escapeHTML)
			if got := AppendString(nil, s, escapeHTML); !bytes.Equal(got, want) {
				t.Fatalf("%q (escapeHTML %v):\n got %s\nwant %s", s, escapeHTML, got, want)
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range awkward {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, escapeHTML bool) {
		want := encodeString(t, s, escapeHTML)
		got := AppendString(nil, s, escapeHTML)
		if !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s\nwant %s", s, got, want)
		}
		if !utf8.Valid(got) {
			t.Fatalf("%q encodes to invalid UTF-8 %q", s, got)
		}
	})
}

func TestAppendListsMatchEncodingJSON(t *testing.T) {
	seven := int64(-7)
	for _, v := range []any{[]string(nil), []string{}, []string{"a", "<b>"}} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.Encode(v)
		if got := AppendStrings(nil, v.([]string), false); string(got)+"\n" != buf.String() {
			t.Errorf("%#v: got %s, want %s", v, got, buf.String())
		}
	}
	for _, v := range [][]int{{}, {1, -2, 3}} {
		want, _ := json.Marshal(v)
		if got := AppendInts(nil, v); !bytes.Equal(got, want) {
			t.Errorf("%#v: got %s, want %s", v, got, want)
		}
	}
	for _, v := range []*int64{nil, &seven} {
		want, _ := json.Marshal(v)
		if got := AppendOptionalInt(nil, v); !bytes.Equal(got, want) {
			t.Errorf("%v: got %s, want %s", v, got, want)
		}
	}
}
