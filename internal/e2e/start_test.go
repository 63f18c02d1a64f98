//go:build linux

package e2e

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"procmon/internal/ids"
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
	id := startedID(t, out)

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
	if status := runProcmon(t, procmon, "status", id); !json.Valid(status) {
		t.Fatalf("status: %s", status)
	}
	runProcmon(t, procmon, "cancel", id)
	assertNothingLeft(t, stateDir)
}

// TestGuardianLetsGoOfCallerStdio starts a service from a caller whose
// stdout and stderr are pipes, as a tool shim's subprocess call makes
// them: both reach their end once start has returned, and the guardian
// keeps only /dev/null and its own log in their place.
func TestGuardianLetsGoOfCallerStdio(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")

	start := procmon("start", "--", "sleeper")
	stdout, err := start.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := start.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := start.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait reads both pipes to their end: it returns only when nobody
	// holds their write ends, guardian included.
	outc, errc := make(chan []byte, 1), make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(stdout); outc <- b }()
	go func() { b, _ := io.ReadAll(stderr); errc <- b }()
	var out, errOut []byte
	for out == nil || errOut == nil {
		select {
		case out = <-outc:
		case errOut = <-errc:
		case <-time.After(patience):
			t.Fatalf("the caller's stdout or stderr is still held %v after start", patience)
		}
	}
	if err := start.Wait(); err != nil {
		t.Fatalf("start: %v\n%s%s", err, out, errOut)
	}
	id := startedID(t, out)
	defer func() {
		runProcmon(t, procmon, "cancel", id)
		assertNothingLeft(t, stateDir)
	}()

	mdir := filepath.Join(stateDir, "monitors", id)
	guardian := recordOf(t, stateDir, id).GuardianPID
	want := map[int]string{0: os.DevNull, 1: os.DevNull, 2: filepath.Join(mdir, "guardian.log")}
	for fd, path := range want {
		got, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(guardian), "fd", strconv.Itoa(fd)))
		if err != nil {
			t.Fatal(err)
		}
		if got != path {
			t.Errorf("guardian descriptor %d is %s, want %s", fd, got, path)
		}
	}
}

// TestRefusedStartLeavesNothing refuses starts at every stage a guardian
// may already be booting for them (procmon start launches one before it
// even parses its command line): each leaves no guardian and no monitor
// directory behind.
func TestRefusedStartLeavesNothing(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	for _, tc := range []struct {
		args  []string
		stdin string
		exit  int
	}{
		{args: []string{"start", "--no-such-flag", "--", "sleeper"}, exit: 2},
		{args: []string{"start"}, stdin: `{"request":{"argv":[]}}`, exit: 2},
		{args: []string{"start"}, stdin: `{"request":{"argv":["sleeper"],"bogus":1}}`, exit: 2},
		{args: []string{"start", "--timeout", "-5", "--", "sleeper"}, exit: 2},
		{args: []string{"start", "--timeout", "9223372036854775807", "--", "sleeper"}, exit: 2},
		{args: []string{"start"}, stdin: `{"request":{"argv":["sleeper","a\u0000b"]}}`, exit: 2},
		{args: []string{"start"}, stdin: `{"request":{"argv":["sleeper"],"cwd":"/tmp\u0000"}}`, exit: 2},
		{args: []string{"start"}, stdin: `{"request":{"argv":["sleeper"],"env":{"A=B":"c"}}}`, exit: 2},
		{args: []string{"start", "--", "no-such-program-anywhere"}, exit: 1},
		{args: []string{"start", "--help"}, exit: 0},
		{args: []string{"--run", "r_aaaaaaaaaaaaaaaaaaaa", "start", "--", "sleeper"}, exit: 4},
		{args: []string{"start", "--run", "r_aaaaaaaaaaaaaaaaaaaa", "--", "sleeper"}, exit: 4},
	} {
		c := procmon(tc.args...)
		c.Stdin = strings.NewReader(tc.stdin)
		out, err := c.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.exit {
			t.Errorf("procmon %v: exit %d, want %d\n%s", tc.args, code, tc.exit, out)
		}
		for deadline := time.Now().Add(patience); len(guardiansOf(stateDir)) > 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("procmon %v left guardians: %v", tc.args, guardiansOf(stateDir))
			}
		}
		if entries, _ := os.ReadDir(filepath.Join(stateDir, "monitors")); len(entries) > 0 {
			t.Fatalf("procmon %v left %d monitor directories", tc.args, len(entries))
		}
	}
}

// TestLeftoversFindsUnrecordedGuardian: a guardian that never recorded a
// monitor (here one still waiting for its spec) is still a leftover that
// the scripts' nothingleft and every test's final check report.
func TestLeftoversFindsUnrecordedGuardian(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	g := procmon("__guardian", stateDir, ids.NewID("m_"))
	spec, err := g.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	defer g.Wait()
	for deadline := time.Now().Add(patience); len(guardiansOf(stateDir)) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the guardian never showed up")
		}
	}
	if problems := leftovers(stateDir, false); len(problems) != 1 || !strings.Contains(problems[0], "no recorded monitor") {
		t.Fatalf("leftovers with a guardian waiting for its spec: %v", problems)
	}
	spec.Close() // no spec: the guardian leaves
	if problems := leftovers(stateDir, true); len(problems) > 0 {
		t.Fatalf("leftovers once the guardian left: %v", problems)
	}
}
