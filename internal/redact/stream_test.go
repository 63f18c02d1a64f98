package redact

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

func mustNew(t testing.TB, secrets ...string) *Redactor {
	t.Helper()
	r, err := New(secrets)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNewRejectsShortSecret(t *testing.T) {
	const short = "s3cr3t!"
	_, err := New([]string{"long-enough-secret", short})
	if err == nil {
		t.Fatal("New accepted a 7-byte secret")
	}
	if strings.Contains(err.Error(), short) {
		t.Fatal("the error message contains the secret")
	}
	if !strings.Contains(err.Error(), "secret 1") {
		t.Fatalf("the error does not name the index: %v", err)
	}
	if _, err := New([]string{"exactly8"}); err != nil {
		t.Fatalf("New rejected an 8-byte secret: %v", err)
	}
	if _, err := New(nil); err != nil {
		t.Fatalf("New rejected an empty list: %v", err)
	}
}

func TestRedactsSecretAtEveryOffsetAndSplit(t *testing.T) {
	const secret = "p4ss-W0rd-xyz"
	r := mustNew(t, secret)
	needles := allNeedles([]string{secret})
	for _, pre := range []string{"", "a", "ab", "abc", "user=", "p4ss-W0rd-", "p4ss-W0rd-xy"} {
		for _, post := range []string{"", "z", " end\n", "p4ss"} {
			in := []byte(pre + secret + post)
			want := []byte(r.String(string(in)))
			checkNoLeak(t, needles, "whole", want)
			if !bytes.Contains(want, []byte(Marker)) {
				t.Fatalf("no marker for %s", masked(needles, in))
			}
			for cut := 0; cut <= len(in); cut++ {
				checkSame(t, needles, "split", feedCuts(r, in, cut), want)
			}
			for c1 := 0; c1 <= len(in); c1 += 3 {
				for c2 := c1; c2 <= len(in); c2++ {
					checkSame(t, needles, "two splits", feedCuts(r, in, c1, c2), want)
				}
			}
			checkSame(t, needles, "one-byte writes", oneByte(r, in), want)
		}
	}
	if got := r.String("user=" + secret + " end"); got != "user="+Marker+" end" {
		t.Fatalf("got %s", masked(needles, []byte(got)))
	}
}

func TestSelfOverlappingSecrets(t *testing.T) {
	cases := []struct {
		secret string
		chunks []string
		want   string
	}{
		// The classic leak: a masker that restarts at the write boundary
		// after "1212" never sees "1212345678" start at the second "12".
		{"1212345678", []string{"xx1212", "12345678yy"}, "xx12" + Marker + "yy"},
		{"1212345678", []string{"1", "2", "1", "2", "1", "2345678"}, "12" + Marker},
		{"aaaaaaab", []string{"aaaa", "aaaa", "aaab"}, "aaaa" + Marker},
		{"aaaaaaab", []string{"a", "a", "a", "a", "a", "a", "a", "a", "a", "b!"}, "aa" + Marker + "!"},
		{"abcabcabd", []string{"abcab", "cabcab", "d."}, "abc" + Marker + "."},
	}
	for _, c := range cases {
		r := mustNew(t, c.secret)
		s := r.NewStream()
		var out []byte
		for _, ch := range c.chunks {
			out = s.Redact(out, []byte(ch))
		}
		out = s.Flush(out)
		needles := Forms(c.secret)
		checkSame(t, needles, "chunked", out, []byte(c.want))
		checkSame(t, needles, "whole", []byte(r.String(strings.Join(c.chunks, ""))), []byte(c.want))
	}
	// Runs of 'a' of every length around the secret, fed one byte at a time.
	r := mustNew(t, "aaaaaaab")
	for n := 0; n < 20; n++ {
		in := strings.Repeat("a", n) + "aaaaaaab" + strings.Repeat("a", n%3)
		want := strings.Repeat("a", n) + Marker + strings.Repeat("a", n%3)
		checkSame(t, Forms("aaaaaaab"), "runs", oneByte(r, []byte(in)), []byte(want))
	}
}

func TestOverlappingAndAdjacentMatchesMerge(t *testing.T) {
	secrets := []string{"abcdefghij", "ghijklmnop", "QRSTUVWXYZ", "s3cr3t-key:"}
	r := mustNew(t, secrets...)
	needles := allNeedles(secrets)
	cases := map[string]string{
		"<abcdefghijklmnop>":             "<" + Marker + ">", // overlapping
		"<abcdefghijQRSTUVWXYZ>":         "<" + Marker + ">", // adjacent
		"<abcdefghij QRSTUVWXYZ>":        "<" + Marker + " " + Marker + ">",
		"<abcdefghijklmnopQRSTUVWXYZ>":   "<" + Marker + ">",
		"abcdefghijabcdefghij":           Marker,
		"s3cr3t-key:ghp_" + ghTok + "!":  Marker + "!", // needle touching a token
		"<abcdefghijklmnop>QRSTUVWXYZ\n": "<" + Marker + ">" + Marker + "\n",
	}
	for in, want := range cases {
		checkSame(t, needles, "whole", []byte(r.String(in)), []byte(want))
		checkSame(t, needles, "one-byte", oneByte(r, []byte(in)), []byte(want))
	}
}

func TestMultiLineSecret(t *testing.T) {
	secret := "first-line-of-it\nsecond-line-here\nthird-line-too\n"
	r := mustNew(t, secret)
	needles := allNeedles([]string{secret})
	body := strings.TrimSuffix(secret, "\n")
	for _, in := range []string{
		"x " + secret + "y",
		"x " + strings.ReplaceAll(body, "\n", "\r\n") + " y",
		"x " + strings.ReplaceAll(body, "\n", " ") + " y",
		"x " + strings.ReplaceAll(body, "\n", "\t") + " y",
		// Without separators the lines are adjacent matches: one marker.
		"x " + strings.ReplaceAll(body, "\n", "") + " y",
	} {
		want := "x " + Marker + " y"
		if strings.HasSuffix(in, "\ny") {
			want = "x " + Marker + "y"
		}
		checkSame(t, needles, "joined", []byte(r.String(in)), []byte(want))
	}
	// Each line on its own, as a service printing one line per record would.
	for _, line := range strings.Split(body, "\n") {
		checkSame(t, needles, "line", []byte(r.String("> "+line+" <")), []byte("> "+Marker+" <"))
	}
	// Lines shorter than MinSecretLen are not needles.
	r2 := mustNew(t, "short\nlines\nonly-here")
	if got := r2.String("short and lines"); got != "short and lines" {
		t.Fatal("a short line was redacted")
	}
	if got := r2.String("short lines only-here"); got != Marker {
		t.Fatal("the space-joined form was not redacted")
	}
}

func TestEOFTail(t *testing.T) {
	r := mustNew(t, "correct-horse-battery")
	needles := Forms("correct-horse-battery")
	cases := map[string]string{
		"log: corr":                 "log: " + Marker, // 4 bytes of a needle prefix
		"log: cor":                  "log: " + Marker,
		"log: co":                   "log: co", // 2 bytes are released
		"log: c":                    "log: c",
		"log: correct-horse-batter": "log: " + Marker,
		"log: ghp":                  "log: ghp",  // a trigger's prefix holds no secret
		"log: ghp_":                 "log: ghp_", // nor does the whole trigger
		"log: gh":                   "log: gh",
		"cloned o/r.git":            "cloned o/r.git",
		"-----END CERTIFICATE-----": "-----END CERTIFICATE-----",
		"log: ghp_a":                "log: " + Marker, // a token begun
		"log: ghp_abc":              "log: " + Marker, // a partial token
		"log: ghp_abc\n":            "log: ghp_abc\n",
		"log: correct\n":            "log: correct\n",
	}
	for in, want := range cases {
		checkSame(t, needles, "whole", []byte(r.String(in)), []byte(want))
		checkSame(t, needles, "one-byte", oneByte(r, []byte(in)), []byte(want))
	}
}

func TestHeldIsBounded(t *testing.T) {
	r := mustNew(t, "a-registered-secret-value")
	bound := holdLimit + 64
	for _, start := range []string{"", "eyJ", "https://user:", "ghp_", "-----BEGIN RSA PRIVATE KEY-----\n"} {
		s := r.NewStream()
		chunk := bytes.Repeat([]byte("abcdefgh"), 512)
		var out []byte
		out = s.Redact(out, []byte(start))
		for i := 0; i < 256; i++ { // 1 MiB on one line
			out = s.Redact(out[:0], chunk)
			if s.Held() > bound {
				t.Fatalf("after %q: %d bytes held", start, s.Held())
			}
		}
		if cap(s.hold) > 2*bound+len(chunk) {
			t.Fatalf("after %q: hold buffer grew to %d", start, cap(s.hold))
		}
		s.Flush(nil)
	}
	// A JWT-looking run that never ends is redacted once it passes the limit.
	in := "x eyJ" + strings.Repeat("a", 3*holdLimit) + " y"
	if got := r.String(in); got != "x "+Marker+" y" {
		t.Fatalf("long JWT run: %q", got[:min(len(got), 40)])
	}
	if got := string(oneByte(r, []byte(in))); got != "x "+Marker+" y" {
		t.Fatalf("long JWT run, one-byte writes: %q", got[:min(len(got), 40)])
	}
}

// TestLinearTime checks the automaton's work per byte on the input that
// makes a naive matcher quadratic: a long run of 'a' against a needle of
// many 'a' and a final 'b'. Failure-link hops must not exceed the bytes fed.
func TestLinearTime(t *testing.T) {
	needle := strings.Repeat("a", 1000) + "b"
	r := mustNew(t, needle)
	in := bytes.Repeat([]byte("a"), 1<<20)
	for _, chunk := range []int{1 << 20, 4096, 7} {
		s := r.NewStream()
		var out []byte
		for i := 0; i < len(in); i += chunk {
			out = s.Redact(out, in[i:min(i+chunk, len(in))])
		}
		hops := s.hops
		out = s.Flush(out)
		if hops > int64(len(in)) {
			t.Fatalf("chunk %d: %d failure hops for %d bytes", chunk, hops, len(in))
		}
		// The last 1000 bytes are a needle prefix at the end of the stream.
		want := append(bytes.Repeat([]byte("a"), len(in)-1000), Marker...)
		if !bytes.Equal(out, want) {
			t.Fatalf("chunk %d: wrong output (%d bytes)", chunk, len(out))
		}
	}
	// A needle that is all one byte matches at every position and still
	// merges into one marker.
	r = mustNew(t, strings.Repeat("a", 500))
	if got := r.String("x" + strings.Repeat("a", 1<<16) + "y"); got != "x"+Marker+"y" {
		t.Fatalf("run of matches: %q", got[:min(len(got), 40)])
	}
}

func TestAgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 300; round++ {
		// Few letters so that needles overlap, repeat and straddle.
		alpha := "ab"[:1+rng.IntN(2)] + "cd\n"[:rng.IntN(4)]
		var secrets []string
		for k := 1 + rng.IntN(4); k > 0; k-- {
			b := make([]byte, 8+rng.IntN(8))
			for i := range b {
				b[i] = alpha[rng.IntN(len(alpha))]
			}
			secrets = append(secrets, string(b))
		}
		r, err := newRedactor(secrets, false, false)
		if err != nil {
			t.Fatal(err)
		}
		needles := allNeedles(secrets)
		for k := 0; k < 10; k++ {
			in := make([]byte, rng.IntN(200))
			for i := range in {
				in[i] = alpha[rng.IntN(len(alpha))]
			}
			if rng.IntN(2) == 0 && len(in) > 0 {
				at := rng.IntN(len(in))
				in = append(in[:at], append([]byte(secrets[rng.IntN(len(secrets))]), in[at:]...)...)
			}
			want := oracle(needles, in)
			checkSame(t, needles, "whole", []byte(r.String(string(in))), want)
			checkSame(t, needles, "one-byte", oneByte(r, in), want)
			checkSame(t, needles, "random chunks", feedSizes(r, in, func() int { return rng.IntN(9) }), want)
		}
	}
}

func TestRedactorIsSharedAcrossStreams(t *testing.T) {
	r := mustNew(t, "shared-secret-value")
	in := []byte(strings.Repeat("line with shared-secret-value and ghp_"+ghTok+"\n", 200))
	want := r.String(string(in))
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(chunk int) {
			defer wg.Done()
			got := feedSizes(r, in, func() int { return chunk })
			if string(got) != want {
				t.Errorf("chunk %d: output differs", chunk)
			}
		}(g*13 + 1)
	}
	wg.Wait()
}

func TestStreamAfterFlush(t *testing.T) {
	r := mustNew(t, "some-secret-value")
	s := r.NewStream()
	out := s.Flush(s.Redact(nil, []byte("abc some-secret-value")))
	checkSame(t, Forms("some-secret-value"), "first stream", out, []byte("abc "+Marker))
	if got := s.Redact(nil, []byte("more")); len(got) != 0 {
		t.Fatalf("Redact after Flush appended %d bytes", len(got))
	}
	if got := s.Flush(nil); len(got) != 0 || s.Held() != 0 {
		t.Fatalf("second Flush appended %d bytes", len(got))
	}
}

// TestTableSize logs the table size for 40 secrets so regressions are
// visible, and keeps it to a few MiB. At the time of writing it was about
// 320 KiB, about 180 KiB of which are the skip filters; a registered
// RSA-2048 private key in PEM form adds about 420 KiB.
func TestTableSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var secrets []string
	for i := 0; i < 40; i++ {
		secrets = append(secrets, randomSecret(rng, 24+rng.IntN(17)))
	}
	r := mustNew(t, secrets...)
	size := r.ac.size()
	t.Logf("40 secrets: %d states, %d dense rows, about %d KiB of tables", len(r.ac.states), len(r.ac.rows)/256, size>>10)
	if size > 4<<20 {
		t.Fatalf("tables take %d bytes", size)
	}
}

// TestSkipNeverChangesOutput compares the skipping stream with the exact
// byte-by-byte scan on log text salted with credentials, rule triggers and
// near misses, at several write sizes.
func TestSkipNeverChangesOutput(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var secrets []string
	for i := 0; i < 30; i++ {
		secrets = append(secrets, randomSecret(rng, 8+rng.IntN(30)))
	}
	needles := allNeedles(secrets)
	salt := []string{"://", "https://u:pw@h/", "http://host:80/", "Authorization: Bearer x ",
		"AUTHORIZATION:basic y", "authoriz", "eyJ", "eyJab.eyJcd.efgh ", "ghp_", "ghp_" + ghTok,
		"AKIAIOSFODNN7EXAMPLE", "-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----",
		"sk-ant-", "xoxb-1234567890", "key ", "iz", "za", "Authorization%3A%20Bearer%20x&y ", "authorization%3a+basic+",
		`https:\/\/u:pw@h\/`, `:\/\/`, "%2", "\\u00", "&#x"}
	for round := 0; round < 40; round++ {
		text := logText(2000 + rng.IntN(3000))
		var in []byte
		for len(text) > 0 {
			n := min(len(text), rng.IntN(60))
			in = append(in, text[:n]...)
			text = text[n:]
			switch rng.IntN(4) {
			case 0:
				in = append(in, salt[rng.IntN(len(salt))]...)
			case 1:
				nd := needles[rng.IntN(len(needles))]
				in = append(in, nd[:rng.IntN(len(nd)+1)]...)
			}
		}
		for _, rules := range []bool{true, false} {
			r, err := newRedactor(secrets, rules, rules)
			if err != nil {
				t.Fatal(err)
			}
			exact := *r
			exact.exact = true
			want := []byte(exact.String(string(in)))
			checkSame(t, needles, "whole", []byte(r.String(string(in))), want)
			for _, size := range []int{4096, 61, 9} {
				checkSame(t, needles, "chunks", feedSizes(r, in, func() int { return size }), want)
			}
			if !rules {
				checkSame(t, needles, "oracle", want, oracle(needles, in))
			}
		}
	}
}

// TestManySpansBehindHeldCandidate queues hundreds of needle matches behind
// a rule candidate that holds them back, whichever way it ends.
func TestManySpansBehindHeldCandidate(t *testing.T) {
	const secret = "abcdefgh"
	r := mustNew(t, secret)
	needles := Forms(secret)
	many := func(sep string, n int) string { return strings.Repeat(secret+sep, n) }
	cases := map[string]string{
		// The JWT candidate fails at the space: every match stands alone.
		"eyJ" + many("-", 300) + " end": "eyJ" + strings.Repeat(Marker+"-", 300) + " end",
		// It reaches holdLimit and swallows them all.
		"eyJ" + many("-", 600) + " end": Marker + " end",
		// A URL password made of matches, confirmed by its '@'.
		"https://u:" + many("!", 300) + "@h": "https://u:" + Marker + "@h",
		// The same without '@': the password is released, the matches not.
		"https://u:" + many("!", 300) + "/h": "https://u:" + strings.Repeat(Marker+"!", 300) + "/h",
	}
	for in, want := range cases {
		checkSame(t, needles, "whole", []byte(r.String(in)), []byte(want))
		checkSame(t, needles, "one-byte", oneByte(r, []byte(in)), []byte(want))
		checkSame(t, needles, "chunks", feedSizes(r, []byte(in), func() int { return 100 }), []byte(want))
	}
}
