package e2e

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tidwall/gjson"
	"golang.org/x/sys/unix"

	"procmon/internal/proc"
)

// terminalEnv is what a command run by pty inherits of the script: the
// variables procmon reads, and PATH to find procmon and the fake children.
var terminalEnv = []string{"PATH", "HOME", "PROCMON_STATE_DIR", "XDG_STATE_HOME", "PROCMON_RUN", "NO_COLOR"}

// pty [-status N] [-cols N] [NAME=VALUE...] PROG ARGS... runs a program
// with its stdin and stdout on a pseudo-terminal, as a person at a
// terminal runs it, and its stderr on a pipe. The terminal is 120
// columns wide, or N with -cols. What the terminal showed becomes stdout
// (the terminal's \r\n line ends read back as \n; a lone \r, as a
// progress line draws, is kept), stderr stays stderr. It fails unless the
// program exits 0, or N with -status, or non-zero with !. NAME=VALUE sets
// a variable for the program alone; NAME= unsets it.
func cmdPty(ts *testscript.TestScript, neg bool, args []string) {
	const usage = "usage: pty [-status N] [-cols N] [NAME=VALUE...] PROG ARGS..."
	want, cols := -1, 120
	if len(args) >= 2 && args[0] == "-status" {
		n, err := strconv.Atoi(args[1])
		if err != nil || neg {
			ts.Fatalf(usage)
		}
		want, args = n, args[2:]
	}
	if len(args) >= 2 && args[0] == "-cols" {
		n, err := strconv.Atoi(args[1])
		if err != nil || n <= 0 || n > 0xffff {
			ts.Fatalf(usage)
		}
		cols, args = n, args[2:]
	}
	vars := map[string]string{"TERM": "xterm"}
	for _, k := range terminalEnv {
		if v := ts.Getenv(k); v != "" {
			vars[k] = v
		}
	}
	for len(args) > 0 && strings.Contains(args[0], "=") {
		k, v, _ := strings.Cut(args[0], "=")
		vars[k] = v
		args = args[1:]
	}
	if len(args) == 0 {
		ts.Fatalf(usage)
	}
	prog := lookPath(ts.Getenv("PATH"), args[0])
	if prog == "" {
		ts.Fatalf("pty: %s not found in $PATH", args[0])
	}
	c := exec.Command(prog, args[1:]...)
	c.Args[0] = args[0]
	c.Dir = ts.Getenv("WORK")
	for k, v := range vars {
		if v != "" {
			c.Env = append(c.Env, k+"="+v)
		}
	}
	terminal, tty, err := pty.Open()
	if err != nil {
		ts.Fatalf("pty: %v", err)
	}
	defer terminal.Close()
	pty.Setsize(terminal, &pty.Winsize{Rows: 24, Cols: uint16(cols)})
	var stderr bytes.Buffer
	c.Stdin, c.Stdout, c.Stderr = tty, tty, &stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := c.Start(); err != nil {
		tty.Close()
		ts.Fatalf("pty: %v", err)
	}
	tty.Close() // the program holds the only other end: reading ends when it exits
	shown := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(terminal) // EIO once the program has exited
		shown <- b
	}()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(patience):
		c.Process.Kill()
		ts.Fatalf("pty: %s did not exit within %v", args[0], patience)
	}
	out := bytes.ReplaceAll(<-shown, []byte("\r\n"), []byte("\n"))
	ts.Stdout().Write(out)
	ts.Stderr().Write(stderr.Bytes())
	status := 0
	var exitErr *exec.ExitError
	if errors.As(werr, &exitErr) {
		status = exitErr.ExitCode()
	} else if werr != nil {
		ts.Fatalf("pty: %v", werr)
	}
	switch {
	case want >= 0 && status != want:
		ts.Fatalf("pty: %s exited %d, want %d", args[0], status, want)
	case want < 0 && neg && status == 0:
		ts.Fatalf("pty: %s succeeded unexpectedly", args[0])
	case want < 0 && !neg && status != 0:
		ts.Fatalf("pty: %s exited %d", args[0], status)
	}
}

func lookPath(path, name string) string {
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// TestExecInterruptedOnATerminal: Ctrl-C to procmon exec at a terminal
// shows a person what a finished exec shows (the command's output so
// far, how it ended, its receipt), then the one line that says it was
// interrupted, which points at no details.result they cannot see; the
// exit status is 130. Piped, the answer is the JSON error as before,
// with the result in its details. Either way nothing of the command is
// left running.
func TestExecInterruptedOnATerminal(t *testing.T) {
	for _, terminal := range []bool{true, false} {
		name := map[bool]string{true: "terminal", false: "piped"}[terminal]
		t.Run(name, func(t *testing.T) {
			stdout, stderr, status := interruptExec(t, terminal)
			if status != 130 {
				t.Fatalf("interrupted exec: exit status %d, want 130; wrote %q %q", status, stdout, stderr)
			}
			if terminal {
				want := regexp.MustCompile(`^one\ntwo\ngot TERM\n` +
					`cancelled \(7\) after [0-9.]+m?s: sh -c .+ \(command 1 of run default\)\n` +
					`  reason interrupted, sent SIGTERM to .*, group empty \(verified\), output drained\n` +
					`procmon: exec of sh was interrupted: its group was drained \(wait_interrupted\)\n$`)
				if !want.MatchString(stdout) {
					t.Errorf("the terminal showed:\n%s\nwant it to match:\n%s", stdout, want)
				}
				return
			}
			if stderr != "" {
				t.Errorf("piped, the interrupted exec wrote %q on stderr", stderr)
			}
			e := gjson.Get(stdout, "error")
			if e.Get("code").String() != "wait_interrupted" ||
				e.Get("message").String() != "exec of sh was interrupted: its group was drained (details.result has what it did)" ||
				e.Get("details.result.text").String() != "one\ntwo\ngot TERM\n" || e.Get("details.result.exit_code").Int() != 7 ||
				e.Get("details.result.reason").String() != "interrupted" || !e.Get("details.result.group_empty_verified").Bool() {
				t.Errorf("piped, the interrupted exec answered %s", stdout)
			}
		})
	}
}

// interruptExec runs procmon exec of a shell that prints two lines, then
// waits on a child, and that says so and exits 7 when it is sent
// SIGTERM; once the shell waits, procmon is sent SIGINT by its pid. On a
// terminal, stdin, stdout and stderr are the terminal and stdout is what
// it showed (the terminal's \r\n read back as \n); else stdout and stderr
// are pipes. It fails the test unless the shell and its child are gone.
func interruptExec(t *testing.T, terminal bool) (stdout, stderr string, status int) {
	stateDir := filepath.Join(t.TempDir(), "state")
	cwd := t.TempDir()
	procmon := procmonIn(t, stateDir, cwd)
	runProcmon(t, procmon, "configure", "--enable")
	x := procmon("exec", "--", "sh", "-c",
		`trap 'echo got TERM; exit 7' TERM; echo one; echo two; sleeper >/dev/null & echo $$ $! > pids.new; mv pids.new pids; wait`)
	x.Env = append(x.Env, "NO_COLOR=1", "TERM=xterm")
	var out, errOut bytes.Buffer
	var shown chan []byte
	if terminal {
		ptm, tty, err := pty.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer ptm.Close()
		x.Stdin, x.Stdout, x.Stderr = tty, tty, tty
		x.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		err = x.Start()
		tty.Close() // procmon holds the only other end: reading ends when it exits
		if err != nil {
			t.Fatal(err)
		}
		shown = make(chan []byte, 1)
		go func() {
			b, _ := io.ReadAll(ptm) // EIO once procmon has exited
			shown <- b
		}()
	} else {
		x.Stdout, x.Stderr = &out, &errOut
		if err := x.Start(); err != nil {
			t.Fatal(err)
		}
	}
	exited := make(chan struct{})
	go func() { x.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			x.Process.Kill() // the command's parent-death signal drains it
			<-exited
		}
	})

	// The pids name the shell and its child; their start times tell them
	// from any process that takes a pid of theirs later.
	var pids []int
	for deadline := time.Now().Add(patience); len(pids) == 0; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(cwd, "pids")); err == nil {
			for _, f := range strings.Fields(string(b)) {
				pid, _ := strconv.Atoi(f)
				pids = append(pids, pid)
			}
		}
		select {
		case <-exited:
			t.Fatalf("procmon exec ended before its command started: exit status %d %q %q", x.ProcessState.ExitCode(), out.String(), errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command of procmon exec never started")
		}
	}
	ticks := make([]uint64, len(pids))
	for i, pid := range pids {
		var err error
		if ticks[i], err = proc.StartTicks(pid); err != nil {
			t.Fatalf("pid %d of the command: %v", pid, err)
		}
	}
	if err := x.Process.Signal(unix.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(patience):
		t.Fatalf("procmon exec did not end within %v of SIGINT", patience)
	}
	for i, pid := range pids {
		if !awaitGone(pid, ticks[i]) {
			t.Errorf("pid %d of the command still running after the interrupted exec", pid)
		}
	}
	assertNothingLeft(t, stateDir)
	if terminal {
		out.Write(bytes.ReplaceAll(<-shown, []byte("\r\n"), []byte("\n")))
	}
	return out.String(), errOut.String(), x.ProcessState.ExitCode()
}
