package proc

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/state"
)

// readAfterReap holds the output copier's first read until the command,
// which prints its pid first, has been reaped: only the drain reaps it,
// and only once custody has ended on its exit, so that the exit is
// certainly taken before the copier sees any output, the cap with it.
type readAfterReap struct {
	outputFilter
	t    *testing.T
	held bool
}

func (f *readAfterReap) Redact(dst, p []byte) []byte {
	if !f.held {
		f.held = true
		f.awaitReaped(p)
	}
	return f.outputFilter.Redact(dst, p)
}

func (f *readAfterReap) awaitReaped(first []byte) {
	line, _, _ := bytes.Cut(first, []byte("\n"))
	pid, err := strconv.Atoi(string(line))
	if err != nil {
		f.t.Errorf("the command's first output %q is no pid", line)
		return
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // reaped already
	}
	defer unix.Close(fd)
	// A zombie still takes a signal; a reaped process does not. The pidfd
	// names the command even once its pid is another's.
	for deadline := time.Now().Add(patience); unix.PidfdSendSignal(fd, 0, nil, 0) != unix.ESRCH; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			f.t.Errorf("the command %d was not reaped within %v", pid, patience)
			return
		}
	}
}

// receiptJSON shows r with the values its pointers hold.
func receiptJSON(r *state.Receipt) string {
	b, _ := json.Marshal(r)
	return string(b)
}

// TestExecPastCapThenExitedIsOutputLimit: a command that writes past the
// output cap and exits at once is output_limit, with its exit code, even
// when its exit is taken before the copier has read a byte of its output.
// Whichever of the two the custodian's loop took first used to decide, and
// the same command was exited (its capture cut all the same) about half
// the time.
func TestExecPastCapThenExitedIsOutputLimit(t *testing.T) {
	const limit = 2000
	res := runReadAfterReap(t, "echo $$; yes | head -c 20000", limit)
	r := res.Receipt
	if r.Status != state.StatusOutputLimit || r.Reason != "output_limit" || r.ExitCode == nil || *r.ExitCode != 0 || r.Signal != nil {
		t.Errorf("receipt %s, want output_limit with exit code 0", receiptJSON(r))
	}
	if !res.CaptureLimit || res.StreamBytes != limit || res.CapturedBytes <= limit {
		t.Errorf("capture limit %v, stream %d, captured %d: want the capture cut at %d", res.CaptureLimit, res.StreamBytes, res.CapturedBytes, limit)
	}
	if len(r.Signals) != 0 {
		t.Errorf("a command that ended by itself had its group signalled: %+v", r.Signals)
	}
}

// TestExecUnderCapExited: a command whose output stays under the cap,
// however it is read, is exited: only an output past the cap makes an
// exit output_limit.
func TestExecUnderCapExited(t *testing.T) {
	res := runReadAfterReap(t, "echo $$; yes | head -c 1000", 2000)
	if r := res.Receipt; r.Status != state.StatusExited || r.Reason != "exited" || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Errorf("receipt %s, want exited with exit code 0", receiptJSON(r))
	}
	if res.CaptureLimit || res.CapturedBytes != res.StreamBytes {
		t.Errorf("capture limit %v, stream %d, captured %d: want the whole capture", res.CaptureLimit, res.StreamBytes, res.CapturedBytes)
	}
}

// runReadAfterReap runs script under an output cap of limit bytes, its
// output read only once the command has been reaped (readAfterReap).
func runReadAfterReap(t *testing.T, script string, limit int64) *ExecResult {
	t.Helper()
	spec := execSpec(script)
	spec.MaxOutputBytes = &limit
	p, err := PrepareExec(spec)
	if err != nil {
		t.Fatal(err)
	}
	p.out.filter = &readAfterReap{outputFilter: p.out.filter, t: t}
	return runPrepared(t, context.Background(), p)
}
