package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"procmon/internal/state"
)

// TestLogsSinceATime: logs --since places a time between a service's
// lines by the guardian's time marks: the output written after it is
// shown, and what was written seconds before is not.
func TestLogsSinceATime(t *testing.T) {
	work := t.TempDir()
	stateDir := filepath.Join(work, "state")
	procmon := procmonIn(t, stateDir, work)
	runProcmon(t, procmon, "configure", "--enable")
	id := startMonitor(t, procmon, "start", "--", "sh", "-c",
		`echo early; while [ ! -e go ]; do sleep 0.05; done; echo late; exec sleep 1000`)
	runProcmon(t, procmon, "wait", id, "--output", "early", "--timeout", "30")
	// More than the second a mark covers, so that the two lines are
	// marked apart whatever the machine's load.
	time.Sleep(2500 * time.Millisecond)
	between := time.Now()
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	runProcmon(t, procmon, "wait", id, "--output", "late", "--timeout", "30")

	out := runProcmon(t, procmon, "logs", id, "--since", between.Format(time.RFC3339Nano))
	if text := gjson.GetBytes(out, "text").String(); text != "late\n" {
		t.Errorf("logs --since between the lines: %q, want only the later line", text)
	}
	out = runProcmon(t, procmon, "logs", id, "--since", between.Add(-time.Minute).Format(time.RFC3339Nano))
	if text := gjson.GetBytes(out, "text").String(); text != "early\nlate\n" {
		t.Errorf("logs --since before the start: %q, want all of it", text)
	}
	runProcmon(t, procmon, "cancel", id)
	assertNothingLeft(t, stateDir)
}

// TestLogsStartAtAWholeCharacter: --tail 0, --since 0s and a --since
// whose time mark falls inside a character all start where that
// character begins, so the character is shown once it is whole: never
// lost, never split.
func TestLogsStartAtAWholeCharacter(t *testing.T) {
	work := t.TempDir()
	stateDir := filepath.Join(work, "state")
	procmon := procmonIn(t, stateDir, work)
	runProcmon(t, procmon, "configure", "--enable")

	// The service prints the first byte of € and, once let go, the rest.
	id := startMonitor(t, procmon, "start", "--", "sh", "-c",
		`printf 'abc\342'; while [ ! -e go ]; do sleep 0.05; done; printf '\202\254 def\n'; exec sleep 1000`)
	awaitLogBytes(t, stateDir, id, 4)
	out := runProcmon(t, procmon, "logs", id, "--tail", "0")
	if off, next := gjson.GetBytes(out, "offset").Int(), gjson.GetBytes(out, "next_offset").Int(); off != 3 || next != 3 {
		t.Errorf("logs --tail 0 with € begun: [%d, %d); want [3, 3), before the €", off, next)
	}
	out = runProcmon(t, procmon, "logs", id, "--since", "0s")
	// Within the mtime's slack of the last write --since may start
	// earlier (more, never less), but never inside the €.
	if off := gjson.GetBytes(out, "offset").Int(); off != 3 && off != 0 {
		t.Errorf("logs --since 0s with € begun: offset %d; want 3, before the €", off)
	}
	tail0 := followFrom(t, procmon, id, "--tail", "0")
	since0 := followFrom(t, procmon, id, "--since", "0s")
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	runProcmon(t, procmon, "wait", id, "--output", "def", "--timeout", "30")
	runProcmon(t, procmon, "cancel", id)
	if got := tail0(); got != "€ def\n" {
		t.Errorf("logs -f --tail 0 started before the € was whole: %q; want %q", got, "€ def\n")
	}
	if got := since0(); !strings.HasSuffix(got, "€ def\n") || strings.Contains(got, "\uFFFD") {
		t.Errorf("logs -f --since 0s started before the € was whole: %q; want it to end %q", got, "€ def\n")
	}

	// A time mark that falls inside 😀: --since at that mark starts where
	// 😀 begins. The second half comes more than the second a mark covers
	// after the first, so that it gets a mark of its own.
	os.Remove(filepath.Join(work, "go"))
	id = startMonitor(t, procmon, "start", "--", "sh", "-c",
		`printf 'abc\360\237'; while [ ! -e go ]; do sleep 0.05; done; printf '\230\200def\n'; exec sleep 1000`)
	awaitLogBytes(t, stateDir, id, 5)
	time.Sleep(2500 * time.Millisecond)
	between := time.Now()
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	runProcmon(t, procmon, "wait", id, "--output", "def", "--timeout", "30")
	out = runProcmon(t, procmon, "logs", id, "--since", between.Format(time.RFC3339Nano))
	if text, off := gjson.GetBytes(out, "text").String(), gjson.GetBytes(out, "offset").Int(); text != "😀def\n" || off != 3 {
		t.Errorf("logs --since the second half of 😀: %q at %d; want %q at 3", text, off, "😀def\n")
	}
	runProcmon(t, procmon, "cancel", id)
	assertNothingLeft(t, stateDir)
}

// awaitLogBytes waits until monitor id's log holds at least n bytes.
func awaitLogBytes(t *testing.T, stateDir, id string, n int64) {
	t.Helper()
	log := filepath.Join((&state.Dir{Path: stateDir}).MonitorDir(id), state.LogName)
	for deadline := time.Now().Add(patience); ; time.Sleep(20 * time.Millisecond) {
		if fi, err := os.Stat(log); err == nil && fi.Size() >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the log did not reach %d bytes within %v", id, n, patience)
		}
	}
}

// followFrom starts `procmon logs -f` on monitor id with the flags given
// and returns once it has chosen where to start (it is watching for
// changes); the function returned waits for it to end, which it does
// once the monitor has, and returns what it wrote.
func followFrom(t *testing.T, procmon func(args ...string) *exec.Cmd, id string, flags ...string) func() string {
	t.Helper()
	var stdout bytes.Buffer
	c := procmon(append([]string{"logs", "-f", id}, flags...)...)
	c.Stdout = &stdout
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	end := func() string {
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("logs -f %v: %v", flags, err)
			}
		case <-time.After(patience):
			c.Process.Kill()
			<-done
			t.Errorf("logs -f %v did not end within %v of its monitor", flags, patience)
		}
		return stdout.String()
	}
	for deadline := time.Now().Add(patience); !watching(c.Process.Pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			end()
			t.Fatalf("logs -f %v was not watching within %v", flags, patience)
		}
	}
	return end
}

// watching reports whether process pid holds the descriptor of a watch
// for changes: a subscription on a guardian's control socket, or inotify.
func watching(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	fds, _ := os.ReadDir(dir)
	for _, fd := range fds {
		target, _ := os.Readlink(dir + fd.Name())
		if target == "anon_inode:inotify" || strings.HasPrefix(target, "socket:") {
			return true
		}
	}
	return false
}

// TestLogsFollowInterrupted: logs -f stopped by Ctrl-C, SIGTERM or SIGHUP
// exits 130, as its man page and every interrupted command say, with no
// more output; the service keeps running.
func TestLogsFollowInterrupted(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	id := startMonitor(t, procmon, "start", "--", "sleeper")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		var stdout, stderr bytes.Buffer
		c := procmon("logs", "-f", id)
		c.Stdout, c.Stderr = &stdout, &stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(patience); !watching(c.Process.Pid); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				c.Process.Kill()
				c.Wait()
				t.Fatalf("logs -f was not watching within %v", patience)
			}
		}
		c.Process.Signal(sig)
		err := c.Wait()
		if status := c.ProcessState.ExitCode(); status != 130 {
			t.Errorf("logs -f stopped by %v: exit status %d (%v), want 130; stderr %q", sig, status, err, stderr.String())
		}
		if stderr.Len() > 0 {
			t.Errorf("logs -f stopped by %v said %q on stderr; want nothing", sig, stderr.String())
		}
	}
	if s := gjson.GetBytes(runProcmon(t, procmon, "status", id), "status").String(); s != "running" {
		t.Errorf("the monitor after its logs -f was stopped: %s, want running", s)
	}
	runProcmon(t, procmon, "cancel", id)
	assertNothingLeft(t, stateDir)
}

// TestLogsFollowFromPastTheEnd: logs -f --offset N, with N past what the
// service has written yet, shows the text from byte N once the stream has
// come that far, as logs --offset N shows it then. It used to start at
// the end of the stream as it stood, showing bytes the offset skips.
func TestLogsFollowFromPastTheEnd(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	// 0123456789, a pause, then ABCDEFGHIJ and a newline.
	id := startMonitor(t, procmon, "start", "--", "printer", "-split", "5s", "0123456789ABCDEFGHIJ")
	runProcmon(t, procmon, "wait", id, "--output", "0123456789", "--timeout", "30s")
	follow := procmon("logs", "-f", "--offset", "15", id)
	followed, err := follow.Output()
	if err != nil {
		t.Fatalf("logs -f --offset 15: %v", err)
	}
	if got := gjson.GetBytes(runProcmon(t, procmon, "logs", "--offset", "15", id), "text").String(); string(followed) != got || got != "FGHIJ\n" {
		t.Errorf("logs -f --offset 15 showed %q; logs --offset 15 shows %q, want %q", followed, got, "FGHIJ\n")
	}
	assertNothingLeft(t, stateDir)
}
