package proc

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"procmon/internal/ids"
	"procmon/internal/redact"
	"procmon/internal/state"
)

func newTestCopier(t *testing.T, limit *int64) *outputCopier {
	t.Helper()
	o, _, _ := newTestCopierIn(t, limit)
	return o
}

// newTestCopierIn is newTestCopier, with the state directory and the
// monitor its log is in.
func newTestCopierIn(t *testing.T, limit *int64) (*outputCopier, *state.Dir, string) {
	t.Helper()
	r, err := redact.New([]string{"hunter2hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	o, err := newOutputCopier()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := state.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	id := ids.NewID("m_")
	if err := dir.CreateMonitorDir(id, state.Maker{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir.MonitorDir(id), state.LogName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := o.openLog(dir, id); err != nil {
		t.Fatal(err)
	}
	if limit != nil {
		o.limit = *limit
	}
	o.filter = r.NewStream()
	t.Cleanup(o.abandon)
	return o, dir, id
}

func awaitDone(t *testing.T, o *outputCopier) {
	t.Helper()
	select {
	case <-o.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the copier did not reach the pipe's end")
	}
}

// A log that cannot be written (here /dev/full: ENOSPC) never stops the
// reading: the writer finishes, the error is kept and the loss counted.
func TestOutputKeepsDrainingWhenTheLogFails(t *testing.T) {
	o := newTestCopier(t, nil)
	o.log.Close()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full on this machine")
	}
	o.log = full
	o.logFD = full.Fd()
	go o.run()
	payload := bytes.Repeat([]byte("line of output\n"), 200000) // 3 MB, more than any pipe holds
	if _, err := o.writeEnd.Write(payload); err != nil {
		t.Fatalf("the writer was blocked or failed: %v", err)
	}
	o.writeEnd.Close()
	o.writeEnd = nil
	awaitDone(t, o)
	var m state.Monitor
	o.snapshot(&m)
	if m.CapturedBytes != int64(len(payload)) {
		t.Fatalf("captured %d bytes, want %d", m.CapturedBytes, len(payload))
	}
	if !strings.Contains(m.LogError, "no space") || m.LogBytesLost != int64(len(payload)) || m.LogBytes != 0 {
		t.Fatalf("log error %q, lost %d, written %d", m.LogError, m.LogBytesLost, m.LogBytes)
	}
}

// Past the capture limit the log holds exactly the first limit bytes of
// the redacted output, and the rest is still read so the child never
// blocks.
func TestOutputCapKeepsExactPrefix(t *testing.T) {
	limit := int64(1000)
	o := newTestCopier(t, &limit)
	go o.run()
	payload := strings.Repeat("abcdefghi\n", 500) + "hunter2hunter2\n"
	o.writeEnd.WriteString(payload)
	o.writeEnd.Close()
	o.writeEnd = nil
	awaitDone(t, o)
	select {
	case <-o.capHit:
	default:
		t.Fatal("capture passed the limit without signalling it")
	}
	o.finish(true)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(o.log.Name()), state.LogName))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != payload[:limit] {
		t.Fatalf("log holds %d bytes, not the first %d of the capture", len(data), limit)
	}
	// The capture counts the output as redacted, past the limit too: a
	// count of the bytes before redaction told the secret's length.
	if redacted := strings.Replace(payload, "hunter2hunter2", redact.Marker, 1); o.captured.Load() != int64(len(redacted)) {
		t.Fatalf("captured %d, want %d", o.captured.Load(), len(redacted))
	}
}

// The copier marks where in the stored stream each second's output
// begins: output written a second after the last mark gets a mark, output
// within the second does not, and the marks place a time as
// state.LogOffsetAt reads them.
func TestOutputMarksTimes(t *testing.T) {
	o, dir, id := newTestCopierIn(t, nil)
	// The test drives write itself, as run would.
	o.write([]byte("first\n"))
	o.write([]byte("same second\n"))
	time.Sleep(1100 * time.Millisecond) // past the second
	between := time.Now()
	o.write([]byte("later\n"))
	if o.marks != 2 {
		t.Fatalf("%d marks, want 2", o.marks)
	}
	o.times.Close()
	o.times = nil
	data, err := os.ReadFile(filepath.Join(dir.MonitorDir(id), state.TimesName))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], " 0") || !strings.HasSuffix(lines[1], " 18") {
		t.Fatalf("marks %q: want offsets 0 and 18", lines)
	}
	if off, ok, err := dir.LogOffsetAt(id, between.Add(time.Second).UnixMilli(), math.MaxInt64); !ok || err != nil || off != 18 {
		t.Errorf("since just after the second write: %d (%v, %v), want 18", off, ok, err)
	}
}

// The cap never cuts a marker: a cut that would fall inside one goes
// before it, so the stored output never ends in a fragment such as
// "[REDA"; a limit at a marker's start or end cuts nothing of it. Once
// cut, no later output fills the bytes the marker left under the limit.
func TestOutputCapNeverSplitsMarker(t *testing.T) {
	const before = "0123456789" // the marker takes bytes 10 to 19
	m := int64(len(before))
	for _, tc := range []struct {
		limit int64
		want  string
	}{
		{m, before},     // at the marker's start
		{m + 1, before}, // inside it
		{m + 4, before},
		{m + int64(len(redact.Marker)) - 1, before},
		{m + int64(len(redact.Marker)), before + redact.Marker}, // at its end
		{m + int64(len(redact.Marker)) + 1, before + redact.Marker + "t"},
	} {
		// Both in one take, and with the output before the marker taken
		// first.
		for _, split := range []bool{false, true} {
			limit := tc.limit
			o := newTestCopier(t, &limit)
			var stored []byte
			o.store = func(p []byte) { stored = append(stored, p...) }
			var kept int64
			if split {
				kept = o.take([]byte(before[:4]), kept)
				kept = o.take(o.filter.Flush(o.filter.Redact(nil, []byte(before[4:]+"hunter2hunter2tail"))), kept)
			} else {
				kept = o.take(o.filter.Flush(o.filter.Redact(nil, []byte(before+"hunter2hunter2tail"))), kept)
			}
			o.take([]byte("more"), kept)
			if string(stored) != tc.want {
				t.Errorf("limit %d (split %v): stored %q, want %q", limit, split, stored, tc.want)
			}
			select {
			case <-o.capHit:
			default:
				t.Errorf("limit %d (split %v): capture passed the limit without signalling it", limit, split)
			}
			if want := int64(len(before+redact.Marker+"tail more")) - 1; o.captured.Load() != want {
				t.Errorf("limit %d (split %v): captured %d, want %d", limit, split, o.captured.Load(), want)
			}
		}
	}
}

// Through the pipe and into output.log: a secret that straddles the
// limit leaves the log ending just before its marker, and the log's
// count says so.
func TestOutputCapLogEndsBeforeMarker(t *testing.T) {
	limit := int64(1004)
	o := newTestCopier(t, &limit)
	go o.run()
	before := strings.Repeat("abcdefghi\n", 100)
	o.writeEnd.WriteString(before + "hunter2hunter2\n" + strings.Repeat("x", 5000))
	o.writeEnd.Close()
	o.writeEnd = nil
	awaitDone(t, o)
	o.finish(true)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(o.log.Name()), state.LogName))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != before {
		t.Fatalf("log ends %q, want it to end before the marker", data[max(len(data)-12, 0):])
	}
	var m state.Monitor
	o.snapshot(&m)
	if m.LogBytes != int64(len(before)) || m.CapturedBytes != int64(len(before)+len(redact.Marker)+1+5000) {
		t.Fatalf("log bytes %d, captured %d", m.LogBytes, m.CapturedBytes)
	}
}
