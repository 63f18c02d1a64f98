package redact

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
)

// wrapLines breaks s into lines of width characters, as base64 -w and
// MIME encoders do, each line ended by brk.
func wrapLines(s string, width int, brk string) string {
	var b strings.Builder
	for len(s) > width {
		b.WriteString(s[:width] + brk)
		s = s[width:]
	}
	b.WriteString(s)
	return b.String()
}

// TestWrappedBase64 is the oracle of the wrap lane: a secret inside a
// longer blob, base64-encoded and wrapped at 76 or 64 characters with
// "\n" or "\r\n", loses exactly the characters of its base64 form, even
// where the form crosses a line break, at any chunking; the line break
// before a form that begins a line stays. A wrapped blob without the
// secret passes byte for byte.
func TestWrappedBase64(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	crossed, lineStart := 0, 0
	for round := 0; round < 300; round++ {
		secret := randomEscSecret(rng, 8+rng.IntN(24))
		r := mustNew(t, secret)
		enc := []*base64.Encoding{base64.StdEncoding, base64.URLEncoding}[rng.IntN(2)]
		width := []int{76, 64}[rng.IntN(2)]
		brk := []string{"\n", "\r\n"}[rng.IntN(2)]
		data := make([]byte, rng.IntN(120)+len(secret)+rng.IntN(60))
		for i := range data {
			data[i] = byte(rng.IntN(256))
		}
		pre := rng.IntN(len(data) - len(secret) + 1)
		if round%5 == 0 && width*3/4+len(secret) <= len(data) {
			pre = width * 3 / 4 // the form begins the second line
		}
		copy(data[pre:], secret)
		blob := enc.EncodeToString(data)

		// The form the blob holds: the characters the secret determines at
		// its alignment, its first k bytes ending a group (alignedBase64).
		k := (3 - pre%3) % 3
		form := base64Forms(secret)[2*k]
		if enc == base64.URLEncoding {
			form = base64Forms(secret)[2*k+1]
		}
		at := strings.Index(blob, form)
		if at < 0 || strings.LastIndex(blob, form) != at {
			t.Fatalf("round %d: the form is not once in the blob", round)
		}
		// Where the form's first and last characters land in the wrapped
		// text.
		raw := func(i int) int { return i + i/width*len(brk) }
		start, end := raw(at), raw(at+len(form)-1)+1
		if at/width != (at+len(form)-1)/width {
			crossed++
		}
		if at%width == 0 {
			lineStart++
		}
		wrapped := wrapLines(blob, width, brk)
		head := "2024-05-01 INFO config dump:" + brk
		in := []byte(head + wrapped + brk + "done" + brk)
		want := head + wrapped[:start] + Marker + wrapped[end:] + brk + "done" + brk
		hide := append(Forms(secret), wrapped[start:end])
		if out := checkChunkings(t, r, hide, in, rng); string(out) != want {
			t.Fatalf("round %d, width %d, break %q:\n got  %q\n want %q", round, width, brk, masked(hide, out), masked(hide, []byte(want)))
		}

		clean := make([]byte, len(data))
		for i := range clean {
			clean[i] = byte(rng.IntN(256))
		}
		in = []byte(head + wrapLines(enc.EncodeToString(clean), width, brk) + brk)
		if out := checkChunkings(t, r, hide, in, rng); !bytes.Equal(out, in) {
			t.Fatalf("round %d: a blob without the secret changed:\n got  %q\n want %q", round, out, in)
		}
	}
	// The test means nothing unless many forms cross a line break.
	if crossed < 50 || lineStart < 20 {
		t.Fatalf("of 300 forms, only %d crossed a line break and %d began a line", crossed, lineStart)
	}
}

// TestWrapHoldsOnlyAfterBase64Lines: a line break counts as nothing only
// after 64 base64 characters, so an ordinary line is released whole at
// its line break even when it ends in the beginning of a base64 form (a
// service that prints its address and waits is seen to print it), while a
// long base64 line that ends so is held with its break until the next
// line tells.
func TestWrapHoldsOnlyAfterBase64Lines(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	for round := 0; round < 200; round++ {
		secret := randomSecret(rng, 8+rng.IntN(24))
		r := mustNew(t, secret)
		form := base64Forms(secret)[0]
		begin := form[:2+rng.IntN(4)]
		for _, c := range []struct {
			line string
			held bool
		}{
			{"listening on http://localhost:" + begin + "\n", false},
			{strings.Repeat("QUJD", 18) + " " + begin + "\n", false},
			{strings.Repeat("QUJD", 16) + begin + "\n", true},
			{strings.Repeat("QUJD", 19) + begin + "\r\n", true},
		} {
			s := r.NewStream()
			out := s.Redact(nil, []byte(c.line))
			if c.held && s.Held() < len(begin)+1 || !c.held && s.Held() != 0 {
				t.Fatalf("secret %q: %q: released %q, held %d bytes", secret, c.line, out, s.Held())
			}
		}
	}
}

// TestWrapTailAtEndOfStream: at the end of a stream, a line break after
// a long base64 line stands for nothing, so it does not count toward the
// three bytes of a held tail that Flush redacts: one or two characters
// that begin a base64 form are released with the break, as they are
// without it; three or more are redacted, as a needle's prefix is.
func TestWrapTailAtEndOfStream(t *testing.T) {
	const secret = "hunter2hunter2"
	r := mustNew(t, secret)
	form := base64Forms(secret)[0] // aHVudGVy...
	line := strings.Repeat("QUJD", 16)
	for _, c := range []struct {
		in, want string
	}{
		{line + form[:1] + "\r\n", line + form[:1] + "\r\n"},
		{line + form[:2] + "\n", line + form[:2] + "\n"},
		{line + form[:2] + "\r\n", line + form[:2] + "\r\n"},
		{line + "\n", line + "\n"},
		{line + form[:4] + "\n", line + Marker},
	} {
		if got := r.String(c.in); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
		checkChunkings(t, r, []string{secret}, []byte(c.in), rand.New(rand.NewPCG(1, 2)))
	}
}
