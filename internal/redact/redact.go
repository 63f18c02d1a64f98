package redact

import "fmt"

// Marker replaces every redacted span.
const Marker = "[REDACTED]"

// MinSecretLen is the shortest secret New accepts: a shorter literal would
// shred ordinary text.
const MinSecretLen = 8

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
}

// New compiles the known credentials: every form of every secret, plus the
// format rules. The list may be empty, leaving the format rules only. A
// secret shorter than MinSecretLen is an error whose message names the
// secret's index, never its value; so is a set of secrets with more than
// millions of forms.
func New(secrets []string) (*Redactor, error) {
	return newRedactor(secrets, true)
}

// newRedactor lets tests switch the format rules off, so that the literal
// matcher can be compared with a naive search.
func newRedactor(secrets []string, rules bool) (*Redactor, error) {
	pats, err := needlePatterns(secrets)
	if err != nil {
		return nil, err
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
		if ac, err = buildAutomaton(pats, words, authWindow, ruleGrams); err != nil {
			return nil, err
		}
	}
	return &Redactor{ac: ac, rules: rules, urlFast: rules && ac.isolated(urlTrigger)}, nil
}

// needlePatterns returns the needles of the secrets: every form of each,
// once, in order.
func needlePatterns(secrets []string) ([]pattern, error) {
	seen := make(map[string]bool)
	var pats []pattern
	for i, s := range secrets {
		if len(s) < MinSecretLen {
			return nil, fmt.Errorf("redact: secret %d is shorter than %d bytes", i, MinSecretLen)
		}
		for _, f := range Forms(s) {
			if !seen[f] {
				seen[f] = true
				pats = append(pats, pattern{text: f, needle: true, holding: true})
			}
		}
	}
	return pats, nil
}

// NewStream starts one redacted stream. A Stream is not safe for concurrent
// use; use one per output.
func (r *Redactor) NewStream() *Stream {
	return &Stream{r: r, pendLimit: maxPending}
}

// String redacts a whole string.
func (r *Redactor) String(text string) string {
	s := r.NewStream()
	out := s.Redact(make([]byte, 0, len(text)), []byte(text))
	return string(s.Flush(out))
}
