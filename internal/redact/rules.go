package redact

import (
	"bytes"
	"math/bits"
	"strings"
)

// holdLimit bounds how long a rule may hold a candidate that is not yet
// known to be a credential (a JWT before its third segment, a URL password
// before its '@'). A candidate that reaches it is treated as a credential:
// redacted so far and suppressed until its characters end, so memory stays
// bounded and nothing leaks.
const holdLimit = 4096

// pemMaxLabel bounds the label of a PEM BEGIN or END line.
const pemMaxLabel = 64

// Rule indexes. The token rules come first so that a rule index below
// numTokenRules selects tokenRules.
const (
	ruleGitHub = iota
	ruleGitHubPAT
	ruleAWS
	ruleSlack
	ruleStripe
	ruleOpenAI
	ruleAnthropic
	ruleGitLab
	ruleNPM
	rulePyPI
	ruleGoogle
	numTokenRules
)

const (
	ruleJWT = numTokenRules + iota
	rulePEM
	ruleURL
	ruleURLPct
	numRules
)

// Rule phases. Only phHold holds bytes back; phSuppress redacts each byte
// as it comes; phWatch follows text that is never redacted itself.
const (
	phIdle uint8 = iota
	phHold
	phSuppress
	phWatch
)

// PEM sub-phases: the BEGIN line is held, the body is suppressed while the
// END line is looked for.
const (
	pemLabel uint8 = iota
	pemDashes
	pemBody
	pemEndLabel
	pemEndDashes
)

// Authorization header phases.
const (
	authIdle uint8 = iota
	authName
	authColon
	authScheme
	authSpace
	authCred
)

// tokenRule is a literal prefix followed by a run of class characters; the
// prefix and run are a credential once the run reaches min, and the rest of
// the run is suppressed however long it is; with exact, the run is exactly
// min long or no credential. window places the prefixes' stride window
// (see automaton.go) on their two rarest digrams in logs.
//
// A prefix glued to a letter or digit before it is inside a word or a
// blob (task-proj-x, the ACCA of an upper-case hex digest), not a token's
// start; a letter or digit that ends an escape (\n, %3D, \u0026) is no
// such glue (glued).
type tokenRule struct {
	prefixes []string
	class    *[256]bool
	min      int32
	window   int
	exact    bool
}

func class(spec string) *[256]bool {
	var c [256]bool
	for i := 0; i < len(spec); i++ {
		if i+2 < len(spec) && spec[i+1] == '-' {
			for b := spec[i]; b <= spec[i+2]; b++ {
				c[b] = true
			}
			i += 2
			continue
		}
		c[spec[i]] = true
	}
	return &c
}

var (
	classAlnum      = class("A-Za-z0-9")
	classAlnumUnder = class("A-Za-z0-9_")
	classUpperNum   = class("A-Z0-9")
	classAlnumDash  = class("A-Za-z0-9-")
	classB64URL     = class("A-Za-z0-9_-")
	classJWT        = class("A-Za-z0-9_.-")
	classPEMLabel   = class("A-Z0-9 ")
	// RFC 3986 userinfo: unreserved, pct-encoded and sub-delims. The
	// password may also contain ':', and what programs that build a URL
	// by hand leave in it unescaped, as URL parsers read it up to the
	// authority's last '@' (see advanceURL): '#' '^' '|' braces, brackets,
	// and the backslash of a JSON escape. '"', '<', '>' and the backtick
	// stay out: they end a URL in JSON, HTML and Markdown.
	classURLUser = class("A-Za-z0-9-._~%!$&'()*+,;=")
	classURLPass = class("A-Za-z0-9-._~%!$&'()*+,;=:#^|{}[]\\")
	// What a percent-encoded URL's writers leave as it is in its userinfo:
	// RFC 3986 unreserved, the sub-delims encodeURIComponent and Java's
	// URLEncoder keep, and the ':' and '@' that url.PathEscape keeps.
	classURLPctRaw = class("A-Za-z0-9-._~!'()*:@")
	classSpace     = class(" \t\n\r\v\f")
	// What an Authorization credential begins with: RFC 7235's token68,
	// which base64 and every bearer token format are written in.
	classAuthCred = class("A-Za-z0-9._~+/-")
)

var tokenRules = [numTokenRules]tokenRule{
	// The windows avoid digrams common in logs: "gh" of "high", "ap" of
	// "api", "sk" of "task".
	ruleGitHub:    {[]string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, classAlnum, 36, 1, false}, // "hp" "p_"
	ruleGitHubPAT: {[]string{"github_pat_"}, classAlnumUnder, 22, 5, false},                     // "b_" "_p"
	ruleAWS:       {[]string{"AKIA", "ASIA", "ABIA", "ACCA"}, classUpperNum, 16, 1, true},       // "KI" "IA"
	ruleSlack: {[]string{"xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xapp-"},
		classAlnumDash, 10, 2, false}, // "xb" "b-", "pp" "p-"
	ruleStripe:    {[]string{"sk_live_", "sk_test_", "rk_live_", "rk_test_"}, classAlnum, 16, 1, false}, // "k_" "_l"
	ruleOpenAI:    {[]string{"sk-proj-", "sk-svcacct-", "sk-admin-"}, classB64URL, 20, 5, false},        // "oj" "j-"; see windowAt
	ruleAnthropic: {[]string{"sk-ant-"}, classB64URL, 20, 1, false},                                     // "k-" "-a"
	// Beyond SPEC 8's list, the registries and hosts a coding agent's
	// services publish to and call: GitLab, npm, PyPI (whose prefix is the
	// base64 of its macaroon's location, pypi.org) and Google API keys (39
	// characters exactly).
	ruleGitLab: {[]string{"glpat-"}, classB64URL, 20, 0, false},               // "gl" "lp"
	ruleNPM:    {[]string{"npm_"}, classAlnum, 36, 1, false},                  // "pm" "m_"
	rulePyPI:   {[]string{"pypi-AgEIcHlwaS5vcmc"}, classB64URL, 50, 6, false}, // "gE" "EI"
	ruleGoogle: {[]string{"AIza"}, classB64URL, 35, 1, true},                  // "Iz" "za"
}

// windowAt returns the stride window of a rule's prefix: the rule's, but
// for the prefixes whose digrams there are common in logs ("in" of
// "sk-admin-" at the OpenAI rule's 5), which take the window of their
// two rarest.
func windowAt(prefix string, window int) int {
	switch prefix {
	case "sk-svcacct-":
		return 3 // "sv" "vc"
	case "sk-admin-":
		return 1 // "k-" "-a", the Anthropic rule's too
	}
	return window
}

// rulePatterns returns the literal triggers of every rule.
func rulePatterns() []pattern {
	var pats []pattern
	add := func(rule int, text string, holding bool, window int) {
		pats = append(pats, pattern{text: text, holding: holding, trig: trigger{uint8(rule), uint8(len(text))}, window: window})
	}
	for i, tr := range tokenRules {
		for _, p := range tr.prefixes {
			add(i, p, true, windowAt(p, tr.window))
		}
	}
	add(ruleJWT, "eyJ", true, 0)
	add(rulePEM, "-----BEGIN ", true, 5) // "BE" "EG"
	add(ruleURL, urlTrigger, false, 0)
	add(ruleURL, urlTriggerJSON, false, 1) // "\/" "/\"
	for _, t := range caseVariants(urlTriggerPct) {
		add(ruleURLPct, t, false, 4) // "2F" "F%"
	}
	for _, t := range caseVariants(urlTriggerPctColon) {
		add(ruleURLPct, t, false, 1) // "3A" "A/"
	}
	for _, t := range caseVariants(urlTriggerPctSlashes) {
		add(ruleURLPct, t, false, 2) // "2F" "F%"
	}
	return pats
}

// urlTrigger starts the URL rule; so does urlTriggerJSON, the same in a
// JSON string whose writer escapes '/' (PHP, some Java libraries), after
// which the userinfo is as in the plain URL. urlTriggerPct, in either case
// of its hex digits, starts the URL rule of a percent-encoded URL (one
// inside a query or a form body), whose userinfo is read decoded; so do
// the same with its slashes left alone (Python's quote keeps '/') and with
// its colon left alone (url.PathEscape keeps ':').
const (
	urlTrigger           = "://"
	urlTriggerJSON       = `:\/\/`
	urlTriggerPct        = "%3a%2f%2f"
	urlTriggerPctColon   = "%3a//"
	urlTriggerPctSlashes = ":%2f%2f"
)

// authWindow places the stride window of the Authorization header name on
// "iz" and "za": 'z' is rare in logs.
const authWindow = 6

// authVariants returns the Authorization header name in every case
// variant of the bytes the skip looks at: its first four and the two
// digrams of its window (there are 2^13 variants of the whole word).
func authVariants() []string {
	w := authWindow
	pos := []int{0, 1, 2, 3, w, w + 1, w + 2}
	var out []string
	for m := 0; m < 1<<len(pos); m++ {
		v := []byte(authWord)
		for k, p := range pos {
			if m&(1<<k) != 0 {
				v[p] = v[p] - 'a' + 'A'
			}
		}
		out = append(out, string(v))
	}
	return out
}

// kmp builds a matcher for one literal; with fold, ASCII letters match in
// either case (the literal must be lower case).
func kmp(pat string, fold bool) [][256]uint8 {
	m := len(pat)
	dfa := make([][256]uint8, m+1)
	x := 0
	for j := 0; j <= m; j++ {
		if j > 0 {
			dfa[j] = dfa[x]
		}
		if j < m {
			dfa[j][pat[j]] = uint8(j + 1)
			if fold && pat[j] >= 'a' && pat[j] <= 'z' {
				dfa[j][pat[j]-'a'+'A'] = uint8(j + 1)
			}
			if j > 0 {
				x = int(dfa[x][pat[j]])
			}
		}
	}
	return dfa
}

const (
	authWord = "authorization"
	pemEnd   = "-----END "
)

var (
	authDFA   = (*[len(authWord) + 1][256]uint8)(kmp(authWord, true))
	pemEndDFA = (*[len(pemEnd) + 1][256]uint8)(kmp(pemEnd, false))
)

func lower(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

func isLetter(b byte) bool {
	b = lower(b)
	return b >= 'a' && b <= 'z'
}

func privateLabel(l []byte) bool {
	return bytes.HasSuffix(l, []byte("PRIVATE KEY")) || bytes.HasSuffix(l, []byte("PRIVATE KEY BLOCK"))
}

// ruleState is the progress of one rule's current candidate.
type ruleState struct {
	start int64 // first byte of the candidate (held while phHold)
	n     int32 // length of the run (or of the current JWT segment)
	seg   int8  // JWT segment, 1 to 3
	phase uint8
	// inner has the starts of the triggers inside the candidate of an
	// exact rule, oldest first, each a candidate of its own once the one
	// before it is too long (AIza-AIzaSyD...): all end where the run
	// does, so one of them at most has the exact length. A trigger needs
	// a byte before it that is no glue, so no more than eight fit in one
	// candidate's length.
	inner  [8]int64
	nInner uint8
}

type pemState struct {
	sub      uint8
	dashes   uint8
	endK     uint8
	labelLen uint8
	endLen   uint8
	label    [pemMaxLabel]byte
	end      [pemMaxLabel]byte
}

type authState struct {
	k     uint8 // progress of authDFA over the header name
	phase uint8
	quote bool
	// field says the name was a form or query field's (authorization=),
	// whose value holds no raw space; valQuote is the quote that opened
	// the value (escaped or not), which ends the credential. nameQuote is
	// a quote just before the name, which opened a string holding the
	// whole header (curl -H "Authorization: Bearer x"): it ends the
	// credential when the value has no quote of its own.
	field     bool
	valQuote  byte
	nameQuote byte
	schemeLen uint8
	scheme    [6]byte
	// A header inside a percent-encoded value (a logged URL or form body)
	// writes its colon and spaces as %3A, %20 or '+': pct counts the bytes
	// of an escape being read (1 after '%', 2 after its first digit), and
	// encoded says one was, so that the credential ends at the '&' or '"'
	// that ends the value.
	pct      uint8
	pctHi    byte
	pctStart int64
	encoded  bool
	// credStart is where the credential began, and credLen how many of
	// its bytes were read, up to MinSecretLen: until then it is held.
	credStart int64
	credLen   uint8
}

// start begins a rule's candidate at the given position unless one is
// already running: a trigger inside a running candidate can only find a
// suffix of it, which the running one covers.
func (s *Stream) start(t trigger, at int64) {
	bit := uint32(1) << t.rule
	token := int(t.rule) < numTokenRules
	if token && s.glued(at) {
		return
	}
	rs := &s.rs[t.rule]
	if s.active&bit != 0 {
		if token && tokenRules[t.rule].exact && int(rs.nInner) < len(rs.inner) {
			rs.inner[rs.nInner] = at
			rs.nInner++
		}
		return
	}
	s.active |= bit
	rs.start = at
	rs.n = 0
	rs.nInner = 0
	rs.seg = 0
	rs.phase = phHold
	switch t.rule {
	case ruleJWT:
		rs.seg = 1
		rs.n = int32(t.length)
	case rulePEM:
		s.pem.sub = pemLabel
		s.pem.labelLen = 0
	case ruleURL:
		rs.phase = phWatch
	case ruleURLPct:
		rs.phase = phWatch
		s.urlPct.n = 0
	}
}

// glued reports whether the input byte before position at is a letter or
// digit that does not end an escape or a terminal's control sequence: a
// token may follow \n, %3D, \x3d, \u003d, \U0001f511 or \x1b[36m, written
// by JSON, URL encoders, Go and Python quoting, and coloured log output
// (raw, or as \u001b, \x1b, \u{1b}, \x{1b}, \033 or \e in text, or
// as cat -v shows it, ^[).
func (s *Stream) glued(at int64) bool {
	var buf [glueBehind]byte
	n := 0
	for ; n < glueBehind; n++ {
		c, ok := s.rawAt(at - 1 - int64(n))
		if !ok {
			break
		}
		buf[glueBehind-1-n] = c
	}
	w := buf[glueBehind-n:] // the bytes before at, in order
	if n == 0 || !isAlnum(w[n-1]) {
		return false
	}
	return !escapeEnds(w)
}

// glueBehind is how many bytes glued reads before a trigger: enough for
// a terminal sequence of csiParams parameter bytes written as text
// (\u001b[ and a truecolour foreground and background, m).
const glueBehind = 40

// csiParams bounds the parameter bytes of a terminal sequence that
// escapeEnds knows, and classCSIParam has them.
const csiParams = 32

var classCSIParam = class("0-9:;<=>?")

// escapeEnds reports whether w ends with an escape, or with a terminal
// control sequence (ESC [, parameters, a letter: colours, grep's \x1b[K,
// npm's \x1b[2K\x1b[1G, \x1b[?25h) of csiParams parameter bytes or fewer.
func escapeEnds(w []byte) bool {
	hexRun := func(k int) bool { // the last k bytes are hex digits
		if len(w) < k {
			return false
		}
		for _, c := range w[len(w)-k:] {
			if hexDigits[c] >= 16 {
				return false
			}
		}
		return true
	}
	at := func(k int, c byte) bool { return len(w) >= k && w[len(w)-k] == c }
	switch {
	case at(2, '\\'),
		at(3, '%') && hexRun(2),
		at(4, '\\') && (at(3, 'x') || at(3, 'X')) && hexRun(2),
		at(6, '\\') && (at(5, 'u') || at(5, 'U')) && hexRun(4),
		at(10, '\\') && at(9, 'U') && hexRun(8):
		return true
	case !isLetter(w[len(w)-1]):
		return false
	}
	k := len(w) - 1
	for k > 0 && len(w)-1-k < csiParams && classCSIParam[w[k-1]] {
		k--
	}
	if k == 0 || w[k-1] != '[' {
		return false
	}
	intro := string(w[:k-1])
	for _, esc := range []string{"\x1b", `\x1b`, `\x1B`, `\u001b`, `\u001B`, `\u{1b}`, `\u{1B}`, `\x{1b}`, `\033`, `\e`, "^["} {
		if strings.HasSuffix(intro, esc) {
			return true
		}
	}
	return false
}

func isAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b|0x20 >= 'a' && b|0x20 <= 'z'
}

// nextInner moves the candidate of exact rule i, too long at byte j, to
// the first trigger inside it that is not, or ends the rule.
func (s *Stream) nextInner(i int, j int64) {
	rs, tr := &s.rs[i], &tokenRules[i]
	for k := 0; k < int(rs.nInner); k++ {
		at := rs.inner[k]
		if n := int32(j+1-at) - int32(len(tr.prefixes[0])); n <= tr.min {
			rs.start, rs.n = at, n
			rs.nInner = uint8(copy(rs.inner[:], rs.inner[k+1:rs.nInner]))
			return
		}
	}
	s.stop(i)
}

func (s *Stream) stop(rule int) {
	s.active &^= 1 << rule
	s.rs[rule].phase = phIdle
}

// confirm turns a held candidate into a credential ending at end.
func (s *Stream) confirm(rule int, end int64) {
	rs := &s.rs[rule]
	rs.phase = phSuppress
	s.addInterval(rs.start, end)
}

// advance feeds byte b, at position j, to every running rule. It runs before
// the automaton reports the triggers ending at b, so a trigger whose last
// byte ends a candidate starts a fresh one.
func (s *Stream) advance(b byte, j int64) {
	for m := s.active; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		rs := &s.rs[i]
		switch {
		case i < numTokenRules:
			tr := &tokenRules[i]
			switch {
			case !tr.class[b]:
				if tr.exact && rs.n == tr.min {
					s.addInterval(rs.start, j)
				}
				s.stop(i)
			case rs.phase == phSuppress:
				s.addInterval(j, j+1)
			default:
				rs.n++
				switch {
				case !tr.exact && rs.n >= tr.min:
					s.confirm(i, j+1)
				case tr.exact && rs.n > tr.min:
					s.nextInner(i, j) // too long for the format from here
				}
			}
		case i == ruleJWT:
			s.advanceJWT(rs, b, j)
		case i == rulePEM:
			s.advancePEM(rs, b, j)
		case i == ruleURL:
			s.advanceURL(ruleURL, rs, b, j, j)
		case i == ruleURLPct:
			s.advanceURLPct(rs, b, j)
		}
	}
}

func (s *Stream) advanceJWT(rs *ruleState, b byte, j int64) {
	if rs.phase == phSuppress {
		if classJWT[b] {
			s.addInterval(j, j+1)
		} else {
			s.stop(ruleJWT)
		}
		return
	}
	switch {
	case classB64URL[b]:
		rs.n++
		if rs.seg == 3 && rs.n >= 4 {
			s.confirm(ruleJWT, j+1)
			return
		}
	case b == '.' && rs.n >= 4 && rs.seg < 3:
		rs.seg++
		rs.n = 0
	default:
		s.stop(ruleJWT)
		return
	}
	if j+1-rs.start >= holdLimit {
		s.confirm(ruleJWT, j+1)
	}
}

func (s *Stream) advancePEM(rs *ruleState, b byte, j int64) {
	p := &s.pem
	if rs.phase == phHold {
		switch p.sub {
		case pemLabel:
			switch {
			case classPEMLabel[b] && p.labelLen < pemMaxLabel:
				p.label[p.labelLen] = b
				p.labelLen++
			case b == '-' && privateLabel(p.label[:p.labelLen]):
				p.sub = pemDashes
				p.dashes = 1
			default:
				s.stop(rulePEM)
			}
		case pemDashes:
			if b != '-' {
				s.stop(rulePEM)
				return
			}
			p.dashes++
			if p.dashes == 5 {
				s.confirm(rulePEM, j+1)
				p.sub = pemBody
				p.endK = 0
			}
		}
		return
	}
	// The body and the END line are redacted byte by byte, never buffered,
	// so a block without END costs nothing but its marker.
	s.addInterval(j, j+1)
	switch p.sub {
	case pemBody:
		p.endK = pemEndDFA[p.endK][b]
		if int(p.endK) == len(pemEnd) {
			p.sub = pemEndLabel
			p.endLen = 0
			p.endK = 0
		}
	case pemEndLabel:
		switch {
		case classPEMLabel[b] && p.endLen < pemMaxLabel:
			p.end[p.endLen] = b
			p.endLen++
		case b == '-' && bytes.Equal(p.end[:p.endLen], p.label[:p.labelLen]):
			p.sub = pemEndDashes
			p.dashes = 1
		default:
			p.sub = pemBody
			p.endK = pemEndDFA[0][b]
		}
	case pemEndDashes:
		if b != '-' {
			p.sub = pemBody
			p.endK = pemEndDFA[0][b]
			return
		}
		p.dashes++
		if p.dashes == 5 {
			s.stop(rulePEM)
		}
	}
}

// advanceURL feeds userinfo byte b to URL rule rule, whose state is rs;
// the input's bytes [from, j] stand for b (one byte, or a percent escape
// for advanceURLPct).
func (s *Stream) advanceURL(rule int, rs *ruleState, b byte, from, j int64) {
	switch rs.phase {
	case phWatch:
		switch {
		case classURLUser[b]:
		case b == ':':
			rs.phase = phHold
			rs.start = j + 1
		default:
			s.stop(rule)
		}
	case phHold:
		switch {
		case classURLPass[b]:
			switch {
			case j+1-rs.start < holdLimit:
			case rs.seg == 0:
				s.confirm(rule, j+1)
			default:
				s.stop(rule) // no host is that long: the last '@' was
			}
		case b == '@':
			// The userinfo runs to the authority's last '@', as url.Parse
			// and Python's urlsplit read it: a password with a raw '@'
			// goes on past the first one. What follows an '@' (seg 1) is
			// held until the authority ends, and becomes password if
			// another '@' comes first.
			s.addInterval(rs.start, from)
			rs.start, rs.seg = from, 1
		default:
			s.stop(rule)
		}
	case phSuppress:
		if classURLPass[b] {
			s.addInterval(from, j+1)
		} else {
			s.stop(rule)
		}
	}
}

// urlPctState is the escape that the percent-encoded URL rule is reading:
// n bytes of it so far (1 after '%', 2 after its first digit), from from.
type urlPctState struct {
	n    uint8
	hi   byte
	from int64
}

// advanceURLPct feeds byte b of a percent-encoded URL's userinfo to the
// URL rule, decoded: an escape stands for its byte, a byte of
// classURLPctRaw for itself, and any other byte (a '&' or '+' of the
// query, a broken escape) ends the URL.
func (s *Stream) advanceURLPct(rs *ruleState, b byte, j int64) {
	u := &s.urlPct
	switch {
	case u.n == 0 && b == '%':
		u.n, u.from = 1, j
	case u.n == 1 && hexDigits[b] < 16:
		u.n, u.hi = 2, b
	case u.n == 2 && hexDigits[b] < 16:
		u.n = 0
		s.advanceURL(ruleURLPct, rs, hexDigits[u.hi]<<4|hexDigits[b], u.from, j)
	case u.n == 0 && classURLPctRaw[b]:
		s.advanceURL(ruleURLPct, rs, b, j, j)
	default:
		s.stop(ruleURLPct)
	}
}

// urlInert reports whether the URL rule, started by a trigger that ends
// just before p[i], ends within p without redacting anything, as
// advanceURL would run it: the userinfo ends at a byte other than ':', or
// the password candidate after the ':' ends at a byte other than '@' before
// it reaches holdLimit. A '@' answers false even after an empty password,
// which redacts nothing either: the exact scan decides that case.
func urlInert(p []byte, i int) bool {
	for i < len(p) && classURLUser[p[i]] {
		i++
	}
	if i == len(p) {
		return false
	}
	if p[i] != ':' {
		return true
	}
	colon := i
	for i++; i < len(p) && classURLPass[p[i]]; i++ {
		if i-colon >= holdLimit {
			return false // advanceURL would confirm the candidate here
		}
	}
	return i < len(p) && p[i] != '@'
}

// authPhase feeds byte b to the Authorization header matcher once the
// header name has been seen (the scan matches the name itself). The header
// name and scheme are never redacted, and hold nothing back; only the
// credential after the scheme is, held until it is MinSecretLen bytes
// long and redacted as it comes from there.
func (s *Stream) authPhase(b byte, j int64) {
	a := &s.auth
	if a.phase != authCred {
		switch {
		case a.pct == 0 && b == '%':
			a.pct, a.pctStart = 1, j
			return
		case a.pct == 1 && digitVal(b, 16) >= 0:
			a.pct, a.pctHi = 2, b
			return
		case a.pct == 2 && digitVal(b, 16) >= 0:
			a.pct = 0
			a.encoded = true
			s.authByte(byte(digitVal(a.pctHi, 16)<<4|digitVal(b, 16)), a.pctStart, j)
			return
		case a.pct != 0:
			a.pct = 0
			a.phase = authIdle
			return
		case b == '+' && a.phase != authName:
			a.encoded = true
			s.authByte(' ', j, j)
			return
		case a.field && a.valQuote == 0 && a.phase == authScheme && (b == ' ' || b == '\t'):
			// A field's value ends at a raw space: "authorization=bearer
			// user=alice" is a log's field, not a header. A quoted one
			// ends at its quote: authorization="Bearer x", as slog's
			// text handler and logfmt write a value with a space.
			a.phase = authIdle
			return
		}
	}
	s.authByte(b, j, j)
}

// authByte is authPhase for one byte b, decoded from the input [from, to].
func (s *Stream) authByte(b byte, from, to int64) {
	a := &s.auth
	j := to
	switch a.phase {
	case authName:
		// The name as a key: quoted, its quote escaped in a JSON string
		// inside JSON (\"Authorization\":), or a form or query field
		// (authorization=Bearer+x).
		switch {
		case b == ' ' || b == '\t' || b == '\\':
		case (b == '"' || b == '\'') && !a.quote:
			a.quote = true
		case b == ':' || b == '=':
			a.phase = authColon
			a.field = b == '='
		default:
			a.phase = authIdle
		}
	case authColon:
		// The value: quoted, escaped-quoted, or the first of a list, as
		// Go prints an http.Header (map[Authorization:[Bearer x]], and
		// with %#v http.Header{"Authorization":[]string{"Bearer x"}}) and
		// JSON encodes one ({"Authorization":["Bearer x"]}).
		switch {
		case b == '"' || b == '\'':
			if a.valQuote == 0 {
				a.valQuote = b
			}
		case b == ' ' || b == '\t' || b == '[' || b == ']' || b == '{' || b == '\\':
		case isLetter(b):
			a.phase = authScheme
			a.scheme[0] = lower(b)
			a.schemeLen = 1
		default:
			a.phase = authIdle
		}
	case authScheme:
		switch {
		case isLetter(b) && int(a.schemeLen) < len(a.scheme):
			a.scheme[a.schemeLen] = lower(b)
			a.schemeLen++
		case b == '{' && string(a.scheme[:a.schemeLen]) == "string":
			// Go's []string{ of %#v, before the value's quote.
			a.phase = authColon
		case b == ' ' || b == '\t':
			switch string(a.scheme[:a.schemeLen]) {
			case "bearer", "basic", "token":
				a.phase = authSpace
			default:
				a.phase = authIdle
			}
		default:
			a.phase = authIdle
		}
	case authSpace:
		switch {
		case b == ' ' || b == '\t':
		case !classAuthCred[b]:
			// A line break, or a placeholder (<token>, $TOKEN, ${KEY},
			// ***): no credential begins so.
			a.phase = authIdle
		default:
			a.phase = authCred
			a.credStart, a.credLen = from, 1
		}
	case authCred:
		// The credential runs to a space; in a quoted value, or a quoted
		// header, to its closing quote, so that compact JSON keeps the
		// fields after it and a shell line its quote (an escaped
		// quote's backslash goes with the credential: a backslash inside
		// it, as PHP writes \/, is no end); encoded, to the end of the
		// value. It is one only from MinSecretLen bytes on, as a
		// registered secret is: "Authorization: Basic parsing" and
		// "bearer xxx" are words, and are held until they end.
		if classSpace[b] || a.encoded && (b == '&' || b == '"') ||
			a.valQuote != 0 && b == a.valQuote || a.valQuote == 0 && a.nameQuote != 0 && b == a.nameQuote {
			a.phase = authIdle
			return
		}
		switch a.credLen++; {
		case a.credLen == MinSecretLen:
			s.addInterval(a.credStart, j+1)
		case a.credLen > MinSecretLen:
			a.credLen = MinSecretLen
			s.addInterval(j, j+1)
		}
	}
}
