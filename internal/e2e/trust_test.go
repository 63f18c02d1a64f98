package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tidwall/gjson"
	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

// plant symlink PATH TARGET | fifo PATH | sparse PATH SIZE | hardlink PATH
// TARGET replaces PATH (whatever is there) with what an attacker of the
// same user would put there: a link to TARGET, a FIFO, a sparse file of
// SIZE bytes (suffixes K, M, G) or a hard link to TARGET. It is made
// beside PATH and renamed over it, so that a live guardian never finds
// PATH missing and makes it anew meanwhile (a lock file, a record). A
// directory at PATH goes first, as rename cannot replace one: what a
// live guardian wrote there meanwhile would be replaced, so a directory
// is planted over only where no guardian writes.
func cmdPlant(ts *testscript.TestScript, neg bool, args []string) {
	usage := func() {
		ts.Fatalf("usage: plant symlink PATH TARGET | fifo PATH | sparse PATH SIZE | hardlink PATH TARGET")
	}
	if neg || len(args) < 2 {
		usage()
	}
	final := ts.MkAbs(args[1])
	path := final + ".planting"
	if fi, err := os.Lstat(final); err == nil && fi.IsDir() {
		if err := os.RemoveAll(final); err != nil {
			ts.Fatalf("plant: %v", err)
		}
	}
	var err error
	switch {
	case args[0] == "symlink" && len(args) == 3:
		err = os.Symlink(ts.MkAbs(args[2]), path)
	case args[0] == "hardlink" && len(args) == 3:
		err = os.Link(ts.MkAbs(args[2]), path)
	case args[0] == "fifo" && len(args) == 2:
		err = unix.Mkfifo(path, 0o600)
	case args[0] == "sparse" && len(args) == 3:
		size, perr := parseSize(args[2])
		if perr != nil {
			ts.Fatalf("plant: %v", perr)
		}
		if err = os.WriteFile(path, nil, 0o600); err == nil {
			err = os.Truncate(path, size)
		}
	default:
		usage()
	}
	if err == nil {
		err = os.Rename(path, final)
	}
	if err != nil {
		os.Remove(path)
		ts.Fatalf("plant %s: %v", args[0], err)
	}
}

// unplant PATH removes the one entry at PATH (a file, a link or an empty
// directory), once. testscript's rm removes twice, and what a live
// guardian writes in between (a receipt renamed into place, a lock file
// made anew) went with the second removal.
func cmdUnplant(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: unplant PATH")
	}
	if err := os.Remove(ts.MkAbs(args[0])); err != nil {
		ts.Fatalf("unplant: %v", err)
	}
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30} {
		if rest, ok := strings.CutSuffix(s, suffix); ok {
			s, mult = rest, m
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q is not a number of bytes", s)
	}
	return n * mult, nil
}

// outside watch DIR starts recording every access (open, read, write, new
// entry) to DIR, a directory outside the state directory; outside
// untouched asserts that nothing has accessed it since.
func cmdOutside(ts *testscript.TestScript, neg bool, args []string) {
	const key = "outside:fd"
	switch {
	case !neg && len(args) == 2 && args[0] == "watch":
		fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			ts.Fatalf("outside: %v", err)
		}
		ts.Defer(func() { unix.Close(fd) })
		if _, err := unix.InotifyAddWatch(fd, ts.MkAbs(args[1]), unix.IN_ALL_EVENTS); err != nil {
			ts.Fatalf("outside: %v", err)
		}
		ts.Setenv(key, strconv.Itoa(fd))
	case !neg && len(args) == 1 && args[0] == "untouched":
		fd, err := strconv.Atoi(ts.Getenv(key))
		if err != nil {
			ts.Fatalf("outside untouched: no outside watch started")
		}
		buf := make([]byte, 4096)
		var seen []string
		for {
			n, err := unix.Read(fd, buf)
			if n <= 0 || err != nil {
				break
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], "\x00")
				seen = append(seen, fmt.Sprintf("%q mask %#x", name, ev.Mask))
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
		}
		if len(seen) > 0 {
			ts.Fatalf("outside the state directory was accessed: %s", strings.Join(seen, ", "))
		}
	default:
		ts.Fatalf("usage: outside watch DIR | outside untouched")
	}
}

// bounded SECONDS FILE procmon ARGS... runs procmon with the script's
// environment, its stdout into FILE, and fails the script if it has not
// ended within SECONDS (it is then killed: the one process started here).
// It must exit 0, or with ! fail with a non-zero status; the time it took
// is logged.
func cmdBounded(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 || args[2] != "procmon" {
		ts.Fatalf("usage: bounded SECONDS FILE procmon ARGS...")
	}
	secs, err := strconv.Atoi(args[0])
	if err != nil || secs <= 0 {
		ts.Fatalf("bounded: %q is not a number of seconds", args[0])
	}
	bin, err := exec.LookPath("procmon")
	if err != nil {
		ts.Fatalf("bounded: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, bin, args[3:]...)
	c.Args[0] = "procmon"
	c.Dir = ts.Getenv("WORK")
	c.Env = os.Environ()
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "PROCMON_STATE_DIR", "XDG_STATE_HOME", "PROCMON_RUN"} {
		c.Env = append(c.Env, k+"="+ts.Getenv(k))
	}
	var stdout, stderr bytes.Buffer
	c.Stdin, c.Stdout, c.Stderr = strings.NewReader(""), &stdout, &stderr
	start := time.Now()
	err = c.Run()
	took := time.Since(start)
	ts.Logf("bounded: procmon %s took %v", strings.Join(args[3:], " "), took.Round(time.Millisecond))
	if ctx.Err() != nil {
		ts.Fatalf("bounded: procmon %s did not end within %ds", strings.Join(args[3:], " "), secs)
	}
	if werr := os.WriteFile(ts.MkAbs(args[1]), stdout.Bytes(), 0o600); werr != nil {
		ts.Fatalf("bounded: %v", werr)
	}
	var exitErr *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &exitErr):
		ts.Fatalf("bounded: %v", err)
	case err != nil && !neg:
		ts.Fatalf("bounded: procmon failed (%v): %s%s", err, stdout.Bytes(), stderr.Bytes())
	case err == nil && neg:
		ts.Fatalf("bounded: procmon succeeded unexpectedly: %s", stdout.Bytes())
	}
	if strings.Contains(stderr.String(), "goroutine ") {
		ts.Fatalf("bounded: procmon wrote a stack trace: %s", stderr.Bytes())
	}
}

// TestPlantedControlSocketIsNotTrusted puts a socket served by another
// process in place of a live guardian's control socket, answering every
// request with a forged receipt and a current window: cancel refuses it
// (state_unsafe, naming it) instead of answering with the forgery, status
// shows the record's truth, and once the real socket is back cancel
// drains the service as ever.
func TestPlantedControlSocketIsNotTrusted(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	id := startMonitor(t, procmon, "start", "--", "sleeper")
	sock := filepath.Join(stateDir, "monitors", id, state.ControlName)
	if err := os.Rename(sock, sock+".real"); err != nil {
		t.Fatal(err)
	}
	// Bound through a descriptor of the directory: the path itself is
	// longer than a socket address may be.
	mdir, err := os.Open(filepath.Dir(sock))
	if err != nil {
		t.Fatal(err)
	}
	defer mdir.Close()
	l, err := net.Listen("unix", fmt.Sprintf("/proc/self/fd/%d/%s", mdir.Fd(), state.ControlName))
	if err != nil {
		t.Fatal(err)
	}
	forged := `{"receipt":{"status":"exited","reason":"exited","exit_code":0,"signal":null,"signals":[],"group_empty_verified":true,"output_drained":true,"containment":"complete","custody":"guardian","finished_at_ms":1},"custody_until_ms":9999999999999}` + "\n"
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			bufio.NewReader(c).ReadBytes('\n') // the request, as a guardian reads it
			c.Write([]byte(forged))
			c.Close()
		}
	}()

	out, _ := procmon("cancel", id).Output()
	if code := gjson.GetBytes(out, "error.code").String(); code != string(protocol.CodeStateUnsafe) || !strings.Contains(string(out), state.ControlName) {
		t.Fatalf("cancel through a planted socket answered %s", out)
	}
	status := runProcmon(t, procmon, "status", id)
	if s := gjson.GetBytes(status, "status").String(); s != state.StatusRunning || gjson.GetBytes(status, "exit_code").Exists() {
		t.Fatalf("status through a planted socket: %s", status)
	}

	l.Close()
	os.Remove(sock)
	if err := os.Rename(sock+".real", sock); err != nil {
		t.Fatal(err)
	}
	receipt := runProcmon(t, procmon, "cancel", id)
	if gjson.GetBytes(receipt, "status").String() != state.StatusCancelled || !gjson.GetBytes(receipt, "group_empty_verified").Bool() {
		t.Fatalf("cancel once the socket is back: %s", receipt)
	}
	assertNothingLeft(t, stateDir)
}
