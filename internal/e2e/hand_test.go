package e2e

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/rogpeppe/go-internal/testscript"
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
