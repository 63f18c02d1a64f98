package redact

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"procmon/internal/logsample"
)

// logText returns n bytes of log lines like a service writes: timestamps,
// levels, words, key=value pairs, URLs and some base64, without credentials.
func logText(n int) []byte {
	rng := rand.New(rand.NewPCG(11, 12))
	words := []string{"request", "served", "connection", "closed", "user", "cache", "miss",
		"retrying", "upstream", "timeout", "worker", "started", "listening", "handler",
		"payload", "accepted", "status", "query", "took", "bytes", "session", "renewed"}
	levels := []string{"INFO", "DEBUG", "WARN", "ERROR"}
	out := make([]byte, 0, n+512)
	for len(out) < n {
		out = fmt.Appendf(out, "2024-05-%02dT%02d:%02d:%02d.%03dZ %s [%s] ", 1+rng.IntN(28), rng.IntN(24),
			rng.IntN(60), rng.IntN(60), rng.IntN(1000), levels[rng.IntN(len(levels))], words[rng.IntN(len(words))])
		for k := 3 + rng.IntN(8); k > 0; k-- {
			out = append(out, words[rng.IntN(len(words))]...)
			out = append(out, ' ')
		}
		switch rng.IntN(5) {
		case 0:
			out = fmt.Appendf(out, "url=https://api.example.com/v1/items/%d?page=%d&sort=desc ", rng.IntN(100000), rng.IntN(50))
		case 1:
			blob := make([]byte, 12+rng.IntN(48))
			for i := range blob {
				blob[i] = byte(rng.IntN(256))
			}
			out = fmt.Appendf(out, "body=%s ", base64.StdEncoding.EncodeToString(blob))
		case 2:
			out = fmt.Appendf(out, "id=%08x-%04x latency=%dms status=%d ", rng.Uint32(), rng.IntN(1<<16), rng.IntN(900), 200+rng.IntN(4)*100)
		}
		out = append(out, '\n')
	}
	return out[:n]
}

// BenchmarkRedact feeds 1 MiB of log text in 4 KiB writes through
// redactors with 0, 10 and 200 random secrets of 24 to 40 bytes.
func BenchmarkRedact(b *testing.B) {
	text := logText(1 << 20)
	for _, n := range []int{0, 10, 200} {
		b.Run(fmt.Sprintf("secrets=%d", n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(uint64(n), 99))
			secrets := make([]string, n)
			for i := range secrets {
				secrets[i] = randomSecret(rng, 24+rng.IntN(17))
			}
			r, err := New(secrets)
			if err != nil {
				b.Fatal(err)
			}
			out := make([]byte, 0, len(text)+4096)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				s := r.NewStream()
				out = out[:0]
				for i := 0; i < len(text); i += 4096 {
					out = s.Redact(out, text[i:min(i+4096, len(text))])
				}
				out = s.Flush(out)
			}
			if len(out) != len(text) {
				b.Fatalf("the log text was redacted: %d bytes out of %d", len(out), len(text))
			}
		})
	}
}

// writerText returns n bytes of the text bench/writer feeds the guardian
// in bench/throughput.sh: lines of exactly 1 KiB, harder than logText for
// their URLs.
func writerText(n int) []byte {
	return logsample.Lines(n+1024, 1024)[:n]
}

// BenchmarkRedactGuardian redacts 4 MiB of writerText the way the guardian
// does: 256 KiB writes (its pipe reads) into one long stream, with random
// 32-byte secrets.
func BenchmarkRedactGuardian(b *testing.B) {
	text := writerText(4 << 20)
	const chunk = 256 << 10
	for _, n := range []int{0, 40, 200} {
		b.Run(fmt.Sprintf("secrets=%d", n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			secrets := make([]string, n)
			for i := range secrets {
				secrets[i] = randomSecret(rng, 32)
			}
			r, err := New(secrets)
			if err != nil {
				b.Fatal(err)
			}
			s := r.NewStream()
			out := make([]byte, 0, chunk+4096)
			var fed, got int64
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for b.Loop() {
				for i := 0; i < len(text); i += chunk {
					p := text[i:min(i+chunk, len(text))]
					out = s.Redact(out[:0], p)
					fed += int64(len(p))
					got += int64(len(out))
				}
			}
			if got += int64(s.Held()); got != fed {
				b.Fatalf("the log text was redacted: %d bytes out of %d", got, fed)
			}
		})
	}
}

// adversarialFamilies are the spellings BenchmarkRedactAdversarial writes
// its secrets in: as they stand, and by each escaping family, with the
// first character escaped (so that the raw scan follows nothing and the
// lane follows the whole secret alone) and the rest as the family's usual
// writer leaves it, which escapes 'é' (every secret has some) in the
// middle: Python's json.dumps, url.QueryEscape, an ASCII-only XML writer.
// The whitespace family writes a multi-line secret reindented.
var adversarialFamilies = []struct {
	name  string
	spell func(s string) string
}{
	{"plain", func(s string) string { return s }},
	{"backslash", func(s string) string {
		r, n := utf8.DecodeRuneInString(s)
		return fmt.Sprintf(`\u%04x`, r) + asciiJSON(s[n:])
	}},
	{"percent", func(s string) string { return fmt.Sprintf("%%%02X", s[0]) + url.QueryEscape(s[1:]) }},
	{"entity", func(s string) string {
		r, n := utf8.DecodeRuneInString(s)
		return fmt.Sprintf("&#%d;", r) + strings.ReplaceAll(html.EscapeString(s[n:]), "é", "&#xe9;")
	}},
	{"whitespace", func(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }},
}

// adversarialSecrets returns 200 random secrets of 24 to 40 bytes with an
// 'é' for each 'b'; multi-line, 200 secrets of four lines of 7 bytes (a
// line shorter than MinSecretLen is no needle of its own, so a near miss
// of the whole is no hit).
func adversarialSecrets(multiLine bool) []string {
	rng := rand.New(rand.NewPCG(200, 99))
	secrets := make([]string, 200)
	for i := range secrets {
		if !multiLine {
			secrets[i] = strings.ReplaceAll(randomSecret(rng, 24+rng.IntN(17)), "b", "é")
			continue
		}
		lines := make([]string, 4)
		for k := range lines {
			lines[k] = randomSecret(rng, 7)
		}
		secrets[i] = strings.Join(lines, "\n")
	}
	return secrets
}

// adversarialText returns lines built to keep the redactor off its skip,
// about n bytes of them, and how many secrets they hold: with hits, each
// line holds four registered secrets; without, four near misses of them
// (a secret but its last character), which every filter admits and the
// automaton follows almost to the end. spell writes each in a family.
func adversarialText(n int, secrets []string, hits bool, spell func(string) string) ([]byte, int) {
	rng := rand.New(rand.NewPCG(17, 18))
	out := make([]byte, 0, n+512)
	count := 0
	for len(out) < n {
		line := []byte("2024-05-01T00:00:00Z INFO ")
		for k := 0; k < 4; k++ {
			s := secrets[rng.IntN(len(secrets))]
			if !hits {
				s = s[:len(s)-1]
			}
			line = append(line, spell(s)...)
			line = append(line, ' ')
		}
		line = append(line, '\n')
		if len(out)+len(line) > n {
			break
		}
		out = append(out, line...)
		count += 4
	}
	return out, count
}

// BenchmarkRedactAdversarial feeds 1 MiB of adversarialText in 4 KiB
// writes through a redactor with 200 secrets, for each family, so that
// nearly every byte goes through the exact scan and, escaped, through a
// lane.
func BenchmarkRedactAdversarial(b *testing.B) {
	for _, fam := range adversarialFamilies {
		secrets := adversarialSecrets(fam.name == "whitespace")
		r, err := New(secrets)
		if err != nil {
			b.Fatal(err)
		}
		for _, hits := range []bool{false, true} {
			text, count := adversarialText(1<<20, secrets, hits, fam.spell)
			b.Run(fmt.Sprintf("family=%s/hits=%v", fam.name, hits), func(b *testing.B) {
				out := make([]byte, 0, len(text)+4096)
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					s := r.NewStream()
					out = out[:0]
					for i := 0; i < len(text); i += 4096 {
						out = s.Redact(out, text[i:min(i+4096, len(text))])
					}
					out = s.Flush(out)
				}
				want := 0
				if hits {
					want = count
				}
				if markers := bytes.Count(out, []byte(Marker)); markers != want {
					b.Fatalf("%d markers, want %d", markers, want)
				}
			})
		}
	}
}

// BenchmarkNew compiles 1, 5, 40 and 200 random secrets, as a guardian
// does before its start's handoff.
func BenchmarkNew(b *testing.B) {
	for _, n := range []int{1, 5, 40, 200} {
		b.Run(fmt.Sprintf("secrets=%d", n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			secrets := make([]string, n)
			for i := range secrets {
				secrets[i] = randomSecret(rng, 32)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := New(secrets); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
