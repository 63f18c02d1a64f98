//go:build linux

package cmd

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"procmon/internal/state"
)

// writeTestRecord stores a running record whose guardian never existed
// and returns the file's bytes.
func writeTestRecord(t *testing.T, stateDir, id string) []byte {
	t.Helper()
	d, err := state.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	m := &state.Monitor{
		MonitorID: id, RunID: state.DefaultRun, Argv: []string{"sleep", "1"},
		PID: 4242, PGID: 4242, GuardianPID: 1 << 22, BootID: state.BootID(),
		Phase: state.PhaseRunning, OwnershipExpiresAtMs: 1 << 62,
	}
	if err := d.SaveMonitor(m, false); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(d.MonitorDir(id), state.RecordName))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// testEnv is an Env for in-process commands whose only setting is the
// state directory.
func testEnv(stateDir string, stdout, stderr io.Writer) *Env {
	return &Env{
		Stdin:  strings.NewReader(""),
		Stdout: stdout,
		Stderr: stderr,
		Getenv: func(k string) string {
			if k == "PROCMON_STATE_DIR" {
				return stateDir
			}
			return ""
		},
		Environ: func() []string { return nil },
		Getwd:   func() (string, error) { return stateDir, nil },
		Now:     time.Now,
	}
}
