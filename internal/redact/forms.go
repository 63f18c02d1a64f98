package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// lineJoins are the separators a multi-line secret's lines may be printed
// with.
var lineJoins = []string{"\n", "\r\n", " ", "\t"}

// Forms returns the needle representations of one secret: every form the
// secret may take in a service's output, deduplicated, each at least
// MinSecretLen bytes long, in a stable order.
//
// The forms are the secret as is; escaped as JSON (without quotes or HTML
// escaping), Go-quoted (without quotes), URL query- and path-escaped and
// XML-escaped; and base64 and base64url encoded: the base64 forms encode
// secret[k:k+3*((len-k)/3)] for k = 0, 1, 2 without padding, the characters
// the secret fully determines at any alignment inside a longer base64 blob.
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
	add(goQuote(secret))
	add(url.QueryEscape(secret))
	add(url.PathEscape(secret))
	add(xmlEscape(secret))
	for k := 0; k < 3 && len(secret)-k >= 3; k++ {
		seg := []byte(secret[k : k+3*((len(secret)-k)/3)])
		add(base64.RawStdEncoding.EncodeToString(seg))
		add(base64.RawURLEncoding.EncodeToString(seg))
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
