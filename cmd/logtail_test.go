//go:build linux

package cmd

import (
	"bytes"
	"os"
	"path/filepath"
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
