// Command holder is the benchmark's baseline for procmon start: the least a
// detached custodian must do to hand off a running process durably. It is
// not part of procmon and keeps no custody beyond reaping its one child.
//
//	holder start DIR -- CMD...   fork a holder (re-exec in a new session) that
//	                             spawns CMD in its own process group, writes
//	                             DIR/pid, fsyncs it and DIR, and only then says
//	                             "ok" on a pipe; prints {"pid","pgid","holder_pid"}
//	holder stop DIR              SIGTERM the recorded group, wait until it is gone,
//	                             remove DIR/pid (a second stop does nothing)
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const holdArg = "__hold"

func main() {
	if len(os.Args) < 3 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "start":
		err = start(os.Args[2], argvAfterDashes(os.Args[3:]))
	case holdArg:
		err = hold(os.Args[2], argvAfterDashes(os.Args[3:]))
	case "stop":
		err = stop(os.Args[2])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: holder start DIR -- CMD... | holder stop DIR")
	os.Exit(2)
}

func argvAfterDashes(args []string) []string {
	if len(args) < 2 || args[0] != "--" {
		usage()
	}
	return args[1:]
}

// start re-executes this binary as the holder, in a new session with no tie
// to the caller's stdio, and returns once the holder reports the durable pid.
func start(dir string, argv []string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	p, err := os.StartProcess(exe, append([]string{"holder", holdArg, dir, "--"}, argv...), &os.ProcAttr{
		Dir:   "/",
		Files: []*os.File{devnull, w, devnull},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return err
	}
	holderPID := p.Pid
	p.Release()
	w.Close()
	devnull.Close()
	msg, err := io.ReadAll(io.LimitReader(r, 4096))
	if err != nil {
		return err
	}
	f := strings.Fields(string(msg))
	if len(f) != 2 || f[0] != "ok" {
		return fmt.Errorf("holder failed: %q", bytes.TrimSpace(msg))
	}
	fmt.Printf("{\"pid\":%s,\"pgid\":%s,\"holder_pid\":%d}\n", f[1], f[1], holderPID)
	return nil
}

// hold runs in the holder: spawn, record durably, say ok, reap.
func hold(dir string, argv []string) error {
	fail := func(err error) error {
		fmt.Printf("error %v\n", err)
		return err
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fail(err)
	}
	out, err := os.OpenFile(filepath.Join(dir, "output.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fail(err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return fail(err)
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{devnull.Fd(), out.Fd(), out.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	out.Close()
	devnull.Close()
	if err != nil {
		return fail(err)
	}
	if err := writeDurable(dir, "pid", strconv.Itoa(pid)+"\n"); err != nil {
		syscall.Kill(-pid, syscall.SIGKILL)
		return fail(err)
	}
	fmt.Printf("ok %d\n", pid)
	os.Stdout.Close()
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if !errors.Is(err, syscall.EINTR) {
			return nil
		}
	}
}

func writeDurable(dir, name, data string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// stop sends SIGTERM to the recorded group and waits until it is gone
// (SIGKILL after 5 s), then removes the pid file so that a later stop can
// never signal a group that reused the pid.
func stop(dir string) error {
	pidFile := filepath.Join(dir, "pid")
	b, err := os.ReadFile(pidFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil // already stopped
	}
	if err != nil {
		return err
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pgid <= 1 {
		return fmt.Errorf("bad pid file in %s", dir)
	}
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return os.Remove(pidFile)
		}
		return err
	}
	syscall.Kill(-pgid, syscall.SIGCONT)
	killAt := time.Now().Add(5 * time.Second)
	interval := 200 * time.Microsecond
	for syscall.Kill(-pgid, 0) == nil {
		if !killAt.IsZero() && time.Now().After(killAt) {
			syscall.Kill(-pgid, syscall.SIGKILL)
			killAt = time.Time{}
		}
		time.Sleep(interval)
		interval = min(interval*2, 20*time.Millisecond)
	}
	return os.Remove(pidFile)
}
