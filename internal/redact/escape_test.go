package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"math/rand/v2"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// secretRunes are what random secrets are made of: letters and digits,
// every character some family escapes, and characters of two, three and
// four UTF-8 bytes (the last written as a surrogate pair by JSON).
var secretRunes = []rune("abcXYZ0189-_.~ \"'&<>/\\%+=?#;:@!é日🔑\u00a0\u2028\x01\t")

// randomEscSecret returns a secret of n runes drawn mostly from letters.
func randomEscSecret(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < MinSecretLen || n > 0 {
		n--
		if rng.IntN(3) == 0 {
			b.WriteRune(secretRunes[rng.IntN(len(secretRunes))])
		} else {
			b.WriteByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"[rng.IntN(62)])
		}
	}
	return b.String()
}

func trimQuotes(s string) string { return s[1 : len(s)-1] }

// encoders are the real libraries' escapings, applied to a whole secret.
var encoders = map[string]func(string) string{
	"json html-safe": func(s string) string { b, _ := json.Marshal(s); return trimQuotes(string(b)) },
	"json": func(s string) string {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		return trimQuotes(strings.TrimSuffix(buf.String(), "\n"))
	},
	"query escape":   url.QueryEscape,
	"path escape":    url.PathEscape,
	"html escape":    html.EscapeString,
	"go quote":       func(s string) string { return trimQuotes(strconv.Quote(s)) },
	"go quote ascii": func(s string) string { return trimQuotes(strconv.QuoteToASCII(s)) },
	"python ascii":   asciiJSON, // json.dumps, as TestPythonFormsArePythons checks
	"xml (forms.go)": xmlEscape,
	"encodeURIComponent": func(s string) string {
		// Unlike QueryEscape it keeps !'()* and writes a space as %20.
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0) {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
		return b.String()
	},
	// html/template escapes by context, and more than html.EscapeString
	// does: '+' in text (&#43;), '=' in an unquoted attribute (&#61;),
	// '+' and '/' in a script's string (\u002b, \/). Each is a character
	// of base64.
	"html/template text":          htmlTemplate("<p>{{.}}</p>"),
	"html/template unquoted attr": htmlTemplate("<a title={{.}}>"),
	"html/template script string": htmlTemplate(`<script>var s = "{{.}}";</script>`),
}

// htmlTemplate returns what html/template writes for a string in the
// context that the one action of tpl sets.
func htmlTemplate(tpl string) func(string) string {
	t := template.Must(template.New("").Parse(tpl))
	before, after, _ := strings.Cut(tpl, "{{.}}")
	return func(s string) string {
		var b strings.Builder
		if err := t.Execute(&b, s); err != nil {
			panic(err)
		}
		return strings.TrimSuffix(strings.TrimPrefix(b.String(), before), after)
	}
}

// mustEscape are the characters each family cannot leave as they are:
// left alone, they would begin an escape or end the string.
var mustEscape = map[string]string{"json": "\"\\\n\t\x01", "go": "\"\\\n\t\x01", "percent": "%", "entity": "&"}

// partialEscape writes each character of s as itself or, with
// probability 1/2, in one of the spellings a family allows, picked at
// random and written here by hand rather than taken from family.go.
func partialEscape(rng *rand.Rand, fam string, s string) string {
	var b strings.Builder
	hex := func(format string, v int) string {
		x := fmt.Sprintf(format, v)
		if rng.IntN(2) == 0 {
			return strings.ToUpper(x[:2]) + x[2:] // the prefix keeps its case
		}
		return x
	}
	// Query form writes a space as '+', so it must escape '+'; path form
	// may leave '+' alone and writes a space as %20.
	must := mustEscape[fam]
	plusSpace := fam == "percent" && rng.IntN(2) == 0
	if plusSpace {
		must += "+"
	}
	for _, r := range s {
		if (rng.IntN(2) == 0 || r == utf8.RuneError) && !strings.ContainsRune(must, r) {
			b.WriteRune(r)
			continue
		}
		switch fam {
		case "json":
			if r >= 0x10000 {
				hi, lo := utf16.EncodeRune(r)
				b.WriteString(strings.Replace(hex(`\u%04x`, int(hi)), `\U`, `\u`, 1))
				b.WriteString(strings.Replace(hex(`\u%04x`, int(lo)), `\U`, `\u`, 1))
				continue
			}
			switch {
			case r == '/' && rng.IntN(2) == 0:
				b.WriteString(`\/`)
			case r == '"' || r == '\\':
				b.WriteString(`\` + string(r))
			default:
				b.WriteString(`\u` + fmt.Sprintf([]string{"%04x", "%04X"}[rng.IntN(2)], r))
			}
		case "go":
			switch {
			case r < 0x100 && rng.IntN(2) == 0:
				b.WriteString(`\x` + fmt.Sprintf([]string{"%02x", "%02X"}[rng.IntN(2)], r))
			case r >= 0x10000 || rng.IntN(2) == 0:
				b.WriteString(`\U` + fmt.Sprintf("%08x", r))
			default:
				b.WriteString(`\u` + fmt.Sprintf("%04x", r))
			}
		case "percent":
			for _, c := range []byte(string(r)) {
				if c == ' ' && plusSpace && rng.IntN(2) == 0 {
					b.WriteByte('+')
				} else {
					b.WriteString("%" + fmt.Sprintf([]string{"%02x", "%02X"}[rng.IntN(2)], c))
				}
			}
		case "entity":
			named := map[rune]string{'&': "&amp;", '<': "&lt;", '>': "&gt;", '"': "&quot;", '\'': "&apos;"}
			switch n, ok := named[r]; {
			case ok && rng.IntN(2) == 0:
				b.WriteString(n)
			case rng.IntN(2) == 0:
				// Up to two leading zeros, as PHP's &#039;.
				b.WriteString(fmt.Sprintf("&#%0*d;", len(fmt.Sprint(r))+rng.IntN(3), r))
			default:
				b.WriteString(fmt.Sprintf("&#%s%0*"+[]string{"x", "X"}[rng.IntN(2)]+";",
					[]string{"x", "X"}[rng.IntN(2)], len(fmt.Sprintf("%x", r))+rng.IntN(3), r))
			}
		}
	}
	return b.String()
}

// escFilling is text to put around an escaped secret: plain words, and the
// introducers of every family, which must not throw the decoders off.
// A separator comes between the filling and the form: a form glued to a
// broken escape is read the way the broken escape reads it (a lone '\\'
// before \u0041 makes \\ and "u0041").
var escFilling = []string{" ", "x", "\n", "\\", "\\\\", "%", "%2", "%25", "&", "&amp;", "&#", "+", "\\u00", "\\ud83d", "&#x4", `"`, "key=", "\t\t"}

func randomFilling(rng *rand.Rand) string {
	var b strings.Builder
	for k := rng.IntN(5); k > 0; k-- {
		b.WriteString(escFilling[rng.IntN(len(escFilling))])
	}
	b.WriteString([]string{" ", "=", `"`, ":", "\n"}[rng.IntN(5)])
	return b.String()
}

// checkChunkings redacts in whole, without skipping, and at several
// chunkings, fails unless they agree, and returns the output.
func checkChunkings(t *testing.T, r *Redactor, hide []string, in []byte, rng *rand.Rand) []byte {
	t.Helper()
	exact := *r
	exact.exact = true
	want := []byte(exact.String(string(in)))
	checkSame(t, hide, "skipping", []byte(r.String(string(in))), want)
	checkSame(t, hide, "one byte", oneByte(r, in), want)
	checkSame(t, hide, "random chunks", feedSizes(r, in, func() int { return rng.IntN(17) }), want)
	checkSame(t, hide, "4 KiB", feedSizes(r, in, func() int { return 4096 }), want)
	return want
}

// TestEscapedSecretsOracle is the differential oracle of the escape lanes:
// random secrets written by the real encoders and by hand-built partial
// escapings, in log text with the families' introducers around them, never
// survive, at any chunking; and text without a secret, including every
// encoding of other strings, passes byte for byte.
func TestEscapedSecretsOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	names := make([]string, 0, len(encoders))
	for n := range encoders {
		names = append(names, n)
	}
	slices.Sort(names)
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	for round := 0; round < rounds; round++ {
		var secrets []string
		for k := 1 + rng.IntN(3); k > 0; k-- {
			secrets = append(secrets, randomEscSecret(rng, 8+rng.IntN(20)))
		}
		r := mustNew(t, secrets...)
		var forms []string
		for _, s := range secrets {
			for _, n := range names {
				forms = append(forms, encoders[n](s))
			}
			for _, fam := range []string{"json", "go", "percent", "entity"} {
				forms = append(forms, partialEscape(rng, fam, s))
			}
		}
		hide := append(append([]string(nil), forms...), secrets...)
		for i, f := range forms {
			text := logText(200 + rng.IntN(400))
			at := rng.IntN(len(text))
			in := []byte(string(text[:at]) + randomFilling(rng) + f + randomFilling(rng) + string(text[at:]) + "\n")
			out := checkChunkings(t, r, hide, in, rng)
			if bytes.Contains(out, []byte(f)) {
				if testing.Verbose() {
					t.Logf("secret %q form %q", secrets[i/(len(names)+4)], f)
				}
				t.Fatalf("round %d: form %d (%d bytes) survived: %s", round, i, len(f), masked(hide, out))
			}
		}
		// Other strings, in every encoding, are not touched.
		var clean []byte
		for k := 0; k < 6; k++ {
			other := randomEscSecret(rng, 8+rng.IntN(20))
			clean = append(clean, logText(100)...)
			clean = append(clean, randomFilling(rng)...)
			clean = append(clean, encoders[names[rng.IntN(len(names))]](other)...)
			clean = append(clean, partialEscape(rng, []string{"json", "go", "percent", "entity"}[rng.IntN(4)], other)...)
		}
		clean = append(clean, '\n')
		if out := checkChunkings(t, r, hide, clean, rng); !bytes.Equal(out, clean) {
			t.Fatalf("round %d: text without a secret changed: %s", round, masked(hide, out))
		}
	}
}

// TestNestedEscapings: a form of a secret escaped again, by another family
// or by its own, never survives at any chunking: a JSON string
// percent-encoded into a URL or HTML-escaped into a page, a URL's escaped
// password inside Go's JSON, a base64 form in a query, JSON in JSON.
func TestNestedEscapings(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	b64 := func(enc *base64.Encoding) func(string) string {
		return func(s string) string { return enc.EncodeToString([]byte(s)) }
	}
	inner := map[string]func(string) string{
		"json": jsonEscape, "json html-safe": encoders["json html-safe"], "python json": asciiJSON,
		"go quote": goQuote, "bytes repr": bytesRepr, "python repr": strRepr,
		"encodeURIComponent": encoders["encodeURIComponent"], "python quote": func(s string) string { return percentEscape(s, "-_.~/") },
		"shell quote":  func(s string) string { return strings.ReplaceAll(s, "'", `'\''`) },
		"query escape": url.QueryEscape, "path escape": url.PathEscape, "xml": xmlEscape,
		"base64": b64(base64.RawStdEncoding), "base64url": b64(base64.RawURLEncoding),
		"html escape": html.EscapeString,
	}
	// Python's, PHP's and Ruby's HTML escapers, as forms.go writes them
	// (the shim's tests run Python's own).
	for i, r := range htmlEscapers {
		inner[fmt.Sprintf("html escaper %d", i)] = r.Replace
	}
	outer := map[string]func(string) string{
		"query escape": url.QueryEscape, "path escape": url.PathEscape, "html escape": html.EscapeString,
		"json html-safe": encoders["json html-safe"], "python json": asciiJSON, "go quote": goQuote,
		"html/template text": encoders["html/template text"], "html/template unquoted attr": encoders["html/template unquoted attr"],
		"html/template script string": encoders["html/template script string"],
	}
	for round := 0; round < 50; round++ {
		s := randomEscSecret(rng, 8+rng.IntN(20))
		r := mustNew(t, s)
		for in, fi := range inner {
			for on, fo := range outer {
				f := fo(fi(s))
				text := "msg=" + f + " end\n"
				out := checkChunkings(t, r, []string{s, f}, []byte(text), rng)
				if bytes.Contains(out, []byte(f)) || !bytes.Contains(out, []byte(Marker)) {
					t.Fatalf("%s in %s survived: %s", in, on, masked([]string{s, f}, out))
				}
			}
		}
	}
}

// TestNestedEscapingExamples pins the nestings that leaked before every
// form was a needle of the lanes, and (the last four) before the forms
// held HTML as other escapers than Go's write it.
func TestNestedEscapingExamples(t *testing.T) {
	for secret, in := range map[string]string{
		`c0rrect"h0rse`:          `%7B%22password%22%3A%20%22c0rrect%5C%22h0rse%22%7D`,             // quote(json.dumps(...))
		`Xk9&mP2#qL<z`:           `{"dsn":"postgres://app:Xk9\u0026mP2%23qL%3Cz@db:5432/app"}`,     // json.Marshal of a url.URL
		`pässwörd-2024`:          `p%5Cu00e4ssw%5Cu00f6rd-2024`,                                    // quote(json.dumps(s))
		`pa"ss1234`:              `{&#34;password&#34;:&#34;pa\&#34;ss1234&#34;}`,                  // html.EscapeString(json)
		`Tr0ub4dor&3<x>`:         `{"body":"{\"password\":\"Tr0ub4dor\\u00263\\u003cx\\u003e\"}"}`, // Go's JSON in JSON
		`Xq7"pa\ss/w é`:          `"connecting with {'password': 'Xq7\"pa\\\\ss/w \u00e9'}"`,       // json.dumps of a %r
		`pass word+1/2=3`:        `next=pass%2520word%252B1%252F2%253D3`,                           // encodeURIComponent twice
		`Q'w"eérty12`:            `b'Q\'w"e\xc3\xa9rty12'`,                                         // repr of bytes with both quotes
		`it's-a-s3cret'x`:        `+ curl -u 'bob:it'\''s-a-s3cret'\''x' https://h`,                // set -x
		`its-a-'s3cret'x`:        `curl -u 'bob:its-a-'"'"'s3cret'"'"'x'`,                          // shlex.quote
		`S3cr3t~Key>Prod-9f8e7d`: `<p>dXNlcjpTM2NyM3R&#43;S2V5PlByb2QtOWY4ZTdk</p>`,                // html/template of base64("user:"+s)
		`Pa55w0rd?Summer2024!`:   `var auth = "UGE1NXcwcmQ\/U3VtbWVyMjAyNCE=";`,                    // a script string of base64(s)
		`abc"defghéijk`:          `"abc&quot;defgh\u00e9ijk"`,                                      // json.dumps(html.escape(s))
		`abc"defgh ijk&lmn`:      `"abc\u0026quot;defgh ijk\u0026amp;lmn"`,                         // json.Marshal of PHP's htmlspecialchars
		`it's"x&y<z>`:            `it&amp;#x27;s&amp;quot;x&amp;amp;y&amp;lt;z&amp;gt;`,            // html.escape twice
		`Jo's p@ss&word`:         `Jo%26%23x27%3Bs%20p%40ss%26amp%3Bword`,                          // quote(html.escape(s), safe="")
	} {
		r := mustNew(t, secret)
		if got := r.String(in); strings.Contains(got, in) || !strings.Contains(got, Marker) {
			t.Errorf("%s: got %q", in, got)
		}
	}
}

// TestMultiLineSecretWithWhitespaceRuns: a multi-line secret whose first
// line is short, printed with its line breaks as any run of whitespace,
// never survives in part.
func TestMultiLineSecretWithWhitespaceRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	secret := "abc\nsecond-line-of-it\nthird-line\nend"
	lines := strings.Split(secret, "\n")
	r := mustNew(t, secret)
	runs := []string{" ", "  ", "\t\t", "\n\n", "\r\n", "\n    ", " \t\r\n\v\f"}
	for round := 0; round < 200; round++ {
		in := []byte("key: " + joinByRuns(rng, lines, runs) + " done\n")
		out := checkChunkings(t, r, lines, in, rng)
		if want := "key: " + Marker + " done\n"; string(out) != want {
			t.Fatalf("%q: got %q", in, out)
		}
	}
}

// joinByRuns joins parts, each two by one of runs drawn at random.
func joinByRuns(rng *rand.Rand, parts, runs []string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString(runs[rng.IntN(len(runs))])
		}
		b.WriteString(p)
	}
	return b.String()
}

// TestFoldedPassphrase: a secret with spaces (a passphrase, a mnemonic)
// printed with any of its spaces as a run of whitespace, as a YAML writer
// folds a long scalar (a line break and an indent) and textwrap wraps it,
// never survives in part; its words in another order pass as they are.
func TestFoldedPassphrase(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	words := []string{"abandon", "ability", "able", "about", "above", "absent", "absorb", "abstract", "absurd", "abuse", "access", "accident"}
	secret := strings.Join(words, " ")
	r := mustNew(t, secret)
	runs := []string{" ", "  ", "\n", "\n  ", "\r\n    ", "\t"}
	for round := 0; round < 200; round++ {
		in := []byte("seed: " + joinByRuns(rng, words, runs) + "\nnext: 1\n")
		out := checkChunkings(t, r, words[:0], in, rng)
		if want := "seed: " + Marker + "\nnext: 1\n"; string(out) != want {
			t.Fatalf("%q: got %q", in, out)
		}
	}
	shuffled := slices.Clone(words)
	shuffled[0], shuffled[1] = shuffled[1], shuffled[0]
	if in := "seed: " + strings.Join(shuffled, "\n  ") + "\n"; r.String(in) != in {
		t.Errorf("the words in another order were redacted: %q", r.String(in))
	}
}

// TestPyYAMLFoldedPassphrase: PyYAML's dump of a passphrase longer than
// its 80 columns, plain (its default for words) and single-quoted, is
// redacted whole. (Double-quoted, it ends a folded line in a backslash and
// escapes the space after the indent, which no family reads.)
func TestPyYAMLFoldedPassphrase(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the Python shim's tests need it too")
	}
	if exec.Command(py, "-c", "import yaml").Run() != nil {
		t.Skip("PyYAML is not installed for python3, and PyPI is not reachable to install it")
	}
	const secret = "abandon ability able about above absent absorb abstract absurd abuse access accident account"
	r := mustNew(t, secret)
	script := `import sys, yaml
s = sys.argv[1]
for style in (None, "'"):
    sys.stdout.write(yaml.dump({"seed": s}, default_style=style) + "\x00")`
	out, err := exec.Command(py, "-c", script, secret).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	for _, doc := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if !strings.Contains(doc, "\n  ") {
			t.Fatalf("PyYAML did not fold the passphrase: %q", doc)
		}
		if got := r.String(doc); strings.Contains(got, "abandon") || strings.Contains(got, "account") || !strings.Contains(got, Marker) {
			t.Errorf("%q: got %q", doc, got)
		}
	}
}

// TestEscapedSecretExamples pins the examples of the issue that leaked.
func TestEscapedSecretExamples(t *testing.T) {
	const secret = `p&ss<w>rd/"é🔑 x+y`
	r := mustNew(t, secret)
	for _, in := range []string{
		`p\u0026ss\u003cw\u003erd\/\"\u00e9\ud83d\udd11 x+y`,                   // Go json.Marshal, escaped slashes
		`p&ss<w>rd/\"\u00e9\ud83d\udd11 x+y`,                                   // Python ensure_ascii
		`p\u0026ss\u003Cw\u003Erd\u002F\u0022\u00E9\uD83D\uDD11\u0020x\u002by`, // every character
		`p%26ss%3Cw%3Erd%2F%22%C3%A9%F0%9F%94%91%20x%2By`,                      // quote(s, safe="")
		`p%26ss%3cw%3erd%2f%22%c3%a9%f0%9f%94%91+x%2By`,                        // quote_plus, lower case
		`p&amp;ss&lt;w&gt;rd/&quot;é🔑 x+y`,                                     // html.escape
		`p&#38;ss&#x3c;w&#X3E;rd&#47;&#034;&#233;&#x1F511; x+y`,                // numeric references
		`p&ss<w>rd/\"\xe9\U0001f511 x+y`,                                       // Python repr / Go
	} {
		full := "msg=" + in + "\n"
		if got := r.String(full); got != "msg="+Marker+"\n" {
			t.Errorf("%s: got %q", in, got)
		}
	}
}

// TestEscapedFormAtEndOfStream: a secret's escaped form cut off by the end
// of the stream is redacted as a held tail, and a partial escape alone is
// released when no needle begins with it.
func TestEscapedFormAtEndOfStream(t *testing.T) {
	r := mustNew(t, "hunter2-hunter2")
	for in, want := range map[string]string{
		"x \\u0068\\u0075nter2-hun": "x " + Marker,
		"x %68%75nt":                "x " + Marker,
		"x &#104;&#117;n":           "x " + Marker,
		"x \\u01":                   "x \\u01", // the secret is ASCII: only \u00 may begin it
		"x \\u00":                   "x " + Marker,
		"x &#x4":                    "x &#x4",
		"x &amp":                    "x &amp",
		"x    ":                     "x    ",
	} {
		for _, got := range [][]byte{[]byte(r.String(in)), oneByte(r, []byte(in))} {
			if string(got) != want {
				t.Errorf("%q: got %q, want %q", in, got, want)
			}
		}
	}
}

// TestSpellingsDecode pins the two readings of each family's table to each
// other: every spelling the skip filters learn (family.spellings) is one
// escape that the lanes' decoder reads, byte by byte, as the character it
// spells, complete at its last byte and not before.
func TestSpellingsDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	chars := []rune{'a', 'Z', '0', ' ', '"', '\'', '\\', '/', '&', '<', '>', '%', '+', '\n', '\t', 0x01, 0x7f, 0xa0, 0xe9, 0x2028, 0xfffd, 0x1f511, 0x10ffff}
	for range 200 {
		chars = append(chars, rune(rng.IntN(0x10ffff)))
	}
	for _, f := range families {
		if f.run != nil {
			continue
		}
		for _, r := range chars {
			if !utf8.ValidRune(r) {
				continue
			}
			ch := string(r)
			var pieces []string // what the slots of ch stand for
			if f.byteSlots {
				for i := 0; i < len(ch); i++ {
					pieces = append(pieces, ch[i:i+1])
				}
			} else {
				pieces = []string{ch}
			}
			for _, want := range pieces {
				r, _ := utf8.DecodeRuneInString(want)
				for _, sp := range f.spellings(want, f.byteSlots, r)[1:] {
					live := f.starting(sp[0])
					for n := 1; n <= len(sp); n++ {
						st, out, l := f.decode([]byte(sp[:n]), nil, live)
						live = l
						switch {
						case n < len(sp) && st != escPartial:
							t.Fatalf("%s: %q is not partial after %d bytes (%d)", f.name, sp, n, st)
						case n == len(sp) && (st != escDone || string(out) != want):
							t.Fatalf("%s: %q reads %q (%d), want %q", f.name, sp, out, st, want)
						}
					}
				}
			}
		}
	}
}

// TestLanesResyncAfterSkip: when the skip stops inside an escape, or after
// a run of backslashes whose pairing decides where the next escape begins,
// each lane reads the escapes where a scan of every byte would, whatever
// the write boundaries.
func TestLanesResyncAfterSkip(t *testing.T) {
	r := mustNew(t, "hunter2-hunter2", "ab\ncd-efgh")
	rng := rand.New(rand.NewPCG(47, 48))
	for _, in := range []string{
		`xxxxxxxxxxxxxxxxxxxx\\u0068unter2-hunter2 end`,
		`xxxxxxxxxxxxxxxxxxxx\\\u0068unter2-hunter2 end`,
		`xxxxxxxxxxxxxxxxxxxx\\\\\\\\\u0068unter2-hunter2 end`,
		"xxxxxxxxxxxxxxxxxxxx%2%68unter2-hunter2 end",
		"xxxxxxxxxxxxxxxxxxxx&#&#104;unter2-hunter2 end",
		"xxxxxxxxxxxxxxxxxxxx\\ud83d\\u0068unter2-hunter2 end",
		"xxxxxxxxxxxxxxxxxxxx ab \t\n cd-efgh end",
		`xxxxxxxxxxxxxxxxxxxx\\u0`,
	} {
		checkChunkings(t, r, nil, []byte(in), rng)
		for cut := 0; cut <= len(in); cut++ {
			exact := *r
			exact.exact = true
			checkSame(t, nil, fmt.Sprintf("%q cut at %d", in, cut), feedCuts(r, []byte(in), cut), []byte(exact.String(in)))
		}
	}
}

// TestLaneTailAtEndOfStream: whether a held tail is redacted at the end of
// the stream depends on its bytes only, never on the write boundaries. A
// lane holds a needle prefix that it decoded before an open run or escape
// only if the run or escape may go on to spell the needle's next
// character: "mu" begins "multi-line", but neither "mu" and spaces nor
// "1\x0" begins a spelling of a needle. The scan forgets such a prefix
// when a write holds the four bytes that refute it, and must not hold it
// when no write does.
func TestLaneTailAtEndOfStream(t *testing.T) {
	r := mustNew(t, "multi-line\nsecret-value\r\nend", "1212345678", "hunter2-hunter2", "abc-é日🔑-xyz")
	exact := *r
	exact.exact = true
	for in, redacted := range map[string]bool{
		"00000000mu  ":            false, // a run may not follow "mu"
		"00000000multi-line \t ":  true,  // a run stands for the line break
		"00000000multi-line\r\n":  true,
		"1\\x0":                   false, // \x0? is not '2'
		"x 1\\x3":                 true,  // \x32 is
		"x 1%3":                   true,
		"x 1%4":                   false,
		"x 1&#0":                  true, // &#050;
		"x 1&#x":                  true,
		"x hunter2-hunt\\u00":     true,
		"x hunter2-hunt\\u01":     false,
		"x hunter2-hunter\\U0000": true,
		"x hunter2-hunter\\x0":    false,
		"x abc-\\u00":             true, // é is \u00e9
		"x abc-\\u01":             false,
		"x abc-%c":                true, // é is %C3%A9
		"x abc-%C3%a":             true,
		"x abc-%C3%b":             false,
		"x abc-&#2":               true, // &#233;
		"x abc-é\\u65":            true, // 日 is \u65e5
		"x abc-é日\\ud83":          true, // 🔑 is \ud83d\udd11
		"x abc-é日\\ud83d\\ude":    false,
		"x abc-é日&#x1f5":          true,
		"x \\u00":                 true,  // may begin any of them
		"x &#x2":                  false, // no needle begins with U+0020 to U+002F
	} {
		want := in
		if redacted {
			k := strings.LastIndexByte(in, ' ')
			if k < 0 || strings.HasPrefix(in, "00000000") {
				k = strings.IndexFunc(in, func(r rune) bool { return r != '0' }) - 1
			}
			want = in[:k+1] + Marker
		}
		if got := exact.String(in); got != want {
			t.Errorf("%q without skipping: got %q, want %q", in, got, want)
		}
		for cut := 0; cut <= len(in); cut++ {
			if got := string(feedCuts(r, []byte(in), cut)); got != want {
				t.Errorf("%q cut at %d: got %q, want %q", in, cut, got, want)
			}
		}
		for _, n := range []int{1, 2, 3} {
			if got := string(feedSizes(r, []byte(in), func() int { return n })); got != want {
				t.Errorf("%q in writes of %d: got %q, want %q", in, n, got, want)
			}
		}
	}
}

// TestDecodeWholeAgreesWithDecode: reading an escape whole picks the
// escape, the length and the value that feeding it a byte at a time does,
// on random bytes made of the families' own.
func TestDecodeWholeAgreesWithDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	alpha := []byte(`\uUx0123456789abcdefABCDEF&#;xXamplgtquos%+'"/D8d`)
	for _, f := range families {
		if f.run != nil {
			continue
		}
		for it := 0; it < 20000; it++ {
			var p [maxEscape]byte
			for i := range p {
				p[i] = alpha[rng.IntN(len(alpha))]
			}
			copy(p[:], f.escapes[rng.IntN(len(f.escapes))].prefix)
			live := f.starting(p[0])
			var n int
			var want []byte
			for k := 1; k <= maxEscape; k++ {
				st, out, l := f.decode(p[:k], nil, live)
				live = l
				if st == escDone {
					n, want = k, out
				}
				if st != escPartial {
					break
				}
			}
			got, dec := f.decodeWhole(&p, f.starting(p[0]), nil)
			if got != n || !bytes.Equal(dec, want) {
				t.Fatalf("%s %q: whole %d %q, a byte at a time %d %q", f.name, p, got, dec, n, want)
			}
		}
	}
}

// TestBackslashBeforePunctuation: writers that put a backslash before
// punctuation that stands for itself (Perl's Data::Dumper with Useqq,
// bash's printf %q, Python's re.escape; Java's Properties.store by hand),
// run for real where they are installed, over random ASCII secrets.
func TestBackslashBeforePunctuation(t *testing.T) {
	const punct = " !#$%&()*+,-.:;<=>?@[]^_`{|}~\"'\\/"
	rng := rand.New(rand.NewPCG(71, 72))
	var secrets []string
	for range 60 {
		b := []byte(randomSecret(rng, 8+rng.IntN(12)))
		for k := 1 + rng.IntN(4); k > 0; k-- {
			b[rng.IntN(len(b))] = punct[rng.IntN(len(punct))]
		}
		secrets = append(secrets, string(b))
	}
	// Each writes the form of each argument on a line of its own.
	writers := map[string][]string{
		"perl Data::Dumper": {"perl", "-MData::Dumper", "-e", `$Data::Dumper::Useqq=1; $Data::Dumper::Terse=1; $Data::Dumper::Indent=0; print Dumper($_), "\n" for @ARGV`},
		"bash printf %q":    {"bash", "-c", `for s; do printf '%q\n' "$s"; done`, "_"},
		"python re.escape":  {"python3", "-c", "import re, sys\nfor s in sys.argv[1:]: print(re.escape(s))"},
	}
	ran := 0
	for name, argv := range writers {
		if _, err := exec.LookPath(argv[0]); err != nil {
			t.Logf("%s: %s is not installed", name, argv[0])
			continue
		}
		ran++
		out, err := exec.Command(argv[0], append(argv[1:], secrets...)...).Output()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		forms := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(forms) != len(secrets) {
			t.Fatalf("%s wrote %d lines for %d secrets", name, len(forms), len(secrets))
		}
		for i, s := range secrets {
			checkBackslashForm(t, name, s, forms[i])
		}
	}
	for _, s := range secrets[:10] {
		// Properties.store escapes = : # ! and a leading space.
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if strings.IndexByte("=:#!\\", s[i]) >= 0 || i == 0 && s[i] == ' ' {
				b.WriteByte('\\')
			}
			b.WriteByte(s[i])
		}
		checkBackslashForm(t, "java Properties", s, b.String())
	}
	if ran == 0 {
		t.Skip("none of perl, bash and python3 is installed")
	}
}

// TestBashANSICQuoting: bash writes a string that holds a character it
// cannot print in $'...' (printf %q, ${v@Q}, set -x): in the C locale with
// every byte beyond ASCII in octal, in a UTF-8 one with each character
// that glibc cannot print so (format and private-use characters are
// printable to glibc, not to Go; line and paragraph separators are not).
// Run for real, over random secrets with such characters, in both; the
// forms are bash's own writing. (A character newer than the machine's
// glibc, which bash writes in octal too, is left out: see glibcPrints.)
func TestBashANSICQuoting(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	runes := []rune("abcXYZ0189-_.~ '\\\"é日🔑\x01\x1b\x7f\t\n\u00ad\u200b\u200e\ufeff\u2066\ue000\u2028\u2029\u0085")
	rng := rand.New(rand.NewPCG(73, 74))
	var secrets []string
	for len(secrets) < 80 {
		b := []rune(randomSecret(rng, 8+rng.IntN(10)))
		for k := 1 + rng.IntN(4); k > 0; k-- {
			b[rng.IntN(len(b))] = runes[rng.IntN(len(runes))]
		}
		if s := string(b); strings.ContainsFunc(s, func(r rune) bool { return r >= 0x7f || r < ' ' }) {
			secrets = append(secrets, s)
		}
	}
	for _, locale := range []string{"C", "C.UTF-8"} {
		cmd := exec.Command("bash", append([]string{"-c", `for s; do printf '%q\n' "$s"; done`, "_"}, secrets...)...)
		cmd.Env = append(cmd.Environ(), "LC_ALL="+locale)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("bash in %s: %v", locale, err)
		}
		if locale != "C" && !strings.Contains(string(out), "é") {
			t.Logf("this machine has no %s locale: bash quoted as in C", locale)
			continue
		}
		forms := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(forms) != len(secrets) {
			t.Fatalf("bash in %s wrote %d lines for %d secrets", locale, len(forms), len(secrets))
		}
		for i, s := range secrets {
			if want := "$'" + ansiCQuote(s, locale != "C") + "'"; strings.HasPrefix(forms[i], "$'") && forms[i] != want {
				t.Errorf("bash in %s quotes %q as %s, ansiCQuote as %s", locale, s, forms[i], want)
			}
			checkBackslashForm(t, "bash printf %q in "+locale, s, forms[i])
		}
	}
	for _, c := range []struct{ secret, form string }{
		// Found by a leak hunt: glibc prints U+00AD, Go does not.
		{"Xk9\x01mP2\u00adqLz8", "$'Xk9\\001mP2\u00adqLz8'"},
		{"Tr0ub4dor\x1b\u00ad3x", "$'Tr0ub4dor\\E\u00ad3x'"},
	} {
		checkBackslashForm(t, "bash printf %q", c.secret, c.form)
	}
}

// checkBackslashForm checks that the form f of secret s, written by name,
// is redacted whole in a log line, at every chunking.
func checkBackslashForm(t *testing.T, name, s, f string) {
	t.Helper()
	r := mustNew(t, s)
	in := []byte("key=" + f + " next\n")
	out := checkChunkings(t, r, []string{s, f}, in, rand.New(rand.NewPCG(1, 2)))
	if bytes.Contains(out, []byte(f)) || !bytes.Contains(out, []byte(Marker)) {
		t.Errorf("%s of %q, %q: got %q", name, s, f, out)
	}
}

// TestDoubledQuotes: a secret with quotes, written by writers that double
// a quote inside a string it delimits: Go's encoding/csv, Python's csv
// and PyYAML where installed, and an SQL literal by hand.
func TestDoubledQuotes(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	var secrets []string
	for range 40 {
		b := []byte(randomSecret(rng, 8+rng.IntN(12)))
		for k := 1 + rng.IntN(3); k > 0; k-- {
			b[rng.IntN(len(b))] = `'"`[rng.IntN(2)]
		}
		b[0] = "!@%&*a"[rng.IntN(6)] // PyYAML quotes a value that begins so
		if rng.IntN(3) == 0 {
			// Two of a quote side by side, which a writer delimiting
			// with the other quote leaves as they are.
			k := 1 + rng.IntN(len(b)-2)
			b[k], b[k+1] = `'"`[rng.IntN(2)], b[k]
			b[k+1] = b[k]
		}
		secrets = append(secrets, string(b))
	}
	secrets = append(secrets, `pa'ss""word`, `pa"ss''word`)
	forms := map[string][]string{}
	for _, s := range secrets {
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		w.Write([]string{"db", s})
		w.Flush()
		forms["go encoding/csv"] = append(forms["go encoding/csv"], strings.TrimSuffix(buf.String(), "\n"))
		forms["sql literal"] = append(forms["sql literal"], "PASSWORD '"+strings.ReplaceAll(s, "'", "''")+"'")
	}
	python := map[string]string{
		"python csv": "import csv, sys\nw = csv.writer(sys.stdout, lineterminator='\\n')\nfor s in sys.argv[1:]: w.writerow(['db', s])",
		"pyyaml":     "import sys, yaml\nfor s in sys.argv[1:]: print(yaml.safe_dump({'password': s}, width=1000).strip())",
	}
	for name, script := range python {
		out, err := exec.Command("python3", append([]string{"-c", script}, secrets...)...).Output()
		if err != nil {
			t.Logf("%s: not run (%v): python3 or its module is not installed", name, err)
			continue
		}
		forms[name] = strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	}
	for name, fs := range forms {
		if len(fs) != len(secrets) {
			t.Fatalf("%s wrote %d lines for %d secrets", name, len(fs), len(secrets))
		}
		for i, s := range secrets {
			r := mustNew(t, s)
			in := []byte("row " + fs[i] + " next\n")
			out := checkChunkings(t, r, []string{s, fs[i]}, in, rng)
			if !bytes.Contains(out, []byte(Marker)) || bytes.Contains(out, []byte(strings.ReplaceAll(s, `'`, `''`))) ||
				bytes.Contains(out, []byte(strings.ReplaceAll(s, `"`, `""`))) {
				t.Errorf("%s of %q, %q: got %q", name, s, fs[i], out)
			}
		}
	}
}

// TestLaneBitsFit: Redactor.intro has a bit for each lane in a uint8.
func TestLaneBitsFit(t *testing.T) {
	if len(families) > 8 {
		t.Fatalf("%d families, and Redactor.intro holds 8 lanes", len(families))
	}
}
