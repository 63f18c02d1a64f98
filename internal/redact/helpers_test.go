package redact

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// feedSizes redacts in through one stream, cutting it into chunks whose
// sizes come from next (a size of 0 is an empty write).
func feedSizes(r *Redactor, in []byte, next func() int) []byte {
	s := r.NewStream()
	var out []byte
	for len(in) > 0 {
		n := min(next(), len(in))
		if n == 0 {
			// An empty write, then at least one byte so the loop ends.
			out = s.Redact(out, in[:0])
			n = 1
		}
		out = s.Redact(out, in[:n])
		in = in[n:]
	}
	return s.Flush(out)
}

// feedCuts redacts in with a write boundary at each of the given offsets.
func feedCuts(r *Redactor, in []byte, cuts ...int) []byte {
	s := r.NewStream()
	var out []byte
	prev := 0
	for _, c := range cuts {
		out = s.Redact(out, in[prev:c])
		prev = c
	}
	out = s.Redact(out, in[prev:])
	return s.Flush(out)
}

func oneByte(r *Redactor, in []byte) []byte {
	return feedSizes(r, in, func() int { return 1 })
}

// oracle redacts in the slow, obvious way, for a redactor without format
// rules: every occurrence of every needle, plus a final tail of three or
// more bytes that is a prefix of a needle; overlapping and touching spans
// become one marker.
func oracle(needles []string, in []byte) []byte {
	var ivs []interval
	for _, nd := range needles {
		for i := 0; ; {
			k := bytes.Index(in[i:], []byte(nd))
			if k < 0 {
				break
			}
			ivs = append(ivs, interval{int64(i + k), int64(i + k + len(nd))})
			i += k + 1
		}
	}
	tail := 0
	for _, nd := range needles {
		for l := min(len(nd), len(in)); l > tail; l-- {
			if bytes.HasSuffix(in, []byte(nd[:l])) {
				tail = l
				break
			}
		}
	}
	if tail >= 3 {
		ivs = append(ivs, interval{int64(len(in) - tail), int64(len(in))})
	}
	return maskIntervals(in, ivs)
}

// maskIntervals replaces each run of overlapping or adjacent intervals of
// in with one marker: what the reference implementations redact.
func maskIntervals(in []byte, ivs []interval) []byte {
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].s < ivs[j].s })
	var out []byte
	pos := int64(0)
	for k := 0; k < len(ivs); {
		a, e := ivs[k].s, ivs[k].e
		for k++; k < len(ivs) && ivs[k].s <= e; k++ {
			e = max(e, ivs[k].e)
		}
		out = append(out, in[pos:a]...)
		out = append(out, Marker...)
		pos = e
	}
	return append(out, in[pos:]...)
}

// allNeedles lists the forms of every secret.
func allNeedles(secrets []string) []string {
	var n []string
	for _, s := range secrets {
		n = append(n, Forms(s)...)
	}
	return n
}

// masked rewrites text for a failure message so that a leaked secret shows
// up as <needle> instead of being printed.
func masked(needles []string, text []byte) string {
	s := string(text)
	sorted := append([]string(nil), needles...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	for _, n := range sorted {
		s = strings.ReplaceAll(s, n, "<needle>")
	}
	if len(s) > 300 {
		s = s[:300] + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return fmt.Sprintf("%q", s)
}

// checkSame fails unless got equals want, printing both masked.
func checkSame(t *testing.T, needles []string, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s:\n got  %s\n want %s", what, masked(needles, got), masked(needles, want))
	}
}

// checkNoLeak fails if any needle appears in out.
func checkNoLeak(t *testing.T, needles []string, what string, out []byte) {
	t.Helper()
	for i, n := range needles {
		if bytes.Contains(out, []byte(n)) {
			t.Fatalf("%s: needle %d (%d bytes) leaked: %s", what, i, len(n), masked(needles, out))
		}
	}
}

// randomSecret returns a random alphanumeric secret of n bytes.
func randomSecret(rng *rand.Rand, n int) string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[rng.IntN(len(alnum))]
	}
	return string(b)
}
