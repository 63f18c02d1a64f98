package proc

import (
	"math"
	"math/rand/v2"
	"testing"

	"procmon/internal/logtext"
)

// TestExecWindowIsTheLogText checks that the window of an exec result is
// the text of the stream's end as logs shows it (package logtext), for
// streams holding bytes that are not UTF-8, fed in random pieces through
// the tail's bounded buffer.
func TestExecWindowIsTheLogText(t *testing.T) {
	pieces := []string{"a", "\n", "é", "中", "🙂", "\xff", "\x80", "\xe4\xb8", "\xf0\x9f\x99"}
	rng := rand.New(rand.NewPCG(9, 10))
	for range 500 {
		var stream []byte
		for range rng.IntN(3000) {
			stream = append(stream, pieces[rng.IntN(len(pieces))]...)
		}
		maxBytes := int64(4 + rng.IntN(40))
		tail := &outputTail{keep: maxBytes + logtext.Margin}
		for rest := stream; len(rest) > 0; {
			n := 1 + rng.IntN(len(rest))
			tail.add(rest[:n])
			rest = rest[n:]
		}
		var res ExecResult
		tail.window(&res, maxBytes)
		want := logtext.Last(logtext.Held{Bytes: stream, Size: int64(len(stream)), Ended: true}, maxBytes)
		if res.Text != string(want.Text) || res.Window != want.Cut || res.OutputBytes != len(want.Text) || res.StreamBytes != int64(len(stream)) {
			t.Fatalf("%q, %d bytes: exec shows %q (window %v); logs shows %q (window %v)", stream, maxBytes, res.Text, res.Window, want.Text, want.Cut)
		}
	}
}

// TestExecWindowHugeMaxBytes: an exec asked for up to the largest int64
// bytes of text keeps and returns all of its output.
func TestExecWindowHugeMaxBytes(t *testing.T) {
	for _, maxBytes := range []int64{math.MaxInt64, math.MaxInt64 - logtext.Margin + 1} {
		tail := &outputTail{keep: logtext.Span(maxBytes)}
		tail.add([]byte("abc"))
		var res ExecResult
		tail.window(&res, maxBytes)
		if res.Text != "abc" || res.Window || res.StreamBytes != 3 {
			t.Errorf("max_bytes %d: %q (window %v, %d stream bytes); want \"abc\" whole", maxBytes, res.Text, res.Window, res.StreamBytes)
		}
	}
}
