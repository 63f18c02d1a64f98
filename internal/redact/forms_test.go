package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const specialSecret = `s3cr"et/&<k>+ y=%`

func TestFormsOfSpecialSecret(t *testing.T) {
	forms := Forms(specialSecret)
	want := []string{
		specialSecret,
		`s3cr\"et/&<k>+ y=%`,                     // JSON and Go-quoted agree here
		`s3cr\"et/\u0026\u003ck\u003e+ y=%`,      // json.Marshal, HTML-safe
		`s3cr\\\"et/&<k>+ y=%`,                   // JSON escaped twice
		`s3cr\\\"et/\\u0026\\u003ck\\u003e+ y=%`, // json.Marshal twice
		"s3cr%22et%2F%26%3Ck%3E%2B+y%3D%25",      // query
		"s3cr%22et%2F&%3Ck%3E+%20y=%25",          // path
		"s3cr%22et%2F%26%3Ck%3E%2B%20y%3D%25",    // Python's quote(s, safe=""), encodeURIComponent
		"s3cr%22et/%26%3Ck%3E%2B%20y%3D%25",      // Python's quote(s)
		"s3cr&#34;et/&amp;&lt;k&gt;+ y=%",        // XML, Go's html.EscapeString
		"s3cr&quot;et/&amp;&lt;k&gt;+ y=%",       // Python's html.escape, PHP, Ruby
		`s3cr"et/&amp;&lt;k&gt;+ y=%`,            // html.escape(s, quote=False)
		// base64 at each alignment k (the secret's first k bytes end a
		// group of the blob), with the characters the bytes at either
		// end determine on their own: "PS" of "=%", the "z" of "s" and
		// "J" of "%", the "Mz" of "s3".
		"czNjciJldC8mPGs+KyB5PS", // base64, k=0
		"czNjciJldC8mPGs-KyB5PS", // base64url, k=0
		"zM2NyImV0LyY8az4rIHk9J", // k=1, same in both alphabets
		"MzY3IiZXQvJjxrPisgeT0l", // k=2
		// base64 of the JSON form (Python's json.dumps writes the same
		// here), k=0, 1 (two alphabets), 2
		"czNjclwiZXQvJjxrPisgeT0l",
		"zM2NyXCJldC8mPGs+KyB5PS",
		"zM2NyXCJldC8mPGs-KyB5PS",
		"MzY3JcImV0LyY8az4rIHk9J",
		// base64 of json.Marshal's, k=0, 1, 2
		"czNjclwiZXQvXHUwMDI2XHUwMDNja1x1MDAzZSsgeT0l",
		"zM2NyXCJldC9cdTAwMjZcdTAwM2NrXHUwMDNlKyB5PS",
		"MzY3JcImV0L1x1MDAyNlx1MDAzY2tcdTAwM2UrIHk9J",
	}
	for k, w := range want {
		if !slices.Contains(forms, w) {
			t.Errorf("missing expected form %d", k)
		}
	}
	if len(forms) != len(want) {
		t.Errorf("got %d forms, want %d (duplicates must collapse)", len(forms), len(want))
	}
}

func TestFormsJSONDiffersFromGo(t *testing.T) {
	forms := Forms("tab\there\u2028\x01-more")
	for k, w := range []string{`tab\there\u2028\u0001-more`, `tab\there\u2028\x01-more`} {
		if !slices.Contains(forms, w) {
			t.Errorf("missing expected form %d (JSON, then Go)", k)
		}
	}
}

func TestFormsAreLongEnoughAndUnique(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 200; i++ {
		b := make([]byte, 8+rng.IntN(30))
		for k := range b {
			b[k] = byte(rng.IntN(256))
			if rng.IntN(8) == 0 {
				b[k] = '\n'
			}
		}
		forms := Forms(string(b))
		if len(forms) == 0 || forms[0] != string(b) {
			t.Fatalf("the secret itself is not the first form")
		}
		seen := map[string]bool{}
		for _, f := range forms {
			if len(f) < MinSecretLen {
				t.Fatalf("form of %d bytes", len(f))
			}
			if seen[f] {
				t.Fatalf("duplicate form")
			}
			seen[f] = true
		}
	}
	if f := Forms("short"); len(f) != 0 {
		t.Fatalf("a short secret has %d forms", len(f))
	}
}

func TestEncodedFormsAreRedacted(t *testing.T) {
	r := mustNew(t, specialSecret)
	needles := Forms(specialSecret)
	for i, f := range needles {
		in := []byte("before " + f + " after\n")
		want := []byte("before " + Marker + " after\n")
		checkSame(t, needles, fmt.Sprintf("form %d", i), []byte(r.String(string(in))), want)
		for cut := 0; cut <= len(in); cut++ {
			checkSame(t, needles, "form split", feedCuts(r, in, cut), want)
		}
	}
}

// TestBase64InsideLongerBlobs embeds the secret at every alignment inside
// base64 blobs of other data, for each length modulo three: every
// character whose six bits all come from the secret must go, and only
// the ones that straddle its edges may stay next to the marker.
func TestBase64InsideLongerBlobs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{16, 17, 29} {
		testBase64InsideLongerBlobs(t, rng, randomSecret(rng, n))
	}
}

func testBase64InsideLongerBlobs(t *testing.T, rng *rand.Rand, secret string) {
	r := mustNew(t, secret)
	needles := Forms(secret)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
		for pre := 0; pre < 9; pre++ {
			for post := 0; post < 4; post++ {
				data := make([]byte, pre+len(secret)+post)
				for i := range data {
					data[i] = byte(rng.IntN(256))
				}
				copy(data[pre:], secret)
				blob := enc.EncodeToString(data)
				in := []byte("payload=" + blob + "\n")
				out := []byte(r.String(string(in)))
				checkNoLeak(t, needles, "blob", out)
				if strings.Count(string(out), Marker) != 1 {
					t.Fatalf("pre %d post %d: want one marker in %s", pre, post, masked(needles, out))
				}
				// The marker stands for blob[a:b]: it covers the
				// characters [lo, hi) that the secret's bits fill, and at
				// most the one that straddles each edge besides.
				a := strings.Index(string(out), Marker) - len("payload=")
				b := len(blob) - (len(out) - len("\n") - len("payload=") - a - len(Marker))
				lo, hi := (8*pre+5)/6, 8*(pre+len(secret))/6
				if a > lo || b < hi || a < lo-1 || b > hi+1 {
					t.Fatalf("length %d pre %d post %d: the marker covers characters [%d, %d), want [%d, %d)", len(secret), pre, post, a, b, lo, hi)
				}
				checkSame(t, needles, "blob one-byte", oneByte(r, in), out)
			}
		}
	}
}

// xmlEscape must write what encoding/xml's EscapeText writes: an XML form
// that differs from the one a service prints would never match.
func TestXMLEscapeMatchesEncodingXML(t *testing.T) {
	cases := []string{
		"", "plain", `a"b'c&d<e>f`, "tab\tnl\ncr\r", "\x00\x01\x1f ok",
		"\xff\xfe broken", "é ü 日本 🔑", "\uFFFD real replacement", "\uFFFE\uFFFF",
		"\U0010FFFF", "p@ss&w0rd<script>", "\xed\xa0\x80 surrogate",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		var want bytes.Buffer
		if err := xml.EscapeText(&want, []byte(s)); err != nil {
			t.Fatal(err)
		}
		if got := xmlEscape(s); got != want.String() {
			t.Errorf("xmlEscape(%q) = %q, encoding/xml writes %q", s, got, want.String())
		}
	}
}

// TestPythonFormsArePythons: the forms that say they are Python's output
// are, byte for byte, without their quotes: asciiJSON is json.dumps
// (ensure_ascii), strRepr is repr of the string and bytesRepr of its
// UTF-8 bytes (whichever quotes the string holds), and the percent forms
// are urllib.parse.quote with and without its safe '/'.
func TestPythonFormsArePythons(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the Python shim's tests need it too")
	}
	rng := rand.New(rand.NewPCG(61, 62))
	var in []string
	for range 300 {
		s := randomEscSecret(rng, 8+rng.IntN(20))
		switch rng.IntN(3) {
		case 0:
			s = strings.ReplaceAll(s, "'", "")
		case 1:
			s = strings.ReplaceAll(s, "\"", "")
		}
		in = append(in, s+"\x7f\r\b\f\x1bé\u200b\U0001f511\u00ad")
	}
	script := `import json, sys, urllib.parse
for s in json.load(sys.stdin):
    print(json.dumps([json.dumps(s)[1:-1], repr(s.encode())[2:-1], repr(s)[1:-1],
                      urllib.parse.quote(s, safe=""), urllib.parse.quote(s)]))`
	cmd := exec.Command(py, "-c", script)
	body, _ := json.Marshal(in)
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(in) {
		t.Fatalf("python3 answered %d lines for %d strings", len(lines), len(in))
	}
	for i, l := range lines {
		var want [5]string
		if err := json.Unmarshal([]byte(l), &want); err != nil {
			t.Fatal(err)
		}
		for k, got := range []string{asciiJSON(in[i]), bytesRepr(in[i]), strRepr(in[i]),
			percentEscape(in[i], "-_.~"), percentEscape(in[i], "-_.~/")} {
			if got != want[k] {
				t.Errorf("%q: form %d is %q, Python writes %q", in[i], k, got, want[k])
			}
		}
	}
}

// jsonWriters write a string as a JSON string, quotes included: Go's
// json.Marshal (HTML-safe), an encoder without HTML escaping, and
// Python's json.dumps (asciiJSON, which TestPythonFormsArePythons holds
// to Python).
var jsonWriters = map[string]func(string) string{
	"json.Marshal": func(s string) string { b, _ := json.Marshal(s); return string(b) },
	"no HTML escaping": func(s string) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		return strings.TrimSuffix(b.String(), "\n")
	},
	"json.dumps": func(s string) string { return `"` + asciiJSON(s) + `"` },
}

// TestBase64OfJSONDocuments: a JSON document that holds the secret, base64
// encoded (a Kubernetes secret's data, a token's payload, a cookie), as
// Go's json.Marshal, an encoder without HTML escaping and Python's
// json.dumps (asciiJSON, which TestPythonFormsArePythons holds to Python)
// write it. JSON escapes the secret's quotes, backslashes, control
// characters, and for Go &, < and >, for Python all beyond ASCII; no eight
// bytes of what the writer wrote for the secret may be decoded from what
// is left, at any alignment, and the same document with another secret
// passes as it is.
func TestBase64OfJSONDocuments(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	encs := map[string]*base64.Encoding{"std": base64.StdEncoding, "url": base64.URLEncoding, "raw": base64.RawStdEncoding}
	for range 40 {
		secret := randomEscSecret(rng, 8+rng.IntN(24)) + []string{`"`, `\`, "<", "&", "é", ""}[rng.IntN(6)]
		other := randomEscSecret(rng, len(secret))
		r := mustNew(t, secret)
		for wname, write := range jsonWriters {
			written := write(secret)
			written = written[1 : len(written)-1]
			for ename, enc := range encs {
				user := strings.Repeat("u", rng.IntN(6))
				doc := func(s string) string {
					return enc.EncodeToString([]byte(`{"user":"` + user + `","password":` + write(s) + `,"n":7}`))
				}
				in := "  .dockerconfigjson: " + doc(secret) + "\n"
				out := r.String(in)
				if strings.Count(out, Marker) != 1 {
					t.Fatalf("%s, %s: want one marker in %q", wname, ename, out)
				}
				if got := decodable(out, enc); containsWindow(got, written, 8) {
					t.Fatalf("%s, %s: eight bytes of the written secret decode from %q", wname, ename, out)
				}
				if clean := "  .dockerconfigjson: " + doc(other) + "\n"; r.String(clean) != clean {
					t.Fatalf("%s, %s: a document without the secret was redacted", wname, ename)
				}
			}
		}
	}
}

// TestJSONThreeDeep: a JSON log line whose field holds a request's body,
// itself a JSON document whose field holds a JSON document with the
// secret (a handler logging an event it was sent), as Go's json.Marshal,
// an encoder without HTML escaping and Python's json.dumps write each
// level: the secret, escaped three times, is one marker, at every
// chunking.
func TestJSONThreeDeep(t *testing.T) {
	rng := rand.New(rand.NewPCG(65, 66))
	for range 30 {
		secret := randomEscSecret(rng, 8+rng.IntN(24)) + []string{`"`, `\`, "<", "&", "é", ""}[rng.IntN(6)]
		r := mustNew(t, secret)
		for name, write := range jsonWriters {
			// Each level's document around the text written at the level
			// below; the secret's own bytes are those three writes of it.
			const mark = "\x00"
			inner := `{"pw":` + write(mark) + `}`
			body := `{"body":` + write(inner) + `}`
			line := `{"log":` + write(body) + `}` + "\n"
			thrice := func(s string) string {
				for range 3 {
					s = write(s)
					s = s[1 : len(s)-1]
				}
				return s
			}
			escaped, marked := thrice(secret), thrice(mark)
			if strings.Count(line, marked) != 1 {
				t.Fatalf("%s: the secret's place is not found in %q", name, line)
			}
			in := strings.Replace(line, marked, escaped, 1)
			want := strings.Replace(line, marked, Marker, 1)
			if out := checkChunkings(t, r, Forms(secret), []byte(in), rng); string(out) != want {
				t.Fatalf("%s: secret %q\n in   %s\n out  %s\n want %s", name, secret, in, out, want)
			}
		}
	}
}

// decodable returns what the base64 runs of text decode to, each at every
// alignment, joined by NULs.
func decodable(text string, enc *base64.Encoding) []byte {
	enc = enc.WithPadding(base64.NoPadding)
	var out []byte
	for _, run := range strings.FieldsFunc(text, func(r rune) bool { return !classBase64[byte(r)] || r > 0x7f || r == '=' }) {
		for k := 0; k < 4 && k < len(run); k++ {
			s := run[k:]
			s = s[:len(s)/4*4]
			if b, err := enc.DecodeString(s); err == nil {
				out = append(append(out, b...), 0)
			}
		}
	}
	return out
}

// containsWindow reports whether b holds any n consecutive bytes of s.
func containsWindow(b []byte, s string, n int) bool {
	for i := 0; i+n <= len(s); i++ {
		if bytes.Contains(b, []byte(s[i:i+n])) {
			return true
		}
	}
	return false
}

// trieSize counts the trie's nodes exactly, for secrets whose forms share
// long prefixes (a late character to escape) and for ones that share none.
func TestTrieSizeIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, secrets := range [][]string{
		{randomSecret(rng, 40) + `"=&<`},
		{randomSecret(rng, 32), randomSecret(rng, 32), "multi\nline-" + randomSecret(rng, 20)},
		{randomEscSecret(rng, 30), randomEscSecret(rng, 30)},
	} {
		pats, err := needlePatterns(secrets, true)
		if err != nil {
			t.Fatal(err)
		}
		pats = append(pats, rulePatterns()...)
		a, err := buildAutomaton(pats, authVariants(), authWindow, &builtinRuleGrams, lanesFor(secrets))
		if err != nil {
			t.Fatal(err)
		}
		if n := trieSize(pats); n != len(a.states) {
			t.Errorf("%q: trieSize %d, the trie has %d nodes", secrets, n, len(a.states))
		}
	}
}
