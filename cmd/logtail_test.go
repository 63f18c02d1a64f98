//go:build linux

package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"procmon/internal/proc"
	"procmon/internal/state"
)

// TestSinceJustBeforeTheLastWrite: the kernel stamps a file's mtime with
// its coarse clock, which may be a tick behind the time a process reads,
// so a line written just after the asked time can carry an mtime before
// it. --since must still find that line by the time marks, never answer
// that nothing was written since. (That a time well after the last write
// finds nothing, testscripts/hand_conventions.txtar checks.)
func TestSinceJustBeforeTheLastWrite(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	env := testEnv(stateDir, &bytes.Buffer{}, &bytes.Buffer{})
	const id = "m_since000000000000000000000"
	saveMonitor(t, stateDir, id, state.DefaultRun, "", time.Now().Add(-time.Minute).UnixMilli(), false)
	dir, err := state.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-10 * time.Second)
	early, late := since.Add(-5*time.Second), since.Add(time.Millisecond)
	logPath := filepath.Join(dir.MonitorDir(id), state.LogName)
	if err := os.WriteFile(logPath, []byte("early\nlate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	times, err := dir.CreateTimes(id)
	if err != nil {
		t.Fatal(err)
	}
	times.Write(state.AppendTimeMark(state.AppendTimeMark(nil, early.UnixMilli(), 0), late.UnixMilli(), 6))
	times.Close()
	// The mtime a coarse clock gave the write of "late": before the
	// asked time, by less than the lag the clock allows.
	if err := os.Chtimes(logPath, late, since.Add(-mtimeLag()/2)); err != nil {
		t.Fatal(err)
	}
	m, err := dir.LoadMonitor(id)
	if err != nil {
		t.Fatal(err)
	}
	off, err := sinceOffset(env, dir, &proc.Observation{Monitor: m}, since.Format(time.RFC3339Nano), false)
	if err != nil {
		t.Fatal(err)
	}
	if off != 6 {
		t.Errorf("--since just before the last write starts at offset %d, want 6 (the line written after it)", off)
	}
}

// endedLog makes an ended monitor whose log holds stream, for logs to
// read in process, and returns the env to run commands with.
func endedLog(t *testing.T, stream []byte) (*Env, *bytes.Buffer, string) {
	t.Helper()
	stateDir := filepath.Join(t.TempDir(), "state")
	var out bytes.Buffer
	env := testEnv(stateDir, &out, &bytes.Buffer{})
	if status := Run([]string{"configure", "--enable"}, env); status != 0 {
		t.Fatalf("configure --enable: exit %d", status)
	}
	const id = "m_tail0000000000000000000000"
	saveMonitor(t, stateDir, id, state.DefaultRun, "", time.Now().Add(-time.Minute).UnixMilli(), true)
	dir, err := state.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir.MonitorDir(id), state.LogName), stream, 0o600); err != nil {
		t.Fatal(err)
	}
	return env, &out, id
}

// logsOf runs a logs command line in process and returns its stdout.
func logsOf(t *testing.T, env *Env, out *bytes.Buffer, args ...string) []byte {
	t.Helper()
	out.Reset()
	if status := Run(append([]string{"logs"}, args...), env); status != 0 {
		t.Fatalf("logs %v: exit %d: %s", args, status, out)
	}
	return out.Bytes()
}

// badLines returns lines "Lnn " and n bytes that begin no character, and
// their text (each such byte a U+FFFD).
func badLines(first, last, n int, bad byte) (stream []byte, text string) {
	for i := first; i <= last; i++ {
		head := fmt.Sprintf("L%02d ", i)
		stream = append(append(append(stream, head...), bytes.Repeat([]byte{bad}, n)...), '\n')
		text += head + strings.Repeat("\uFFFD", n) + "\n"
	}
	return stream, text
}

// TestTailCountsText: --tail and --since size what they read and return
// in bytes of text, of which a byte that begins no character takes 3:
// they answer with whole lines to the end of the output.
func TestTailCountsText(t *testing.T) {
	// Three long lines: the last is 30005 bytes of the stream, 90005 of
	// text, more than the 65536 of a plain window.
	var stream []byte
	stream = append(stream, "L1 "...)
	stream = append(stream, bytes.Repeat([]byte{0xff}, 30000)...)
	stream = append(stream, "\nL2 "...)
	stream = append(stream, bytes.Repeat([]byte{0xff}, 30000)...)
	stream = append(stream, "\nL3 "...)
	stream = append(stream, bytes.Repeat([]byte{0xfe}, 30000)...)
	stream = append(stream, " END\n"...)
	all := string([]rune(string(stream)))
	env, out, id := endedLog(t, stream)
	var w logsResponse
	json.Unmarshal(logsOf(t, env, out, id, "--tail", "1", "-o", "json"), &w)
	if want := "L3 " + strings.Repeat("\uFFFD", 30000) + " END\n"; w.Text != want || w.Offset != 60008 || w.NextOffset != w.StreamBytes || len(w.Truncation) != 0 {
		t.Errorf("--tail 1: %d bytes of text [%d, %d) of %d, truncation %v; want the last line whole, [60008, %d)", len(w.Text), w.Offset, w.NextOffset, w.StreamBytes, w.Truncation, len(stream))
	}
	json.Unmarshal(logsOf(t, env, out, id, "--since", "1h", "-o", "json"), &w)
	if w.Text != all || w.Offset != 0 || len(w.Truncation) != 0 {
		t.Errorf("--since before the start: %d bytes of text from %d, truncation %v; want all %d", len(w.Text), w.Offset, w.Truncation, len(all))
	}

	// Fifteen lines of 3005 bytes, 9005 of text: the last 12 (or 10)
	// take more text than the stream holds bytes.
	stream, _ = badLines(1, 15, 3000, 0xff)
	_, last12 := badLines(4, 15, 3000, 0xff)
	_, last10 := badLines(6, 15, 3000, 0xff)
	env, out, id = endedLog(t, stream)
	json.Unmarshal(logsOf(t, env, out, id, "--tail", "12", "-o", "json"), &w)
	if w.Text != last12 {
		t.Errorf("--tail 12: %d lines of text from %d; want the last 12 whole, from %d", strings.Count(w.Text, "\n"), w.Offset, 3*3005)
	}
	if got := string(logsOf(t, env, out, id, "-f", "--tail", "12")); got != last12 {
		t.Errorf("-f --tail 12: %d lines, starting %.4q; want the last 12 whole", strings.Count(got, "\n"), got)
	}
	if got := string(logsOf(t, env, out, id, "-f")); got != last10 {
		t.Errorf("-f: %d lines, starting %.4q; want the last 10 whole", strings.Count(got, "\n"), got)
	}
}

// TestTailPastTheBound: a tail whose text passes the bound of an answer
// (maxTailBytes) still ends where the output does: the answer is its
// last maxTailBytes, and says the window cut it.
func TestTailPastTheBound(t *testing.T) {
	n := maxTailBytes/3 + 1000 // bytes of one line, each U+FFFD
	stream := append(append([]byte("L "), bytes.Repeat([]byte{0xff}, n)...), " END\n"...)
	env, out, id := endedLog(t, stream)
	for _, args := range [][]string{{"--tail", "1"}, {"--since", "1h"}} {
		var w logsResponse
		json.Unmarshal(logsOf(t, env, out, append([]string{id, "-o", "json"}, args...)...), &w)
		if !strings.HasSuffix(w.Text, "\uFFFD END\n") || len(w.Text) > maxTailBytes || w.NextOffset != int64(len(stream)) || strings.Join(w.Truncation, ",") != "window" {
			t.Errorf("%v: %d bytes of text [%d, %d) ending %q, truncation %v; want at most the last %d bytes of text, to the end, cut by the window",
				args, len(w.Text), w.Offset, w.NextOffset, w.Text[max(len(w.Text)-8, 0):], w.Truncation, maxTailBytes)
		}
	}
}

// TestParseSince: --since takes a duration ago, a number of seconds, or
// a time; one too long to hold is all of the output, as a number of
// seconds that large is; anything else is refused naming the field.
func TestParseSince(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for since, want := range map[string]time.Time{
		"90s":                  now.Add(-90 * time.Second),
		"1h30m":                now.Add(-90 * time.Minute),
		"0s":                   now,
		"120":                  now.Add(-2 * time.Minute),
		"2027-01-15T08:00:00Z": time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC),
		"99999999h":            time.Unix(0, 0),
	} {
		got, err := parseSince(now, since)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", since, got, err, want)
		}
	}
	for _, since := range []string{"-5m", "soon", "5 parsecs", "", "1.5", "h", ".m", "1h.s"} {
		if _, err := parseSince(now, since); err == nil || !strings.Contains(err.Error(), "want a duration ago") {
			t.Errorf("parseSince(%q): %v; want the refusal", since, err)
		}
	}
	for _, since := range []string{"1h1h", "30s5m", "30s9999999h"} {
		if _, err := parseSince(now, since); err == nil || !strings.Contains(err.Error(), "units out of order or given twice") {
			t.Errorf("parseSince(%q): %v; want the refusal of its units", since, err)
		}
	}
}

// TestTailOffsetAgreesWithTheWholeText holds tailOffset, which reads the
// stream before its last window as bytes, to the offset that counting
// lines in the text of the whole stream gives: for lines longer and
// shorter than a window and than a chunk, bytes that begin no character,
// a line feed at the end or not, and a character cut off at the end of a
// live log or an ended one.
func TestTailOffsetAgreesWithTheWholeText(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	const id = "m_tailagree00000000000000000"
	saveMonitor(t, stateDir, id, state.DefaultRun, "", time.Now().UnixMilli(), false)
	dir, err := state.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := dir.LoadMonitor(id)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	pieces := []string{"x", "é", "\xff", "\xe2\x82", "€"}
	for round := 0; round < 12; round++ {
		var stream []byte
		for lines := rng.IntN(6); lines >= 0; lines-- {
			// Some lines are longer than the 64 KiB window and the 1 MiB
			// chunk, most are short.
			n := rng.IntN(40)
			if rng.IntN(4) == 0 {
				n = rng.IntN(1 << 20)
			}
			for i := 0; i < n; i++ {
				stream = append(stream, pieces[rng.IntN(len(pieces))]...)
			}
			stream = append(stream, '\n')
		}
		switch rng.IntN(3) {
		case 0:
			stream = stream[:len(stream)-1] // no line feed at the end
		case 1:
			stream = append(stream, 0xe2, 0x82) // a character cut off
		}
		if err := os.WriteFile(filepath.Join(dir.MonitorDir(id), state.LogName), stream, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, final := range []bool{false, true} {
			whole, err := dir.ReadLogWindow(m, nil, textBound(int64(len(stream))), final)
			if err != nil {
				t.Fatal(err)
			}
			text := strings.TrimSuffix(whole.Text, "\n")
			for n := 1; n <= 8; n++ {
				want, seen := int64(0), 0
				for i := len(text) - 1; i >= 0; i-- {
					if text[i] == '\n' {
						if seen++; seen == n {
							want = whole.StreamOffset(i + 1)
							break
						}
					}
				}
				if got, err := tailOffset(dir, m, n, final); err != nil || got != want {
					t.Fatalf("round %d (%d bytes, final %v): --tail %d starts at %d (%v), the whole text says %d", round, len(stream), final, n, got, err, want)
				}
			}
		}
	}
}
