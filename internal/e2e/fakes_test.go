package e2e

import (
	"bufio"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The fake children scripts start: registered commands of the test binary,
// so scripts need no host tools and behave the same everywhere.
var fakeChildren = map[string]func(){
	"sleeper":    sleeper,
	"printer":    printer,
	"exitwith":   exitwith,
	"ignoreterm": ignoreterm,
	"forker":     forker,
	"escaper":    escaper,
}

// sleeper prints a ready line, followed by its arguments (to tell one
// sleeper from another), and sleeps until signalled.
func sleeper() {
	fmt.Println(strings.Join(append([]string{"sleeper ready"}, os.Args[1:]...), " "))
	select {}
}

// printer writes its arguments as lines, or generated output, then exits
// (or stays with -stay). -env NAME prints a variable, -base64env NAME its
// base64, -bytes N writes N bytes of a repeating pattern, -split waits
// between the first and second half of each line, -tee keeps a copy.
// -raw takes each argument Go-quoted and writes it unquoted with no
// newline added, so a script can print any bytes.
func printer() {
	fs := flag.NewFlagSet("printer", flag.ExitOnError)
	stay := fs.Bool("stay", false, "sleep after printing")
	env := fs.String("env", "", "print this variable's value")
	b64 := fs.String("base64env", "", "print this variable's value in base64")
	n := fs.Int64("bytes", 0, "write this many bytes of a pattern")
	pause := fs.Duration("split", 0, "pause this long in the middle of each line")
	exit := fs.Int("exit", 0, "exit status")
	tee := fs.String("tee", "", "also write everything printed to this file")
	raw := fs.Bool("raw", false, "write each argument Go-unquoted, without a newline")
	fs.Parse(os.Args[1:])
	var w io.Writer = os.Stdout
	if *tee != "" {
		f, err := os.Create(*tee)
		if err != nil {
			panic(err)
		}
		defer f.Close()
		w = io.MultiWriter(os.Stdout, f)
	}
	if *env != "" {
		fmt.Fprintln(w, os.Getenv(*env))
	}
	if *b64 != "" {
		fmt.Fprintln(w, base64.StdEncoding.EncodeToString([]byte(os.Getenv(*b64))))
	}
	if *n > 0 {
		line := []byte(strings.Repeat("0123456789abcdef", 63) + "xyz\n") // 1 KiB
		for left := *n; left > 0; {
			chunk := line
			if left < int64(len(chunk)) {
				chunk = chunk[:left]
			}
			w.Write(chunk)
			left -= int64(len(chunk))
		}
	}
	for _, a := range fs.Args() {
		if *raw {
			b, err := strconv.Unquote(a)
			if err != nil {
				panic(err)
			}
			io.WriteString(w, b)
			continue
		}
		if *pause > 0 {
			half := len(a) / 2
			io.WriteString(w, a[:half])
			time.Sleep(*pause)
			io.WriteString(w, a[half:]+"\n")
			continue
		}
		fmt.Fprintln(w, a)
	}
	if *stay {
		select {}
	}
	os.Exit(*exit)
}

// exitwith exits with the given status, or kills itself with a signal
// given by name (SIGTERM, SIGKILL).
func exitwith() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: exitwith STATUS|SIGNAL")
		os.Exit(64)
	}
	arg := os.Args[1]
	if code, err := strconv.Atoi(arg); err == nil {
		os.Exit(code)
	}
	sig := map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGKILL": syscall.SIGKILL, "SIGINT": syscall.SIGINT}[arg]
	if sig == 0 {
		fmt.Fprintln(os.Stderr, "exitwith: unknown signal", arg)
		os.Exit(64)
	}
	signal.Reset(sig)
	syscall.Kill(os.Getpid(), sig)
	select {}
}

// ignoreterm ignores SIGTERM and sleeps: only SIGKILL ends it.
func ignoreterm() {
	signal.Ignore(syscall.SIGTERM)
	fmt.Println("ignoreterm ready", os.Getpid())
	select {}
}

// forker ignores SIGTERM and starts two TERM-ignoring descendants: one in
// its own group, one that escapes into a new session. Once both ignore
// SIGTERM (each has printed its ready line, passed on here), it writes all
// three pids to the file named by its argument, then prints a ready line.
// Until a descendant's runtime has started and ignored SIGTERM, a SIGTERM
// kills it, which a race-built test binary makes a window of milliseconds.
func forker() {
	signal.Ignore(syscall.SIGTERM)
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: forker PIDFILE")
		os.Exit(64)
	}
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	spawn := func(setsid bool) int {
		r, w, err := os.Pipe()
		if err != nil {
			panic(err)
		}
		p, err := os.StartProcess(exe, []string{"ignoreterm"}, &os.ProcAttr{
			Files: []*os.File{nil, w, os.Stderr},
			Sys:   &syscall.SysProcAttr{Setsid: setsid},
		})
		if err != nil {
			panic(err)
		}
		w.Close()
		ready, err := bufio.NewReader(r).ReadString('\n')
		if err != nil {
			panic(fmt.Sprintf("ignoreterm %d never got ready: %v", p.Pid, err))
		}
		r.Close()
		fmt.Print(ready)
		return p.Pid
	}
	member, escapee := spawn(false), spawn(true)
	pids := fmt.Sprintf("%d %d %d\n", os.Getpid(), member, escapee)
	if err := os.WriteFile(os.Args[1], []byte(pids), 0o644); err != nil {
		panic(err)
	}
	fmt.Println("forker ready")
	select {}
}

// escaper starts a sleeper in a session of its own (setsid) when a signal
// comes, as a daemon's handler may, and appends the sleeper's pid to the
// file named by its second argument, to which it first writes its own
// once the handler is in place. With "term" it does so on SIGTERM, then
// exits: the sleeper is an orphan of a session that nothing recorded.
// With "usr1" it ignores SIGTERM, does so on SIGUSR1, and stays the
// sleeper's parent.
func escaper() {
	if len(os.Args) != 3 || os.Args[1] != "term" && os.Args[1] != "usr1" {
		fmt.Fprintln(os.Stderr, "usage: escaper term|usr1 PIDFILE")
		os.Exit(64)
	}
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	f, err := os.OpenFile(os.Args[2], os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		panic(err)
	}
	// Not the service's output: once its guardian is gone, nothing reads
	// that pipe, and the sleeper's ready line would end it (SIGPIPE).
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		panic(err)
	}
	on := syscall.SIGTERM
	if os.Args[1] == "usr1" {
		signal.Ignore(syscall.SIGTERM)
		on = syscall.SIGUSR1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, on)
	// The pid comes last: a test that kills the guardian once it is
	// written must not break the pipe under the ready line.
	fmt.Println("escaper ready")
	fmt.Fprintf(f, "%d\n", os.Getpid())
	for range sig {
		p, err := os.StartProcess(exe, []string{"sleeper", "escaped"}, &os.ProcAttr{
			Files: []*os.File{nil, devNull, devNull},
			Sys:   &syscall.SysProcAttr{Setsid: true},
		})
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(f, "%d\n", p.Pid)
		if on == syscall.SIGTERM {
			os.Exit(0)
		}
	}
}
