package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// lineJoins are the separators a multi-line secret's lines may be printed
// with.
var lineJoins = []string{"\n", "\r\n", " ", "\t"}

// Forms returns the needle representations of one secret: every form the
// secret may take in a service's output, deduplicated, each at least
// MinSecretLen bytes long, in a stable order.
//
// The forms are the secret as is; escaped as JSON (without quotes; without
// HTML escaping, with it as json.Marshal writes &, < and > as \u0026, \u003c
// and \u003e, and as Python writes it by default, with every character
// beyond ASCII as \uxxxx), each once and twice (JSON inside JSON),
// Go-quoted (without quotes), as Python's repr of it and of its UTF-8
// bytes (every byte beyond ASCII as \xhh), URL query-
// and path-escaped as Go, Python, curl and JavaScript's encodeURIComponent
// write it, XML-escaped, HTML-escaped as Go, Python, PHP and Ruby write
// it (see htmlEscapers), with each single quote written as a shell's
// single-quoted string writes it, as bash writes it in $'...' (in the C
// locale and in a UTF-8 one, see ansiCQuote); and base64 and base64url
// encoded: the base64 forms are the characters the secret fully
// determines at each of the three alignments inside a longer base64 blob
// (alignedBase64); and so the JSON forms that differ from the secret
// (a JSON document holding it, base64-encoded as a Kubernetes secret's
// data or a cookie is).
// A multi-line secret adds each line, as is and JSON- and Go-escaped, and
// the whole secret with its line breaks written as "\n", "\r\n", " " or
// "\t". Lines shorter than MinSecretLen are no forms of their own.
//
// The other encodings of lines and of rewritten line breaks are left out on
// purpose: every line is a needle already, so they would add little beyond
// the separators and short lines, at the cost of a table several times the
// secret's size for a private key.
func Forms(secret string) []string {
	seen := make(map[string]bool)
	var out []string
	add := func(f string) {
		if len(f) >= MinSecretLen && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	if len(secret) < MinSecretLen {
		return nil
	}
	add(secret)
	add(jsonEscape(secret))
	add(jsonMarshal(secret))
	add(asciiJSON(secret))
	// JSON escaped twice, as a JSON string that holds a JSON document
	// writes it (a log line of a request's body); a lane reading the
	// escapes of a third writer finds these, as it finds the forms above
	// in a second.
	add(jsonEscape(jsonEscape(secret)))
	add(jsonMarshal(jsonMarshal(secret)))
	add(asciiJSON(asciiJSON(secret)))
	add(goQuote(secret))
	add(strRepr(secret))
	add(bytesRepr(secret))
	add(url.QueryEscape(secret))
	add(url.PathEscape(secret))
	add(percentEscape(secret, "-_.~"))            // Python's quote(s, safe=""), curl
	add(percentEscape(secret, "-_.~/"))           // Python's quote(s)
	add(percentEscape(secret, "-_.~!*'()"))       // JavaScript's encodeURIComponent
	add(strings.ReplaceAll(secret, "'", `'\''`))  // a shell's '...' (set -x, ${v@Q})
	add(strings.ReplaceAll(secret, "'", `'"'"'`)) // Python's shlex.quote
	add(ansiCQuote(secret, false))                // bash's $'...' in the C locale
	add(ansiCQuote(secret, true))                 // and in a UTF-8 one
	add(xmlEscape(secret))
	add(html.EscapeString(secret)) // Go's html, html/template's text; Jinja2
	for _, r := range htmlEscapers {
		add(r.Replace(secret))
	}
	for _, f := range base64Forms(secret) {
		add(f)
	}
	if !strings.Contains(secret, "\n") {
		return out
	}
	lines := secretLines(secret)
	for _, sep := range lineJoins {
		add(strings.Join(lines, sep))
	}
	for _, l := range lines {
		if len(l) >= MinSecretLen {
			// A short line is not a needle, and no escaping of it is either:
			// it would shred ordinary text.
			add(l)
			add(jsonEscape(l))
			add(goQuote(l))
		}
	}
	return out
}

// htmlEscapers write a string as HTML escapers do besides Go's: &, <
// and > as named references, and quotes each its own way. A lane reads
// each reference however it is spelled, but a form is also what an
// escaping around it is found by (an HTML-escaped secret in JSON, as
// json.dumps(html.escape(s)) writes it, or escaped twice), and there
// the reference is as the inner escaper wrote it.
var htmlEscapers = []*strings.Replacer{
	strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#x27;"), // Python's html.escape, Django
	strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#039;"), // PHP's htmlspecialchars
	strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;"),  // Ruby's CGI.escapeHTML, Rails
	strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;"), // PHP's ENT_HTML5 and ENT_XML1
	strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;"),                               // html.escape(s, quote=False), ENT_NOQUOTES
}

// base64Forms returns the base64 forms of a secret (see Forms), before
// the forms' length and uniqueness are enforced: first base64 and
// base64url at each of the three alignments (entries 2k and 2k+1 for
// the secret's first k bytes ending a group, see alignedBase64), then those
// of the secret's JSON forms that differ from it.
func base64Forms(secret string) []string {
	out := alignedBase64(secret)
	for _, j := range []string{jsonEscape(secret), jsonMarshal(secret), asciiJSON(secret)} {
		if j != secret {
			out = append(out, alignedBase64(j)...)
		}
	}
	return out
}

// alignedBase64 returns, for k = 0, 1, 2, the characters s fully
// determines inside a longer base64 blob in which its first k bytes
// share a group of three with bytes before it, in base64 and base64url:
// those of the whole groups s[k:k+3*((len(s)-k)/3)], with the one or two
// that the bytes of s in the partial groups at either end determine on
// their own (all six bits of a character). Without those, a secret of 16
// bytes encoded alone ended in "OA==" after the marker, its last byte.
func alignedBase64(s string) []string {
	var out []string
	for k := 0; k < 3 && len(s)-k >= 3; k++ {
		whole := k + 3*((len(s)-k)/3)
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			var form []byte
			// A group of three bytes is four characters of six bits: the
			// last k bytes of a group determine its last k characters,
			// the first t bytes of one its first t.
			if k > 0 {
				var g [3]byte
				copy(g[3-k:], s[:k])
				form = append(form, enc.EncodeToString(g[:])[4-k:]...)
			}
			form = append(form, enc.EncodeToString([]byte(s[k:whole]))...)
			if t := len(s) - whole; t > 0 {
				var g [3]byte
				copy(g[:], s[whole:])
				form = append(form, enc.EncodeToString(g[:])[:t]...)
			}
			out = append(out, string(form))
		}
	}
	return out
}

// secretLines returns the lines of a multi-line secret, without their
// line breaks.
func secretLines(secret string) []string {
	if !strings.Contains(secret, "\n") {
		return nil
	}
	lines := strings.Split(strings.TrimRight(secret, "\r\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

func jsonEscape(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		// Encoding a string cannot fail; the raw form is still a needle.
		return s
	}
	out := strings.TrimSuffix(buf.String(), "\n")
	return out[1 : len(out)-1]
}

// jsonMarshal is s as json.Marshal writes it, without quotes: HTML-safe.
// The escape lanes read that spelling of s itself; as a needle it is found
// inside another escaping too (Go's JSON inside a JSON string, or in a URL).
func jsonMarshal(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		return s
	}
	return string(b[1 : len(b)-1])
}

// asciiJSON is s as Python's json.dumps writes it by default (ensure_ascii),
// without quotes: every character beyond ASCII, and DEL, as \uxxxx in lower
// case, astral ones as surrogate pairs. The escape lanes read that spelling
// of s itself; as a needle it is found inside another escaping too (a Python
// JSON body percent-encoded into a URL).
func asciiJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || r >= 0x7f: // DEL too, as Python does
			if r >= 0x10000 {
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+r>>10, 0xdc00+r&0x3ff)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// bytesRepr is Python's repr of s encoded as UTF-8 (b'...'), without the
// quotes, as a program prints a bytes value (http.client's debug output,
// a logged response body): printable ASCII as itself, a backslash
// doubled, a single quote escaped in a secret that holds both quotes
// (reprQuote), \t \n \r, and every other byte as \xhh. The escape lanes read
// \xhh as a code point, as Python's repr of a str means it, so a character
// beyond ASCII written byte by byte needs this needle of its own.
func bytesRepr(s string) string {
	quote := reprQuote(s)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == quote:
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// reprQuote is the quote that Python's repr escapes in s, or 0: repr
// quotes with single quotes unless s holds single quotes and no double
// one, so only a single quote in a string that holds both is escaped.
func reprQuote(s string) byte {
	if strings.Contains(s, "'") && strings.Contains(s, `"`) {
		return '\''
	}
	return 0
}

// ansiCQuote is s as bash quotes it in $'...' (printf %q, ${v@Q} and
// set -x, for a string that holds a character it cannot print), without
// the quotes: a backslash before ' and \, the C escapes of the controls
// that have one (\E for escape), and \ooo in octal for each other byte
// that is not printable. In the C locale no byte beyond ASCII is, so a
// character beyond ASCII is written byte by byte, which no lane reads
// (the escape lanes read code points): hence this needle. In a UTF-8
// locale (utf8Locale) a character beyond ASCII that glibc can print is
// written as itself (glibcPrints).
//
// A lane reading octal escapes would need no table, but it read every
// backslash of JSON text a second time: with secrets that hold a
// character beyond ASCII, it took the adversarial bench's backslash
// streams from 131 to 57 MB/s.
func ansiCQuote(s string, utf8Locale bool) string {
	const cControls, cLetters = "\a\b\f\n\r\t\v", "abfnrtv"
	var b strings.Builder
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch c := s[i]; {
		case c == '\\' || c == '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == 0x1b:
			b.WriteString(`\E`)
		case strings.IndexByte(cControls, c) >= 0:
			b.WriteByte('\\')
			b.WriteByte(cLetters[strings.IndexByte(cControls, c)])
		case c >= ' ' && c < 0x7f, utf8Locale && c >= utf8.RuneSelf && r != utf8.RuneError && glibcPrints(r):
			b.WriteString(s[i : i+w])
			i += w
			continue
		default:
			fmt.Fprintf(&b, `\%03o`, c)
		}
		i++
	}
	return b.String()
}

// glibcPrints reports whether glibc's iswprint holds for r beyond ASCII,
// as bash asks it: every assigned character but the controls and the
// line and paragraph separators; format and private-use characters too,
// which Go does not count as graphic. A character newer than the
// machine's glibc is unprintable to it and assigned to Go: bash then
// writes it in octal, and the form does not match.
func glibcPrints(r rune) bool {
	return unicode.IsGraphic(r) && !unicode.In(r, unicode.Zl, unicode.Zp) || unicode.In(r, unicode.Cf, unicode.Co)
}

// strRepr is Python's repr of s, without the quotes, as %r, a logged dict
// or a debugger prints a str: a backslash doubled, \t \n \r, every other
// character that is not printable as \xhh, \uhhhh or \Uhhhhhhhh, and the
// rest as itself. The escape lanes read it as it stands; as a needle it is
// found inside another escaping too (a repr in a JSON log's message).
func strRepr(s string) string {
	quote := rune(reprQuote(s))
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\' || r == quote && quote != 0:
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	return b.String()
}

// percentEscape is s with every byte but ASCII letters, digits and those
// in keep written as %XX, a space too: the encoders that differ from Go's
// (which writes a space as '+' in a query and keeps more in a path). The
// percent lanes read any of them; as a needle it is found when it is
// escaped again (a redirect URL inside a query).
func percentEscape(s, keep string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(keep, c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func goQuote(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// xmlEscape is s as encoding/xml's EscapeText writes it. It is written
// out here because importing encoding/xml costs every procmon process,
// guardians included, its package initialization at startup.
func xmlEscape(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		r, width := utf8.DecodeRuneInString(s[i:])
		var esc string
		switch r {
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '\t':
			esc = "&#x9;"
		case '\n':
			esc = "&#xA;"
		case '\r':
			esc = "&#xD;"
		default:
			if !xmlChar(r) || (r == utf8.RuneError && width == 1) {
				esc = "\uFFFD"
			}
		}
		if esc != "" {
			b.WriteString(s[last:i])
			b.WriteString(esc)
			last = i + width
		}
		i += width
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// xmlChar reports whether r is in XML 1.0's Char production.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}
