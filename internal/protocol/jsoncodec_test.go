package protocol

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"

	"procmon/internal/protocol/jsongen"
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

// sample has a field of every kind the generated code takes.
type sample struct {
	S     string          `json:"s"`
	SO    string          `json:"s_o,omitempty"`
	B     bool            `json:"b"`
	BO    bool            `json:"b_o,omitempty"`
	I     int             `json:"i"`
	I8    int8            `json:"i8"`
	I16   int16           `json:"i16,omitempty"`
	I32   int32           `json:"i32"`
	I64   int64           `json:"i64,omitempty"`
	U     uint            `json:"u"`
	U8    uint8           `json:"u8"`
	U16   uint16          `json:"u16"`
	U32   uint32          `json:"u32,omitempty"`
	U64   uint64          `json:"u64"`
	C     Code            `json:"c"`
	P     *int64          `json:"p"`
	PO    *string         `json:"p_o,omitempty"`
	L     []string        `json:"l"`
	LO    []int           `json:"l_o,omitempty"`
	LL    [][]string      `json:"ll,omitempty"`
	LP    []*int          `json:"lp"`
	Sub   inner           `json:"sub"`
	SubP  *inner          `json:"sub_p,omitempty"`
	Subs  []inner         `json:"subs"`
	Raw   json.RawMessage `json:"raw,omitempty"`
	NoTag string
	Skip  string `json:"-"`
	hid   string
}

type inner struct {
	Name string   `json:"name,omitempty"`
	N    *int     `json:"n,omitempty"`
	Tags []string `json:"tags,omitempty"`
}

// sampleJSON is sample_json_test.go; go generate writes it.
var sampleJSON = jsongen.Spec{
	File: "sample_json_test.go", Package: "protocol",
	Doc:    "The codec of the test types of jsoncodec_test.go.",
	Encode: []reflect.Type{reflect.TypeFor[sample]()}, Decode: []reflect.Type{reflect.TypeFor[sample]()},
}

//go:generate env PROCMON_UPDATE=1 go test -run TestGeneratedJSONIsCurrent .

func TestGeneratedJSONIsCurrent(t *testing.T) { jsongen.Check(t, sampleJSON) }

var raws = []string{`{"a":[1,"b"]}`, "null", "7", "[]"}

// fillSample makes a random sample; with plain, its strings need no
// escape.
func fillSample(r *rand.Rand, plain bool) sample {
	str := func() string {
		if plain {
			return []string{"", "plain", "é漢字🙂", "m_0123"}[r.IntN(4)]
		}
		return awkward[r.IntN(len(awkward))]
	}
	list := func() []string {
		switch r.IntN(3) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		return []string{str(), str()}
	}
	num := func() int64 { return []int64{0, 1, -1, 1 << 62, r.Int64()}[r.IntN(5)] }
	in := func() inner {
		v := inner{Name: str(), Tags: list()}
		if r.IntN(2) == 0 {
			n := int(num())
			v.N = &n
		}
		return v
	}
	v := sample{
		S: str(), SO: str(), B: r.IntN(2) == 0, BO: r.IntN(2) == 0,
		I: int(num()), I8: int8(num()), I16: int16(num()), I32: int32(num()), I64: num(),
		U: uint(num()), U8: uint8(num()), U16: uint16(num()), U32: uint32(num()), U64: r.Uint64() >> r.IntN(64),
		C: Code(str()), L: list(), Sub: in(), NoTag: str(), Skip: str(), hid: str(),
	}
	if r.IntN(2) == 0 {
		p := num()
		v.P = &p
		s := str()
		v.PO = &s
		sub := in()
		v.SubP = &sub
		v.LO = []int{int(num())}
		v.LL = [][]string{list(), list()}
		n := int(num())
		v.LP = []*int{&n}
		v.Subs = []inner{in(), in()}
	} else if r.IntN(2) == 0 {
		v.LO = []int{}
		v.LL = [][]string{}
		v.LP = []*int{}
		v.Subs = []inner{}
	}
	if r.IntN(2) == 0 {
		v.Raw = json.RawMessage(raws[r.IntN(len(raws))])
	}
	return v
}

// The generated encoder writes what encoding/json writes, for a value of
// every kind it takes.
func TestGeneratedEncoderMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		v := fillSample(r, i%4 == 0)
		want, err := json.Marshal(&v)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonAppendSample(nil, &v); !bytes.Equal(got, want) {
			t.Fatalf("value %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// What the generated decoder reads is what encoding/json reads; it takes
// every value the encoder writes whose strings need no escape.
func TestGeneratedDecoderMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	taken := 0
	for i := range 3000 {
		v := fillSample(r, i%2 == 0)
		data, err := json.Marshal(&v)
		if err != nil {
			t.Fatal(err)
		}
		var want sample
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		var got sample
		if !DecodeJSON(data, &got, jsonDecodeSample) {
			if bytes.IndexByte(data, '\\') < 0 {
				t.Fatalf("value %d without escapes was not taken: %s", i, data)
			}
			continue
		}
		taken++
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("value %d read as\n%+v\nencoding/json reads\n%+v\nfrom %s", i, got, want, data)
		}
	}
	if taken < 1000 {
		t.Fatalf("only %d of 3000 values were taken", taken)
	}
}

// A type encoding/json writes other than plainly is refused, not
// generated wrong.
func TestGeneratorRefuses(t *testing.T) {
	type withFloat struct {
		F float64 `json:"f"`
	}
	type withMap struct {
		M map[string]int `json:"m"`
	}
	type withBytes struct {
		B []byte `json:"b"`
	}
	type withTime struct {
		T time.Time `json:"t"`
	}
	type withOption struct {
		N int `json:"n,string"`
	}
	type withEmbedded struct {
		inner
	}
	type withAny struct {
		A any `json:"a"`
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[withFloat](), reflect.TypeFor[withMap](), reflect.TypeFor[withBytes](),
		reflect.TypeFor[withTime](), reflect.TypeFor[withOption](), reflect.TypeFor[withEmbedded](),
		reflect.TypeFor[withAny](),
	} {
		for _, decode := range []bool{false, true} {
			s := jsongen.Spec{File: "x.go", Package: "protocol", Encode: []reflect.Type{typ}}
			if decode {
				s.Encode, s.Decode = nil, s.Encode
			}
			if _, err := jsongen.Generate(s); err == nil {
				t.Errorf("%s (decode %v) was generated", typ, decode)
			}
		}
	}
}
