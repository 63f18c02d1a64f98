//go:build linux

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"golang.org/x/sys/unix"
)

// TestWaitQuitIsAnInterrupt: Ctrl-\ (SIGQUIT) ends a wait as Ctrl-C
// does, with exit status 130 and the one typed error, never the Go
// runtime's stack dump and its exit status 2; the service keeps running.
func TestWaitQuitIsAnInterrupt(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	run := func(args ...string) []byte { return runProcmon(t, procmon, args...) }
	run("configure", "--enable")
	startMonitor(t, procmon, "start", "--name", "ticker", "--", "sleeper")

	stdout, status := interruptWait(t, procmon, stateDir, unix.SIGQUIT, "ticker", "--output", "never printed")
	if status != 130 {
		t.Fatalf("procmon wait after SIGQUIT: exit status %d, want 130; wrote %q", status, stdout)
	}
	if lines := strings.Count(stdout, "\n"); lines != 1 || gjson.Get(stdout, "error.code").String() != "wait_interrupted" {
		t.Fatalf("procmon wait after SIGQUIT wrote %q, want one wait_interrupted error", stdout)
	}
	if status := gjson.GetBytes(run("status", "ticker"), "status").String(); status != "running" {
		t.Fatalf("status after the interrupted wait: %s, want running", status)
	}
	run("cancel", "ticker")
	assertNothingLeft(t, stateDir)
}

// TestExecQuitDrainsTheCommand: SIGQUIT to procmon exec drains its
// command, as SIGINT does, rather than ending procmon with the command
// still running.
func TestExecQuitDrainsTheCommand(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	cwd := t.TempDir()
	procmon := procmonIn(t, stateDir, cwd)
	runProcmon(t, procmon, "configure", "--enable")

	x := procmon("exec", "--", "sh", "-c", ": > started; exec sleeper")
	var stdout, stderr bytes.Buffer
	x.Stdout, x.Stderr = &stdout, &stderr
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	// The command runs only once exec catches its interrupts.
	for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(cwd, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			x.Process.Kill()
			x.Wait()
			t.Fatalf("the command of procmon exec never started: %s %s", stdout.String(), stderr.String())
		}
	}
	if err := x.Process.Signal(unix.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	x.Wait()
	out := stdout.String()
	if status := x.ProcessState.ExitCode(); status != 130 {
		t.Fatalf("procmon exec after SIGQUIT: exit status %d, want 130; wrote %q %q", status, out, stderr.String())
	}
	if gjson.Get(out, "error.code").String() != "wait_interrupted" || gjson.Get(out, "error.details.result.status").String() != "cancelled" {
		t.Fatalf("procmon exec after SIGQUIT wrote %q, want wait_interrupted with the result cancelled", out)
	}
	assertNothingLeft(t, stateDir)
}
