package redact

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// tokenRegexps state the token and JWT rules as regular expressions
// anchored at a start; the trailing part of each is the suppression that
// runs to the end of the token's characters.
// A token rule's match is its first group; the AWS key id is exactly 20
// characters, its group followed by a byte that ends it.
var tokenRegexps = []*regexp.Regexp{
	regexp.MustCompile(`^((?:ghp_|gho_|ghu_|ghs_|ghr_)[A-Za-z0-9]{36,})`),
	regexp.MustCompile(`^(github_pat_[A-Za-z0-9_]{22,})`),
	regexp.MustCompile(`^((?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})(?:[^A-Z0-9]|$)`),
	regexp.MustCompile(`^((?:xox[abposr]|xapp)-[A-Za-z0-9-]{10,})`),
	regexp.MustCompile(`^((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})`),
	regexp.MustCompile(`^((?:sk-proj-|sk-svcacct-|sk-admin-)[A-Za-z0-9_-]{20,})`),
	regexp.MustCompile(`^(sk-ant-[A-Za-z0-9_-]{20,})`),
	regexp.MustCompile(`^(glpat-[A-Za-z0-9_-]{20,})`),
	regexp.MustCompile(`^(npm_[A-Za-z0-9]{36,})`),
	regexp.MustCompile(`^(pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,})`),
	regexp.MustCompile(`^(AIza[A-Za-z0-9_-]{35})(?:[^A-Za-z0-9_-]|$)`),
}

// jwtRegexp is the JWT rule, which a byte before it does not change.
var jwtRegexp = regexp.MustCompile(`^eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}[A-Za-z0-9_.-]*`)

// gluedAt says that a token starting at the end of text follows a letter
// or digit of a word, not one that ends an escape.
var gluedAt = regexp.MustCompile(`[A-Za-z0-9]$`)
var escapeEnd = regexp.MustCompile(`(?:\\[A-Za-z0-9]|%[0-9A-Fa-f]{2}|\\[xX][0-9A-Fa-f]{2}|\\[uU][0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}|` +
	`(?:\x1b|\\x1[bB]|\\u001[bB]|\\u\{1[bB]\}|\\x\{1b\}|\\033|\\e|\^\[)\[[0-9:;<=>?]{0,32}[A-Za-z])$`)

// urlPassword is the URL rule: its first group is the password, which
// runs to the last '@' before a byte that ends the authority.
var urlPassword = regexp.MustCompile(`^(?:://|:\\/\\/)[A-Za-z0-9\-._~%!$&'()*+,;=]*:([A-Za-z0-9\-._~%!$&'()*+,;=:#^|{}\[\]\\@]*)@`)

// urlPctPassword is the URL rule over a percent-encoded URL: each byte of
// the userinfo is itself (one the encoders leave alone) or an escape, of a
// byte of its class; its first group is the password.
var urlPctPassword = func() *regexp.Regexp {
	units := func(c *[256]bool) string {
		var alt []string
		for b := range c {
			if c[b] {
				alt = append(alt, fmt.Sprintf(`%%(?i:%02x)`, b))
				if strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!'()*:@", byte(b)) >= 0 {
					alt = append(alt, regexp.QuoteMeta(string(rune(b))))
				}
			}
		}
		return `(?:` + strings.Join(alt, "|") + `)`
	}
	passOrAt := *classURLPass
	passOrAt['@'] = true
	return regexp.MustCompile(`^(?i:%3a%2f%2f|%3a//|:%2f%2f)` + units(classURLUser) + `*(?:(?i:%3a)|:)(` + units(&passOrAt) + `*)(?:%40|@)`)
}()

// regexpRedact redacts the union of every rule's match at every start,
// overlapping ones included.
func regexpRedact(in []byte) []byte {
	var ivs []interval
	for i := range in {
		if !strings.ContainsRune("gAxsre:%np", rune(in[i])) {
			continue // no rule starts with this byte
		}
		if m := jwtRegexp.FindIndex(in[i:]); m != nil {
			ivs = append(ivs, interval{int64(i), int64(i + m[1])})
		}
		for _, re := range tokenRegexps {
			if gluedAt.Match(in[:i]) && !escapeEnd.Match(in[:i]) {
				break
			}
			if m := re.FindSubmatchIndex(in[i:]); m != nil {
				ivs = append(ivs, interval{int64(i), int64(i + m[3])})
			}
		}
		for _, re := range []*regexp.Regexp{urlPassword, urlPctPassword} {
			if m := re.FindSubmatchIndex(in[i:]); m != nil && m[3] > m[2] {
				ivs = append(ivs, interval{int64(i + m[2]), int64(i + m[3])})
			}
		}
	}
	return maskIntervals(in, ivs)
}

// TestTokenRulesAgainstRegexp composes inputs from token and URL fragments
// and compares the stream with the regular expressions. Inputs end with a
// newline, so that no partial token is left at the end of the stream, and
// stay far below holdLimit.
func TestTokenRulesAgainstRegexp(t *testing.T) {
	frags := []string{"ghp_", "gho_", "github_pat_", "AKIA", "ASIA", "ACCA", "xoxb-", "xapp-", "sk_live_",
		"rk_test_", "sk-proj-", "sk-svcacct-", "sk-admin-", "sk-ant-", "glpat-", "npm_", "pypi-AgEIcHlwaS5vcmc", "AIza", "0123456789ABCDEFGHIJabcdefghij-_", "eyJ", ".", "_", "-", " ", "\n", "abcdefgh", "ABCDEFGH", "0123456789",
		"xyz", "Q", "k", "sk", "gh", "ey", "://", "https://", `:\/\/`, `\/`, "u", ":", "@", "/", "p%40ss!", "h",
		"%3A%2F%2F", "%3a%2f%2F", "%3A", "%3a", "%40", "%25", "%2", "%", "&", "+", "%2F", "%3Ab%40",
		"%3A//", ":%2F%2F", "!", "'(", ")*", "#", "^|", "{[", "]}", `\`, `\u0026`, "\"", "<", "%23", `\n`, "%3D", `\x3d`, "7", "E", "\x1b[36m", `\u001b[1;33m`, "m", "[0m", "\x1b[K", "\x1b[?25h", "38:2:", "K", `\U0001f511`, `\u{1B}[`, `\x{1b}[`, "^[[", "^[",
		"AKIAIOSFODNN7EXAMPLE", "0123456789ABCDEF"}
	rng := rand.New(rand.NewPCG(13, 14))
	r := mustNew(t)
	for round := 0; round < 1500; round++ {
		var in []byte
		for k := rng.IntN(40); k > 0; k-- {
			in = append(in, frags[rng.IntN(len(frags))]...)
		}
		in = append(in, '\n')
		want := regexpRedact(in)
		// The inputs hold no registered secret, only made-up tokens.
		if got := []byte(r.String(string(in))); string(got) != string(want) {
			t.Fatalf("input %q:\n got  %q\n want %q", in, got, want)
		}
		if got := oneByte(r, in); string(got) != string(want) {
			t.Fatalf("input %q, one-byte writes:\n got  %q\n want %q", in, got, want)
		}
	}
}
