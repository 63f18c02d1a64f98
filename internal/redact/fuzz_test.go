package redact

import (
	"bytes"
	"encoding/base64"
	"html"
	"maps"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
)

var fuzzSecrets = []string{
	"1212345678",
	"aaaaaaab",
	"hunter2hunter2",
	"multi-line\nsecret-value\r\nend",
	`q"uo\te&<x>/+ %`,
	"it's a p@ss $1",
	"ab\ncd-é🔑\\x",
}

// fuzzPieces are what a byte of 0xE0 or more expands to (the next byte picks
// which), so that the fuzzer reaches whole needles, their halves and the rule
// triggers quickly.
func fuzzPieces() []string {
	var p []string
	for _, n := range allNeedles(fuzzSecrets) {
		p = append(p, n, n[:len(n)/2], n[len(n)/2:])
	}
	// Escaped forms, by the real encoders and by hand, and their halves,
	// with the families' introducers and broken escapes.
	rng := rand.New(rand.NewPCG(1, 2))
	names := slices.Sorted(maps.Keys(encoders))
	for _, s := range fuzzSecrets {
		var forms []string
		for _, n := range names {
			forms = append(forms, encoders[n](s))
		}
		for _, fam := range []string{"json", "go", "percent", "entity"} {
			forms = append(forms, partialEscape(rng, fam, s))
		}
		// Escaped twice: a form inside another family, and inside its own.
		forms = append(forms, url.QueryEscape(jsonEscape(s)), html.EscapeString(jsonEscape(s)),
			jsonEscape(jsonEscape(s)), url.PathEscape(url.QueryEscape(s)), asciiJSON(bytesRepr(s)),
			asciiJSON(htmlEscapers[0].Replace(s)), encoders["json html-safe"](htmlEscapers[1].Replace(s)),
			// A backslash before punctuation, and quotes written twice.
			strings.NewReplacer("$", `\$`, "@", `\@`, "&", `\&`, " ", `\ `, "+", `\+`, "%", `\%`).Replace(s),
			strings.ReplaceAll(strings.ReplaceAll(s, `'`, `''`), `"`, `""`))
		for _, f := range forms {
			p = append(p, f, f[:len(f)/2], f[len(f)/2:])
		}
		// Inside a base64 blob wrapped across the secret's form.
		w := wrapLines(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("z", 60)+s)), 64, "\n")
		p = append(p, w, w[:len(w)/2], w[len(w)/2:])
	}
	p = append(p, strings.Repeat("QUJD", 16), "\n"+strings.Repeat("QUJD", 16)+"\r\n")
	p = append(p, escFilling...)
	p = append(p, "  \t", "\r\n", "\\u", "%4", "&#x", "&#0", ";", "\\ud83d\\udd11", "+")
	p = append(p,
		"ghp_", ghTok, "eyJhbGciOi", ".", "-----BEGIN RSA PRIVATE KEY-----",
		"-----END RSA PRIVATE KEY-----", "Authorization: Bearer ", "https://u:",
		"map[Authorization:[Bearer ", `\"Authorization\":\"Bearer `, "authorization=Bearer+",
		"%3A%2F%2F", "%3a%2f%2fu%3A", "%40", "%25",
		"@", "AKIA", "IOSFODNN7EXAMPLE", " ", "\n", "xoxb-", "sk-ant-",
		"x", "ACCA", "sk-admin-", "\\n", "%3D", "p@ss", "#^", "''", `""`, "$", "\\$", "<token>", "-----END ",
		"\x1b[36m", `\u001b[0m`, "m", "AIza", "AIzaSyD-abcdefghijklmnopqrstuvwxyz01234", "web-1  | ", "Version: 1.5\n", "^[[", `\u{1B}[`,
	)
	return p
}

func expand(pieces []string, data []byte) []byte {
	var in []byte
	for i := 0; i < len(data); i++ {
		if b := data[i]; b < 0xE0 || i+1 == len(data) {
			in = append(in, b)
		} else {
			i++
			in = append(in, pieces[int(data[i])%len(pieces)]...)
		}
	}
	return in
}

// sizes turns fuzz bytes into write sizes, 0 (an empty write) to 22.
func sizes(spec []byte, shift int) func() int {
	i := 0
	return func() int {
		if len(spec) == 0 {
			return 1 + shift
		}
		i++
		return (int(spec[i%len(spec)]) + shift) % 23
	}
}

// maxFuzzData and maxFuzzChunks bound what FuzzChunking reads of its
// arguments. The fuzzing engine minimizes every input that finds new
// coverage, not only failing ones: after cutting the tail it tries removing
// every run of bytes, about n*n/2 calls for n bytes, for up to
// -fuzzminimizetime (60s by default), and counts none of those calls as
// execs. The mutator grows inputs to a kilobyte and more, whose
// minimization would take minutes at the half millisecond a call of that
// size takes, so each new one kept a worker at 0 execs/sec for the whole
// minute. Bytes past the bound change nothing, so the minimizer cuts them
// first and is done in seconds; with the pieces, maxFuzzData bytes still
// expand to several KiB, more than maxPending spans.
const (
	maxFuzzData   = 256
	maxFuzzChunks = 32
)

// FuzzChunking checks the streaming invariant: whatever the write
// boundaries, the output equals whole-input redaction, which equals the
// byte-by-byte scan without skipping, escape lanes included; no needle of a
// registered secret survives; and without format rules and lanes the
// output equals the naive oracle.
func FuzzChunking(f *testing.F) {
	f.Add([]byte("xx1212\xe012345678yy"), []byte{4, 1, 0, 7})
	f.Add([]byte("aaaaaaaaaaaab and \xe5\xe6 then \xf3\xf4\xf5\xf6 end"), []byte{1})
	f.Add([]byte("\xf7\xf8 token \xfa\xfb.\xfa\xfb\xfa.abcd \xfc\xfd\nMII\n\xfe"), []byte{3, 9, 2})
	f.Add([]byte("GET https://u:p@ss@h \xe2\xe3\xe4 hunter2hunt"), []byte{})
	f.Add([]byte("multi-line secret-value\r\nend\tmulti-line\n"), []byte{11, 5})
	f.Add([]byte("x=hunter2%68unter2 h&#117;nter2hunter2 \\u0068unter2hunter2 \\\\u0068unter2hunter2"), []byte{2, 1})
	f.Add([]byte("multi-line\n\n   secret-value \t end\n"), []byte{1, 0, 4})

	pieces := fuzzPieces()
	needles := allNeedles(fuzzSecrets)
	r, err := New(fuzzSecrets)
	if err != nil {
		f.Fatal(err)
	}
	literal, err := newRedactor(fuzzSecrets, false, false)
	if err != nil {
		f.Fatal(err)
	}
	exact := *r
	exact.exact = true
	f.Fuzz(func(t *testing.T, data, chunks []byte) {
		data = data[:min(len(data), maxFuzzData)]
		chunks = chunks[:min(len(chunks), maxFuzzChunks)]
		in := expand(pieces, data)
		whole := []byte(r.String(string(in)))
		checkNoLeak(t, needles, "whole", whole)
		checkSame(t, needles, "chunked", feedSizes(r, in, sizes(chunks, 0)), whole)
		checkSame(t, needles, "rechunked", feedSizes(r, in, sizes(chunks, 7)), whole)
		checkSame(t, needles, "without skipping", []byte(exact.String(string(in))), whole)

		want := oracle(needles, in)
		got := []byte(literal.String(string(in)))
		checkSame(t, needles, "literal vs oracle", got, want)
		checkSame(t, needles, "literal chunked", feedSizes(literal, in, sizes(chunks, 3)), want)
		if !bytes.Equal(got, whole) && !bytes.Contains(whole, []byte(Marker)) {
			t.Fatalf("rules removed text without a marker")
		}
	})
}
