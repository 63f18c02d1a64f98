package proc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/ids"
	"procmon/internal/protocol"
	"procmon/internal/state"
)

func execSpec(script string) ExecSpec {
	return ExecSpec{
		Argv:        []string{"sh", "-c", script},
		Cwd:         "/",
		Env:         []string{"PATH=/usr/bin:/bin"},
		WindowBytes: 65536,
		GraceMs:     1000,
	}
}

// runExec runs spec and proves that nothing it started is left: the
// command's group is gone and the test process has no child at all.
func runExec(t *testing.T, ctx context.Context, spec ExecSpec) *ExecResult {
	t.Helper()
	p, err := PrepareExec(spec)
	if err != nil {
		t.Fatalf("PrepareExec: %v", err)
	}
	return runPrepared(t, ctx, p)
}

// runPrepared runs p as runExec runs its spec (Exec is PrepareExec and
// Run), for a test that changes what PrepareExec made.
func runPrepared(t *testing.T, ctx context.Context, p *PreparedExec) *ExecResult {
	t.Helper()
	res, err := p.Run(ctx)
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if unix.Kill(-res.PID, 0) != unix.ESRCH {
		t.Errorf("group %d is still there", res.PID)
	}
	if !noChildren() {
		t.Errorf("children left: %v", ownChildren())
	}
	r := res.Receipt
	if !r.GroupEmptyVerified || !r.OutputDrained || r.Containment != state.ContainmentComplete {
		t.Errorf("receipt not clean: %+v", r)
	}
	sum := sha256.Sum256([]byte(res.Text))
	if res.OutputSHA256 != hex.EncodeToString(sum[:]) || res.OutputBytes != len(res.Text) {
		t.Errorf("output_sha256/output_bytes do not describe the text %q", res.Text)
	}
	return res
}

func TestExecExitCodeAndRedaction(t *testing.T) {
	spec := execSpec("echo token=s3cr3t-value-42; echo done >&2; exit 3")
	spec.Secrets = []string{"s3cr3t-value-42"}
	res := runExec(t, context.Background(), spec)
	if r := res.Receipt; r.Status != state.StatusExited || r.ExitCode == nil || *r.ExitCode != 3 || r.Signal != nil {
		t.Fatalf("receipt %+v, want exited with code 3", r)
	}
	if res.Text != "token=[REDACTED]\ndone\n" {
		t.Errorf("text %q", res.Text)
	}
	if len(res.Receipt.Signals) != 0 {
		t.Errorf("a command that ended with its group signalled: %+v", res.Receipt.Signals)
	}
}

func TestExecSignalIsNotAnExitCode(t *testing.T) {
	res := runExec(t, context.Background(), execSpec("kill -USR1 $$"))
	if r := res.Receipt; r.ExitCode != nil || r.Signal == nil || *r.Signal != "SIGUSR1" {
		t.Fatalf("receipt %+v, want signal SIGUSR1 and no exit code", r)
	}
}

func TestExecDeadlineDrains(t *testing.T) {
	spec := execSpec("echo up; exec sleep 1000")
	d := time.Now().Add(300 * time.Millisecond).UnixMilli()
	spec.DeadlineMs = &d
	res := runExec(t, context.Background(), spec)
	if r := res.Receipt; r.Status != state.StatusTimedOut || r.Signal == nil || *r.Signal != "SIGTERM" {
		t.Fatalf("receipt %+v, want timed_out by SIGTERM", r)
	}
	if res.Text != "up\n" {
		t.Errorf("text %q", res.Text)
	}
}

func TestExecDrainsSetsidEscapee(t *testing.T) {
	// The command ends only once the escapee has its own session (field 6
	// of its stat): ended sooner, the drain could find it still in the
	// group, signalled as a member, not as an escapee.
	res := runExec(t, context.Background(), execSpec(`setsid sleep 1000 & p=$!; i=0
while [ "$(cut -d' ' -f6 /proc/$p/stat)" != "$p" ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
echo $p`))
	pid, err := strconv.Atoi(strings.TrimSpace(res.Text))
	if err != nil {
		t.Fatalf("text %q", res.Text)
	}
	if len(res.Receipt.Escaped) != 1 || res.Receipt.Escaped[0] != pid {
		t.Errorf("escaped %v, want [%d]", res.Receipt.Escaped, pid)
	}
	if r := res.Receipt; r.ExitCode == nil || *r.ExitCode != 0 {
		t.Errorf("receipt %+v, want exit code 0", r)
	}
}

func TestExecOutputLimit(t *testing.T) {
	spec := execSpec("yes")
	limit := int64(100000)
	spec.MaxOutputBytes = &limit
	spec.WindowBytes = 1000
	res := runExec(t, context.Background(), spec)
	if res.Receipt.Status != state.StatusOutputLimit || !res.CaptureLimit {
		t.Fatalf("receipt %+v, capture limit %v", res.Receipt, res.CaptureLimit)
	}
	if !res.Window || res.OutputBytes > 1000 || res.StreamBytes != limit {
		t.Errorf("window %v, %d bytes of a stream of %d", res.Window, res.OutputBytes, res.StreamBytes)
	}
	if !strings.HasPrefix(res.Text, "y\n") {
		t.Errorf("window does not start at a line: %q", res.Text[:10])
	}
}

func TestExecWindowNeverSplitsACharacter(t *testing.T) {
	spec := execSpec(`i=0; while [ $i -lt 50 ]; do printf 'é'; i=$((i+1)); done`)
	spec.WindowBytes = 7 // 3.5 characters
	res := runExec(t, context.Background(), spec)
	if res.Text != "ééé" || !res.Window || res.StreamBytes != 100 {
		t.Errorf("text %q, window %v, stream %d", res.Text, res.Window, res.StreamBytes)
	}
}

func TestExecInterruptedDrains(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	spec := execSpec("trap '' TERM; echo ready; while :; do sleep 0.05; done")
	spec.GraceMs = 100
	go func() {
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	res := runExec(t, ctx, spec)
	r := res.Receipt
	if r.Status != state.StatusCancelled || r.Reason != ExecInterrupted {
		t.Fatalf("receipt %+v, want cancelled, interrupted", r)
	}
	var sent []string
	for _, s := range r.Signals {
		sent = append(sent, s.Signal)
	}
	if strings.Join(sent, ",") != "SIGTERM,SIGCONT,SIGKILL" {
		t.Errorf("signals %v, want SIGTERM, SIGCONT, then SIGKILL for a command that ignores SIGTERM", sent)
	}
	if r.Signal == nil || *r.Signal != "SIGKILL" {
		t.Errorf("signal %v, want SIGKILL", r.Signal)
	}
}

func TestExecFailedLeavesNothing(t *testing.T) {
	spec := execSpec("")
	spec.Argv = []string{"/nonexistent/program"}
	_, err := Exec(context.Background(), spec)
	if !protocol.HasCode(err, protocol.CodeExecFailed) {
		t.Fatalf("err %v, want exec_failed", err)
	}
	if !noChildren() {
		t.Errorf("children left: %v", ownChildren())
	}
}

// A command's exit is never before its start: started_at is when it was
// forked, not when the custodian got round to recording it (a command as
// quick as true was once shown exiting a few milliseconds before it
// started).
func TestExecExitsNoEarlierThanItStarts(t *testing.T) {
	dir, err := state.Open(t.TempDir() + "/state")
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		spec := execSpec("exit 0")
		spec.Argv = []string{"true"}
		spec.State = dir
		res := runExec(t, context.Background(), spec)
		if e := res.Receipt.ExitedAtMs; e == nil || *e < res.StartedAtMs {
			t.Fatalf("exited at %v, started at %d", e, res.StartedAtMs)
		}
	}
}

// An exec is drained when its run ends, as the run's monitors are: run
// end answers at once, and the command used to run on to its own end
// (or its deadline) and be reported exited.
func TestExecDrainedByRunEnd(t *testing.T) {
	dir, err := state.Open(t.TempDir() + "/state")
	if err != nil {
		t.Fatal(err)
	}
	runID := ids.NewID("r_")
	if err := dir.CreateRun(&state.Run{RunID: runID, CreatedAtMs: time.Now().UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(t.TempDir(), "started")
	spec := execSpec(": > " + started + "; echo up; exec sleep 1000")
	spec.State, spec.RunID = dir, runID
	ended := make(chan error, 1)
	go func() {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(started); err == nil {
				break
			}
			if time.Now().After(deadline) {
				ended <- fmt.Errorf("the command did not start in 30 s")
				return
			}
		}
		_, err := EndRun(dir, runID, time.Now().UnixMilli())
		ended <- err
	}()
	// The command's own deadline bounds the test: an exec that does not
	// see its run end is reported timed_out, not hung on.
	d := time.Now().Add(30 * time.Second).UnixMilli()
	spec.DeadlineMs = &d
	res := runExec(t, context.Background(), spec)
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	if r := res.Receipt; r.Status != state.StatusCancelled || r.Reason != "run_ended" || r.ExitCode != nil {
		t.Fatalf("receipt %+v, want cancelled, run_ended, no exit code", r)
	}
	if res.Text != "up\n" {
		t.Errorf("text %q", res.Text)
	}
	if left, _ := dir.MonitorIDs(); len(left) != 0 {
		t.Errorf("the exec's trace is left: %v", left)
	}
}

// When a process outside the command holds its output pipe open (as an
// ssh ControlMaster holds a mux client's stdio), the pipe is never read
// to its end: the result still holds the output read until the drain,
// and says that it may be cut. It used to hold no text at all, its
// captured bytes counted but not shown, and no truncation.
func TestExecOutputUndrainedKeepsItsText(t *testing.T) {
	tmp := t.TempDir()
	pidFile, goFile := filepath.Join(tmp, "pid"), filepath.Join(tmp, "go")
	spec := execSpec("echo $$ > " + pidFile + ".new; mv " + pidFile + ".new " + pidFile +
		"; while [ ! -e " + goFile + " ]; do sleep 0.01; done; echo bye; exit 5")
	held := make(chan *os.File, 1)
	go func() {
		defer close(held)
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			b, err := os.ReadFile(pidFile)
			if err != nil {
				continue
			}
			// This process, no member of the command's group, takes the
			// write end of the command's output pipe.
			f, err := os.OpenFile("/proc/"+strings.TrimSpace(string(b))+"/fd/1", os.O_WRONLY, 0)
			if err != nil {
				t.Errorf("take the command's output pipe: %v", err)
			} else {
				f.WriteString("holder has the pipe\n")
				held <- f
			}
			os.WriteFile(goFile, nil, 0o600)
			return
		}
		t.Errorf("the command did not start in 30 s")
		os.WriteFile(goFile, nil, 0o600)
	}()
	res, err := Exec(context.Background(), spec)
	if f := <-held; f != nil {
		f.Close()
	}
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if unix.Kill(-res.PID, 0) != unix.ESRCH {
		t.Errorf("group %d is still there", res.PID)
	}
	if !noChildren() {
		t.Errorf("children left: %v", ownChildren())
	}
	r := res.Receipt
	if r.ExitCode == nil || *r.ExitCode != 5 || !r.GroupEmptyVerified || r.OutputDrained {
		t.Fatalf("receipt %+v, want exit code 5, the group verified empty, the output not drained", r)
	}
	want := "holder has the pipe\nbye\n"
	if res.Text != want || res.CapturedBytes != int64(len(want)) || !res.Undrained {
		t.Errorf("text %q (captured %d), undrained %v: want %q, undrained", res.Text, res.CapturedBytes, res.Undrained, want)
	}
	sum := sha256.Sum256([]byte(res.Text))
	if res.OutputSHA256 != hex.EncodeToString(sum[:]) || res.OutputBytes != len(res.Text) {
		t.Errorf("output_sha256/output_bytes do not describe the text %q", res.Text)
	}
}

// TestExecReasonReadsOnlyRegularFiles: execReason names the interpreter a
// script's #! line names, and says no more than execve did for what is
// not a regular file there now: a FIFO planted at the path must not
// block the guardian on an open for reading.
func TestExecReasonReadsOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/nonexistent/sh -e\necho\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := execReason(unix.ENOENT, "script", dir), `the interpreter its #! line names, "/nonexistent/sh", is not there`; got != want {
		t.Errorf("a script: %q, want %q", got, want)
	}
	// Saved with CRLF, the kernel looks for "/bin/sh\r".
	if err := os.WriteFile(script, []byte("#!/bin/sh\r\necho\r\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := execReason(unix.ENOENT, script, dir), `the interpreter its #! line names, "/bin/sh\r", is not there`; got != want {
		t.Errorf("a script with CRLF: %q, want %q", got, want)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() { done <- execReason(unix.ENOENT, fifo, dir) }()
	select {
	case got := <-done:
		if got != unix.ENOENT.Error() {
			t.Errorf("a FIFO: %q, want execve's own reason", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("execReason blocked on a FIFO")
	}
	if got := execReason(unix.EACCES, script, dir); got != unix.EACCES.Error() {
		t.Errorf("EACCES: %q", got)
	}
}
