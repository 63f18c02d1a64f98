package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/tidwall/gjson"
	"golang.org/x/sys/unix"

	"procmon/internal/proc"
	"procmon/internal/protocol"
	"procmon/internal/state"
)

// What the scripts and the Go tests share: running procmon against a state
// directory of the test's own, reading what it recorded, and proving that
// nothing it started is left running.

// patience bounds every wait in a test: generous, because the machines
// are shared; a wait that passes it is a failure, never an assertion.
const patience = 30 * time.Second

// procmonIn returns commands that run this test binary as procmon in cwd
// with the state directory stateDir, whose leftovers are killed at the
// test's end.
func procmonIn(t *testing.T, stateDir, cwd string) func(args ...string) *exec.Cmd {
	t.Cleanup(func() { killLeftovers(stateDir) })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return func(args ...string) *exec.Cmd {
		c := exec.Command(exe, args...)
		c.Args[0] = "procmon"
		c.Dir = cwd
		c.Env = append(os.Environ(), "PROCMON_STATE_DIR="+stateDir, "PROCMON_RUN=", "XDG_STATE_HOME=")
		return c
	}
}

// hostSettings are runner settings for a test: monitors on, no work
// duration or monitor timeout, and these.
type hostSettings struct {
	graceSeconds, maxOutputBytes, commandLimit int
}

// storeSettings stores s with procmon configure.
func storeSettings(t *testing.T, procmon func(args ...string) *exec.Cmd, s hostSettings) {
	t.Helper()
	c := procmon("configure")
	c.Stdin = strings.NewReader(fmt.Sprintf(`{"sandbox": {"mode": "host", "process_monitor": true,
		"work_duration": {"protocol": "forge-work-duration-v2", "timeout_seconds": null},
		"monitor_owner_grace_seconds": %d, "monitor_timeout_seconds": null,
		"max_output_bytes": %d, "command_limit": %d}}`, s.graceSeconds, s.maxOutputBytes, s.commandLimit))
	runProcmonCmd(t, c)
}

// runProcmon runs a procmon command that must succeed and returns its stdout.
func runProcmon(t *testing.T, procmon func(args ...string) *exec.Cmd, args ...string) []byte {
	t.Helper()
	return runProcmonCmd(t, procmon(args...))
}

// runProcmonCmd runs c, a procmon command that must succeed (with its
// stdin set, say), and returns its stdout.
func runProcmonCmd(t *testing.T, c *exec.Cmd) []byte {
	t.Helper()
	out, err := c.Output()
	if err != nil {
		t.Fatalf("procmon %v: %v\n%s", c.Args[1:], err, out)
	}
	return out
}

// startMonitor runs a procmon start command line that must succeed and
// returns the id of the monitor it started.
func startMonitor(t *testing.T, procmon func(args ...string) *exec.Cmd, args ...string) string {
	t.Helper()
	return startedID(t, runProcmon(t, procmon, args...))
}

// startedID returns the monitor id that a start answered with, out.
func startedID(t *testing.T, out []byte) string {
	t.Helper()
	id := gjson.GetBytes(out, "monitor_id").String()
	if id == "" {
		t.Fatalf("start answered %s: no monitor_id", out)
	}
	return id
}

// recordOf reads monitor id's record, which must exist and name a guardian.
func recordOf(t *testing.T, stateDir, id string) *state.Monitor {
	t.Helper()
	m, err := (&state.Dir{Path: stateDir}).LoadMonitor(id)
	if err != nil {
		t.Fatal(err)
	}
	if m.GuardianPID <= 1 {
		t.Fatalf("record of %s names guardian pid %d", id, m.GuardianPID)
	}
	return m
}

// awaitRecordedReceipt waits until monitor id's record holds a receipt,
// and returns it; the test fails, saying what should have drained the
// monitor (drainedBy), if none is there within patience.
func awaitRecordedReceipt(t *testing.T, stateDir, id, drainedBy string) *state.Receipt {
	t.Helper()
	for deadline := time.Now().Add(patience); ; time.Sleep(20 * time.Millisecond) {
		if m := recordOf(t, stateDir, id); m.Receipt != nil {
			return m.Receipt
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not drained %s within %v", id, drainedBy, patience)
		}
	}
}

// assertNothingLeft fails the test unless every process the monitors of
// stateDir started has ended, waiting for each up to patience.
func assertNothingLeft(t *testing.T, stateDir string) {
	t.Helper()
	if problems := leftovers(stateDir, true); len(problems) > 0 {
		t.Fatalf("processes left behind:\n%s", strings.Join(problems, "\n"))
	}
}

// leftovers lists what the monitors of a state directory left running,
// waiting up to patience for each to end when wait is set.
func leftovers(dir string, waitForExit bool) []string {
	d := &state.Dir{Path: dir}
	ids, _ := d.MonitorIDs()
	var problems []string
	recorded := map[int]bool{}
	for _, id := range ids {
		m, err := d.LoadMonitor(id)
		if protocol.HasCode(err, protocol.CodeUnknownMonitor) {
			// No start is in progress when a test checks: a directory
			// without a record was left by a failed or refused start.
			problems = append(problems, fmt.Sprintf("%s: a monitor directory without a record was left behind", id))
			continue
		}
		if err != nil {
			continue
		}
		check := func(what string, pid int, ticks uint64) {
			if !proc.Matches(pid, ticks) {
				return
			}
			if waitForExit && awaitGone(pid, ticks) {
				return
			}
			problems = append(problems, fmt.Sprintf("%s: %s pid %d still running", id, what, pid))
		}
		recorded[m.GuardianPID] = true
		check("guardian", m.GuardianPID, m.GuardianStartTicks)
		check("child", m.PID, m.ChildStartTicks)
		escapees, _ := proc.LostEscapees(m.EscapedSessions)
		for _, p := range append(proc.LostMembers(m.GuardianPID, m.GuardianStartTicks), escapees...) {
			check(fmt.Sprintf("session %d member", m.GuardianPID), p.PID, p.StartTicks)
		}
	}
	// A guardian of a start that never recorded its monitor is found by
	// its command line.
	for _, pid := range guardiansOf(dir) {
		if ticks, err := proc.StartTicks(pid); err == nil && !recorded[pid] && !(waitForExit && awaitGone(pid, ticks)) {
			problems = append(problems, fmt.Sprintf("guardian pid %d of no recorded monitor still running", pid))
		}
	}
	return problems
}

// guardiansOf lists the live guardians started for the state directory
// dir, found by their command line (procmon __guardian STATE_DIR
// MONITOR_ID); a test's state directory is its own temp directory.
func guardiansOf(dir string) []int {
	var found []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) >= 3 && args[1] == proc.GuardianArg && args[2] == dir {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				found = append(found, pid)
			}
		}
	}
	return found
}

// killLeftovers kills what a failed test may have left running for the
// state directory dir: every guardian started for it, and every process
// of a recorded guardian's session or of a session it recorded its
// service made, each checked against its start time.
func killLeftovers(dir string) {
	for _, pid := range guardiansOf(dir) {
		unix.Kill(pid, unix.SIGKILL)
	}
	d := &state.Dir{Path: dir}
	ids, _ := d.MonitorIDs()
	for _, id := range ids {
		m, err := d.LoadMonitor(id)
		if err != nil {
			continue
		}
		if proc.Matches(m.GuardianPID, m.GuardianStartTicks) {
			unix.Kill(m.GuardianPID, unix.SIGKILL)
		}
		for _, p := range proc.LostMembers(m.GuardianPID, m.GuardianStartTicks) {
			if proc.Matches(p.PID, p.StartTicks) {
				unix.Kill(p.PID, unix.SIGKILL)
			}
		}
	}
}

// awaitGone waits for a process to end, through a pidfd: a reused pid
// cannot pass for the process. It reports whether it ended in time.
func awaitGone(pid int, startTicks uint64) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return true // no such process
	}
	defer unix.Close(fd)
	if !proc.Matches(pid, startTicks) {
		return true
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for deadline := time.Now().Add(patience); time.Now().Before(deadline); {
		n, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds())+1)
		if err == unix.EINTR {
			continue
		}
		return n > 0 || !proc.Matches(pid, startTicks)
	}
	return !proc.Matches(pid, startTicks)
}

// procStat is what the tests read of a process's /proc/PID/stat line.
type procStat struct {
	state     string // R, S, D, T (stopped), Z...
	ppid, sid int
}

// statOf reads process pid's stat line; ok is false once it is gone.
func statOf(pid int) (st procStat, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := bytes.LastIndexByte(b, ')') // the command name may hold spaces
	if err != nil || i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:])) // state, ppid, pgrp, session, ...
	if len(f) < 4 {
		return procStat{}, false
	}
	st.state = f[0]
	st.ppid, _ = strconv.Atoi(f[1])
	st.sid, _ = strconv.Atoi(f[3])
	return st, true
}

// awaitStopped waits until process pid is in the stopped state: kill only
// queues SIGSTOP, and a fault point stops its own process.
func awaitStopped(pid int) error {
	for deadline := time.Now().Add(patience); ; time.Sleep(time.Millisecond) {
		st, ok := statOf(pid)
		if !ok {
			return fmt.Errorf("process %d ended before it stopped", pid)
		}
		if st.state == "T" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d did not stop within %v", pid, patience)
		}
	}
}

// stopOutsideLock stops a monitor's guardian at a moment it does not hold
// the monitor's lock, in mdir: stopped while holding it, it would keep
// every other writer out until it runs again. A lock that is not a
// regular file (planted by a test) is one the guardian never holds, and
// is not opened: flock would follow a link.
func stopOutsideLock(pid int, startTicks uint64, mdir string) error {
	path := filepath.Join(mdir, "lock")
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		if err := unix.Kill(pid, unix.SIGSTOP); err != nil {
			return err
		}
		return awaitStopped(pid)
	}
	lock := flock.New(path)
	for deadline := time.Now().Add(patience); time.Now().Before(deadline); {
		if !proc.Matches(pid, startTicks) {
			return fmt.Errorf("guardian %d is not running", pid)
		}
		if err := unix.Kill(pid, unix.SIGSTOP); err != nil {
			return err
		}
		if err := awaitStopped(pid); err != nil {
			return err
		}
		if ok, err := lock.TryLock(); err == nil && ok {
			lock.Unlock()
			return nil
		}
		unix.Kill(pid, unix.SIGCONT)
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("guardian %d kept its lock for %v", pid, patience)
}

// awaitExit returns how c ended, exited being where the caller's
// goroutine sends c.Wait's answer. One that has not ended within bound is
// killed, and the test fails with what, and detail's text when given.
func awaitExit(t *testing.T, c *exec.Cmd, exited <-chan error, bound time.Duration, what string, detail func() string) error {
	t.Helper()
	select {
	case err := <-exited:
		return err
	case <-time.After(bound):
		c.Process.Kill()
		<-exited
		if detail != nil {
			what += "; " + detail()
		}
		t.Fatal(what)
		return nil
	}
}

// lockedBuffer is a buffer a command writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
