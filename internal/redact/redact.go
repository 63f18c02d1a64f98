package redact

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Marker replaces every redacted span.
const Marker = "[REDACTED]"

// MinSecretLen is the shortest secret New accepts: a shorter literal would
// shred ordinary text.
const MinSecretLen = 8

// Compiling secrets takes memory and time in proportion to their forms
// (the needles): about 150 bytes and 0.5 µs for each byte of the needles,
// and about 3 KB and 60 µs more for each needle (measured on a 2-core
// machine). A plain secret has some ten times its length in needles, one
// whose characters escapings change (quotes, backslashes, <, >, &,
// control characters, non-ASCII) up to 135 times, and a request may hold
// 4 MiB. So New compiles a bounded set, which callers check first with
// Compilable: at most MaxSecretsLen bytes of distinct secrets, whose
// needles come to at most maxNeedleBytes bytes and maxNeedles needles.
// The worst shapes found within them, near both needle bounds at once,
// took about 450 MB and 1.6 to 3.8 s (one secret of escaped characters
// with copies of its start; 391 short ones of escaped and non-ASCII
// characters); 64 KiB of PEM key, 1.3 MB of needles, took 180 MB and
// 0.8 s. The largest real credentials are far inside (an RSA-4096 key is
// 3.2 KB).
const (
	MaxSecretsLen  = 64 << 10
	maxNeedleBytes = 2 << 20
	maxNeedles     = 16 << 10
)

// errTooMuchSecret is New's refusal of a set past the bounds.
var errTooMuchSecret = errors.New("redact: the secrets are more than one redactor compiles")

// Compilable reports whether New compiles secrets within its bounds. It
// makes their needles but compiles nothing, a small part of New's work;
// its answer tells no more of the secrets than their lengths and how many
// of their characters escapings change.
func Compilable(secrets []string) bool {
	secrets = distinct(secrets)
	if totalLen(secrets) > MaxSecretsLen {
		return false
	}
	_, err := needlePatterns(secrets, true)
	return err == nil
}

func totalLen(secrets []string) int {
	n := 0
	for _, s := range secrets {
		n += len(s)
	}
	return n
}

// distinct returns the secrets, each once, in their first order: a
// secret given twice, or given and also the value of a variable, is
// compiled once.
func distinct(secrets []string) []string {
	seen := make(map[string]bool, len(secrets))
	out := make([]string, 0, len(secrets))
	for _, s := range secrets {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Redactor is the compiled set of credentials. It is immutable, so one
// Redactor may serve many streams concurrently.
type Redactor struct {
	ac    *automaton
	rules bool
	// urlFast lets the skip pass over a URL whose userinfo ends without a
	// password: it holds when "://" leaves the automaton at its root.
	urlFast bool
	// exact disables the skip, so tests can check that skipping never
	// changes the output.
	exact bool
	// lanes are the escaping families the stream decodes (lane.go);
	// ringLen is the length of their position rings, a power of two above
	// the longest pattern.
	lanes   []laneSpec
	ringLen int
	// intro has, for each byte, a bit for each lane the byte may detach.
	intro [256]uint8
}

// New compiles the known credentials: every form of every secret, plus the
// format rules. The list may be empty, leaving the format rules only. A
// secret shorter than MinSecretLen is an error whose message names the
// secret's index, never its value; so is a set past the bounds of
// Compilable.
func New(secrets []string) (*Redactor, error) {
	return newRedactor(secrets, true, true)
}

// newRedactor lets tests switch the format rules and the lanes off, so
// that the literal matcher can be compared with a naive search.
func newRedactor(secrets []string, rules, escapes bool) (*Redactor, error) {
	for i, s := range secrets {
		if len(s) < MinSecretLen {
			return nil, fmt.Errorf("redact: secret %d is shorter than %d bytes", i, MinSecretLen)
		}
	}
	secrets = distinct(secrets)
	if totalLen(secrets) > MaxSecretsLen {
		return nil, errTooMuchSecret
	}
	pats, err := needlePatterns(secrets, escapes)
	if err != nil {
		return nil, err
	}
	var lanes []laneSpec
	if escapes {
		lanes = lanesFor(secrets)
	}
	var ac *automaton
	if rules && len(pats) == 0 {
		ac = builtinAutomaton() // see builtin.go
	} else {
		var words []string
		var ruleGrams *[1 << 16]uint8
		if rules {
			pats = append(pats, rulePatterns()...)
			words = authVariants()
			ruleGrams = &builtinRuleGrams
		}
		if ac, err = buildAutomaton(pats, words, authWindow, ruleGrams, lanes); err != nil {
			return nil, err
		}
	}
	r := &Redactor{ac: ac, rules: rules, urlFast: rules && ac.isolated(urlTrigger), lanes: lanes}
	longest := 0
	for _, p := range pats {
		longest = max(longest, len(p.text))
	}
	for r.ringLen = 16; r.ringLen <= longest; r.ringLen *= 2 {
	}
	for i := range lanes {
		for b, on := range lanes[i].intro {
			if on {
				r.intro[b] |= 1 << i
			}
		}
	}
	return r, nil
}

// lanesFor returns the lanes a set of secrets needs: none without secrets.
func lanesFor(secrets []string) []laneSpec {
	var out []laneSpec
	if len(secrets) == 0 {
		return nil
	}
	for _, f := range families {
		if !f.needed(secrets) {
			continue
		}
		kind := laneEscape
		if f.run != nil {
			kind = laneSpace
		}
		ls := laneSpec{fam: f, kind: kind, intro: f.introducers()}
		for b := range ls.first {
			ls.first[b] = f.starting(byte(b))
		}
		for i, e := range f.escapes {
			for b := range ls.second {
				second := len(e.prefix) == 1 || e.prefix[1] == byte(b)
				if e.ident != nil && len(e.prefix) == 1 {
					second = e.ident[b]
				}
				if second {
					ls.second[b] |= 1 << i
				}
			}
			if len(e.prefix) == 1 && e.base == 0 && e.ident == nil {
				ls.oneByte |= 1 << i
			}
		}
		out = append(out, ls)
	}
	return out
}

// needlePatterns returns the needles of the secrets: every form of each,
// once, in order. Every form is marked for the escape lanes, which find it
// in any spelling, so that an escaping nested in another is found too.
// A base64 form is marked for the percent lanes and the wrap lane, which
// reports nothing else, and for the escape lanes only when it holds a
// character other than a letter or digit (the forms are unpadded): writers
// escape those ('+' is &#43; in html/template's text and \u002b in its
// scripts, '/' is \/ in JSON) and no writer escapes a letter or digit but
// percent-encoding. Marking every base64 form cost the 200-secret bench
// 10%; these cost it 2%.
// The collapsed form of a secret with whitespace inside is marked for
// the whitespace lane (with lanes only: it is a whitespace spelling of
// the secret as it stands, too). Past maxNeedleBytes or maxNeedles it
// stops, with errTooMuchSecret.
func needlePatterns(secrets []string, lanes bool) ([]pattern, error) {
	seen := make(map[string]int)
	var pats []pattern
	size := 0 // of the needles' texts
	add := func(f string, esc, pct, space bool) {
		k, ok := seen[f]
		if !ok {
			k = len(pats)
			seen[f] = k
			pats = append(pats, pattern{text: f, needle: true, holding: true})
			size += len(f)
		}
		pats[k].esc = pats[k].esc || esc
		pats[k].pct = pats[k].pct || pct
		pats[k].space = pats[k].space || space
	}
	for _, s := range secrets {
		if size > maxNeedleBytes || len(pats) > maxNeedles {
			return nil, errTooMuchSecret
		}
		b64 := base64Forms(s)
		for _, f := range Forms(s) {
			if slices.Contains(b64, f) {
				add(f, strings.ContainsAny(f, "+/-_"), true, false)
			} else {
				add(f, true, false, false)
			}
		}
		if c := collapsedForm(s); c != "" && lanes {
			add(c, false, false, true)
		}
	}
	if size > maxNeedleBytes || len(pats) > maxNeedles {
		return nil, errTooMuchSecret
	}
	return pats, nil
}

// NewStream starts one redacted stream. A Stream is not safe for concurrent
// use; use one per output.
func (r *Redactor) NewStream() *Stream {
	return &Stream{r: r, pendLimit: maxPending, lanes: newLanes(r.lanes)}
}

// String redacts a whole string.
func (r *Redactor) String(text string) string {
	s := r.NewStream()
	out := s.Redact(make([]byte, 0, len(text)), []byte(text))
	return string(s.Flush(out))
}
