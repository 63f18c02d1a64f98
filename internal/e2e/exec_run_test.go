//go:build linux

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestExecDrainedWithItsRun: an exec is drained when its run ends and
// when the run's owner exits, as the run's monitors are, and answers that
// it was (cancelled, with the guardian's reason). It used to run on to
// its own end: run end answered at once and the command was reported
// exited; an owner's exit drained the monitors but the exec ran its full
// time (600 s by default).
func TestExecDrainedWithItsRun(t *testing.T) {
	for _, end := range []struct {
		reason string
		bind   bool // the run has an owner, whose exit ends it
	}{{"run_ended", false}, {"owner_exited", true}} {
		t.Run(end.reason, func(t *testing.T) {
			stateDir := filepath.Join(t.TempDir(), "state")
			cwd := t.TempDir()
			procmon := procmonIn(t, stateDir, cwd)
			run := func(args ...string) []byte { return runProcmon(t, procmon, args...) }
			run("configure", "--enable")
			newRun := []string{"run", "new"}
			var owner *exec.Cmd
			if end.bind {
				owner = exec.Command("sleeper", "owner")
				if err := owner.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() { owner.Process.Kill(); owner.Wait() }()
				newRun = append(newRun, "--owner-pid", strconv.Itoa(owner.Process.Pid))
			}
			runID := gjson.GetBytes(run(newRun...), "run_id").String()
			monitor := startMonitor(t, procmon, "start", "--run", runID, "--", "sleeper")

			x := procmon("exec", "--run", runID, "--", "sh", "-c", ": > started; echo up; exec sleeper \"$PWD\"")
			var stdout, stderr bytes.Buffer
			x.Stdout, x.Stderr = &stdout, &stderr
			if err := x.Start(); err != nil {
				t.Fatal(err)
			}
			answered := make(chan struct{})
			go func() { x.Wait(); close(answered) }()
			defer func() {
				select {
				case <-answered:
				default:
					x.Process.Kill()
					<-answered
				}
			}()
			for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(cwd, "started")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the command of procmon exec never started: %s %s", stdout.String(), stderr.String())
				}
			}

			if end.bind {
				owner.Process.Kill()
				owner.Wait()
			} else {
				run("run", "end", "--run", runID)
			}
			select {
			case <-answered:
			case <-time.After(patience):
				t.Fatalf("procmon exec still runs %v after its run's end (%s)", patience, end.reason)
			}
			out := stdout.String()
			if status := x.ProcessState.ExitCode(); status != 0 {
				t.Fatalf("procmon exec: exit status %d, wrote %q %q", status, out, stderr.String())
			}
			for path, want := range map[string]string{"status": "cancelled", "reason": end.reason, "group_empty_verified": "true"} {
				if got := gjson.Get(out, path).String(); got != want {
					t.Errorf("exec answered %s: %s %q, want %q", out, path, got, want)
				}
			}
			if text := gjson.Get(out, "text").String(); !strings.HasPrefix(text, "up\n") {
				t.Errorf("exec answered %s: text %q, want the command's output", out, text)
			}
			if gjson.Get(out, "exit_code").Type != gjson.Null {
				t.Errorf("exec answered %s: an exit code for a drained command", out)
			}
			r := awaitRecordedReceipt(t, stateDir, monitor, "at its run's end")
			if r.Reason != end.reason {
				t.Errorf("the run's monitor: reason %q, want %q", r.Reason, end.reason)
			}
			assertNothingLeft(t, stateDir)
			if ids := pidsWithArgs("sleeper", cwd); len(ids) != 0 {
				t.Errorf("the exec's command is still running: pids %v", ids)
			}
		})
	}
}

// TestExecOutputUndrainedSaysSo: when a process outside the command holds
// the command's output pipe open, exec answers with the output it read
// and says that it may be cut (truncation output_undrained). It used to
// answer an empty text, with captured_bytes counting what it dropped,
// and output_truncated false.
func TestExecOutputUndrainedSaysSo(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	cwd := t.TempDir()
	procmon := procmonIn(t, stateDir, cwd)
	runProcmon(t, procmon, "configure", "--enable")

	x := procmon("exec", "--", "sh", "-c", "echo $$ > pid.new; mv pid.new pid; while [ ! -e go ]; do sleep 0.01; done; echo bye")
	var stdout, stderr bytes.Buffer
	x.Stdout, x.Stderr = &stdout, &stderr
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	defer os.WriteFile(filepath.Join(cwd, "go"), nil, 0o600) // a failed test lets the command end
	var pid []byte
	for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
		var err error
		if pid, err = os.ReadFile(filepath.Join(cwd, "pid")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			x.Process.Kill()
			x.Wait()
			t.Fatalf("the command of procmon exec never started: %s %s", stdout.String(), stderr.String())
		}
	}
	// This test process, outside the command, takes the write end of the
	// command's output pipe and holds it until exec has answered.
	holder, err := os.OpenFile("/proc/"+strings.TrimSpace(string(pid))+"/fd/1", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("take the command's output pipe: %v", err)
	}
	defer holder.Close()
	holder.WriteString("holder has the pipe\n")
	os.WriteFile(filepath.Join(cwd, "go"), nil, 0o600)
	x.Wait()
	out := stdout.String()
	if status := x.ProcessState.ExitCode(); status != 0 {
		t.Fatalf("procmon exec: exit status %d, wrote %q %q", status, out, stderr.String())
	}
	for path, want := range map[string]string{
		"exit_code":            "0",
		"output_drained":       "false",
		"group_empty_verified": "true",
		"text":                 "holder has the pipe\nbye\n",
		"captured_bytes":       "24",
		"output_truncated":     "true",
		"truncation":           `["output_undrained"]`,
	} {
		if got := gjson.Get(out, path).Raw; got != want && gjson.Get(out, path).String() != want {
			t.Errorf("exec answered %s: %s %s, want %s", out, path, got, want)
		}
	}
	assertNothingLeft(t, stateDir)
}
