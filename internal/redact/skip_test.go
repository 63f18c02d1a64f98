package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// liveStart reports whether something may start at p[q] as far as p can
// tell: a needle or a rule trigger begins there, the Authorization header
// name does in any case, or p ends inside one of them.
func liveStart(texts []string, p []byte, q int) bool {
	rest := p[q:]
	for _, t := range texts {
		n := min(len(t), len(rest))
		if string(rest[:n]) == t[:n] {
			return true
		}
	}
	n := min(len(authWord), len(rest))
	return strings.EqualFold(string(rest[:n]), authWord[:n])
}

// TestSkipPassesOnlyDeadStarts checks the skip's promise directly: every
// position it passes is one at which no needle, rule trigger or header name
// can start. The inputs are log text salted with needles, triggers and near
// misses, and the secrets include some that begin like a trigger.
func TestSkipPassesOnlyDeadStarts(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	sets := [][]string{
		nil,
		{"/etc/secret-key-file", "amplifier-secret"},
		{"://secret-value", "eyJsecret-value", "https://user:pw@host"},
		// Needles that begin inside the triggers whose windows lie far
		// into them, so that a later start is found before an earlier one.
		{"uthorization-key", "thorization-key", "orization-secret", "ithub_pat_secret", "---BEGIN-secret", "b_pat_secret", "EGIN secret"},
	}
	for i := 0; i < 3; i++ {
		var s []string
		for k := 5 + rng.IntN(40); k > 0; k-- {
			s = append(s, randomSecret(rng, 8+rng.IntN(30)))
		}
		sets = append(sets, s)
	}
	var triggers []string
	for _, p := range rulePatterns() {
		triggers = append(triggers, p.text)
	}
	for _, secrets := range sets {
		r := mustNew(t, secrets...)
		texts := append(allNeedles(secrets), triggers...)
		salt := append(append([]string(nil), texts...), "AuThOrIzAtIoN", "authoriz", "xa", "-a", "iz", "za", "://")
		for round := 0; round < 30; round++ {
			text := logText(1000 + rng.IntN(3000))
			var p []byte
			for len(text) > 0 {
				n := min(len(text), rng.IntN(80))
				p = append(p, text[:n]...)
				text = text[n:]
				if rng.IntN(3) == 0 {
					s := salt[rng.IntN(len(salt))]
					p = append(p, s[:rng.IntN(len(s)+1)]...)
				}
			}
			// Short writes put many stride hits near the end of p, where
			// the skip decides differently.
			for i := 0; i < len(p); {
				w := p[:min(len(p), i+1+rng.IntN(300))]
				stop := max(i, len(w)-rng.IntN(10))
				q := r.ac.skip(w, i, stop, false)
				if q < i || q > stop {
					t.Fatalf("skip(%d, %d) = %d", i, stop, q)
				}
				for k := i; k < q; k++ {
					if liveStart(texts, w, k) {
						t.Fatalf("skip from %d passed a start at %d: %q", i, k, w[k:min(k+20, len(w))])
					}
				}
				i = q + 1 + rng.IntN(3)
			}
		}
	}
}

// TestSkipFindsEarlierStartAfterLater covers the one way a stride round can
// admit a start while an earlier one is still undecided: the header name's
// window lies seven bytes into it, so its test can fall in the round after
// the one that admits a needle beginning one byte into it. Every alignment,
// starting point and end of the text is tried.
func TestSkipFindsEarlierStartAfterLater(t *testing.T) {
	r := mustNew(t, "uthorization-key")
	texts := append(allNeedles([]string{"uthorization-key"}), urlTrigger)
	for _, p := range rulePatterns() {
		texts = append(texts, p.text)
	}
	for off := 0; off < 2*needleStride; off++ {
		in := []byte(strings.Repeat(" ", off) + "Authorization: Bearer tok" + strings.Repeat(" ", 20))
		for end := 0; end <= len(in); end++ {
			for i := 0; i <= end; i++ {
				q := r.ac.skip(in[:end], i, end, false)
				for k := i; k < q; k++ {
					if liveStart(texts, in[:end], k) {
						t.Fatalf("offset %d, end %d: skip from %d passed a start at %d", off, end, i, k)
					}
				}
			}
		}
	}
}

// TestURLShortcut compares the skip, which passes over URLs whose userinfo
// ends without a password, with the exact scan on URLs of every shape:
// with and without user, password and '@', with ports, with passwords near
// holdLimit, with secrets and triggers inside, and cut by write boundaries.
func TestURLShortcut(t *testing.T) {
	sets := [][]string{
		{"hunter2hunter2", "s3cr3t-passw0rd"},
		// These make the shortcut unavailable: "://" would not leave the
		// automaton at its root.
		{"/etc/secret-key-file"},
		{"://secret-value"},
		{"//double-slash-secret"},
	}
	frags := []string{"https", "http", "x", "://", "://", "://", "u", "user.name", "hunter2hunter2",
		"s3cr3t-passw0rd", ":", ":", "pw", "p%40ss!", "@", "@", "/", "/path", " ", "\n", "?q=1", "[::1]",
		"8080", "example.com", "ghp_" + ghTok, "eyJab.eyJcd.efgh", "Authorization: Bearer tok ", "//",
		strings.Repeat("a", holdLimit-2), strings.Repeat("b", holdLimit+3)}
	for k, secrets := range sets {
		r := mustNew(t, secrets...)
		if want := k == 0; r.urlFast != want {
			t.Fatalf("secrets %d: urlFast is %v", k, r.urlFast)
		}
		needles := allNeedles(secrets)
		exact := *r
		exact.exact = true
		rng := rand.New(rand.NewPCG(31, uint64(k)))
		for round := 0; round < 400; round++ {
			var in []byte
			for n := rng.IntN(30); n > 0; n-- {
				in = append(in, frags[rng.IntN(len(frags))]...)
			}
			if rng.IntN(2) == 0 {
				in = append(in, '\n')
			}
			want := []byte(exact.String(string(in)))
			checkSame(t, needles, "whole", []byte(r.String(string(in))), want)
			for _, size := range []int{5000, 97, 13, 1} {
				checkSame(t, needles, "chunks", feedSizes(r, in, func() int { return size }), want)
			}
		}
	}
	// The shortcut itself: a URL without a password is passed over, one
	// whose password ends at '@' or may go on in the next write is not.
	r := mustNew(t)
	for in, passed := range map[string]bool{
		"see https://user@example.com/x ok":    true,
		"see http://localhost:8080/metrics ok": true,
		"see https://u:pw@example.com/x ok":    false,
		"see https://u:pw":                     false,
		"see https://user":                     false,
	} {
		p := []byte(in)
		u := strings.Index(in, "://")
		if q := r.ac.skip(p, 0, len(p), true); q < u || (q > u) != passed {
			t.Errorf("%q: skip stopped at %d, the URL trigger is at %d", in, q, u)
		}
	}
}
