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
		`s3cr\"et/&<k>+ y=%`,                  // JSON and Go-quoted agree here
		`s3cr\"et/\u0026\u003ck\u003e+ y=%`,   // json.Marshal, HTML-safe
		"s3cr%22et%2F%26%3Ck%3E%2B+y%3D%25",   // query
		"s3cr%22et%2F&%3Ck%3E+%20y=%25",       // path
		"s3cr%22et%2F%26%3Ck%3E%2B%20y%3D%25", // Python's quote(s, safe=""), encodeURIComponent
		"s3cr%22et/%26%3Ck%3E%2B%20y%3D%25",   // Python's quote(s)
		"s3cr&#34;et/&amp;&lt;k&gt;+ y=%",     // XML
		"czNjciJldC8mPGs+KyB5",                // base64, k=0
		"czNjciJldC8mPGs-KyB5",                // base64url, k=0
		"M2NyImV0LyY8az4rIHk9",                // k=1, same in both alphabets
		"Y3IiZXQvJjxrPisgeT0l",                // k=2
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
// base64 blobs of other data: the characters the secret determines must go.
func TestBase64InsideLongerBlobs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	secret := randomSecret(rng, 29)
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
				// At most the characters that straddle the secret's edges
				// remain next to the marker.
				if kept := len(out) - len(Marker) - len("payload=\n"); kept > len(blob)-len(secret)*4/3+4 {
					t.Fatalf("pre %d post %d: %d blob characters kept", pre, post, kept)
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
