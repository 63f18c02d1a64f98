package state

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"procmon/internal/ids"
	"procmon/internal/protocol"
)

// TestOutOfDescriptorsIsNotCorruption: a record that cannot be opened or
// read because the process ran out of file descriptors is reported as
// that, never as an unsafe or damaged state directory.
func TestOutOfDescriptorsIsNotCorruption(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	id := ids.NewID("m_")
	if err := d.CreateMonitorDir(id, Maker{}); err != nil {
		t.Fatal(err)
	}
	m := &Monitor{MonitorID: id, RunID: DefaultRun, Argv: []string{"x"}, Phase: PhaseRunning}
	if err := d.SaveMonitor(m, false); err != nil {
		t.Fatal(err)
	}
	if _, err := d.LoadMonitor(id); err != nil {
		t.Fatal(err)
	}

	// Use up every descriptor the (lowered) limit allows.
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = 256
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var held []*os.File
	defer func() {
		for _, f := range held {
			f.Close()
		}
		unix.Setrlimit(unix.RLIMIT_NOFILE, &old)
	}()
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		held = append(held, f)
	}
	_, err = d.LoadMonitor(id)
	for _, f := range held {
		f.Close()
	}
	held = nil
	if !protocol.HasCode(err, protocol.CodeInternal) {
		t.Fatalf("LoadMonitor out of descriptors: %v (code %s), want internal", err, protocol.AsError(err).Code)
	}
	if _, err := d.LoadMonitor(id); err != nil {
		t.Fatalf("once descriptors are free again: %v", err)
	}
}
