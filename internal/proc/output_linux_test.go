package proc

import (
	"bytes"
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
	return o
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

// Past the capture limit the log holds exactly the first limit bytes,
// redacted, and the rest is still read so the child never blocks.
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
	if o.captured.Load() != int64(len(payload)) {
		t.Fatalf("captured %d, want %d", o.captured.Load(), len(payload))
	}
}
