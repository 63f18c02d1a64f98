//go:build linux

package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStartLeavesNoStrayDescriptors starts a service from a caller that
// holds a pipe without close-on-exec (as a shell's 3>&1 or make's
// jobserver hand one over): neither the guardian nor the service may keep
// it, or the caller's pipeline would wait for as long as the service runs.
func TestStartLeavesNoStrayDescriptors(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	start := procmon("start", "--", "sleeper")
	start.ExtraFiles = []*os.File{w} // descriptor 3 of the caller, not close-on-exec
	out, err := start.Output()
	w.Close()
	if err != nil {
		t.Fatalf("start: %v\n%s", err, out)
	}
	var started struct {
		MonitorID string `json:"monitor_id"`
	}
	if err := json.Unmarshal(out, &started); err != nil {
		t.Fatal(err)
	}

	// The caller has exited; the pipe must be at its end.
	eof := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(r)
		eof <- err
	}()
	select {
	case err := <-eof:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(patience):
		t.Fatalf("the caller's pipe is still held %v after start returned", patience)
	}
	if status := runProcmon(t, procmon, "status", started.MonitorID); !json.Valid(status) {
		t.Fatalf("status: %s", status)
	}
	runProcmon(t, procmon, "cancel", started.MonitorID)
	if problems := leftovers(stateDir, true); len(problems) > 0 {
		t.Fatalf("processes left behind: %v", problems)
	}
}
