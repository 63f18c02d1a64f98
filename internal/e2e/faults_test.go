//go:build faultpoints

package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// The fault suite drives the real binary (this test binary, built with the
// faultpoints tag, runs as procmon and as its guardians) and kills or
// stops procmon processes at the points of custody that package fault
// marks, and at random moments. After each fault it checks what custody
// promises:
//   - every command answers one JSON object, with the exit status of its
//     error code;
//   - no exit code is shown without a receipt the guardian verified;
//   - no monitor goes from a terminal status or needs_reconciliation back
//     to running;
//   - no half-made monitor directory breaks list or status;
//   - once what is left is settled (cancel, reconcile), no process of the
//     test is alive, whether a record names it or not.
//
// Random faults come from -fault.seed (from the clock when 0), which a
// failure prints. FAULTS_SOAK=10m repeats the random faults for that long.

var faultSeed = flag.Uint64("fault.seed", 0, "seed of the random faults (0: from the clock)")

// faultLab is one state directory and the commands run in it.
type faultLab struct {
	t       *testing.T
	state   string
	procmon func(args ...string) *exec.Cmd
	mu      sync.Mutex
	seen    map[string][]string // the statuses each monitor was shown with, in order
}

// newFaultLab makes a state directory configured with an ownership grace
// of graceSeconds and a budget of limit commands per run.
func newFaultLab(t *testing.T, graceSeconds, limit int) *faultLab {
	return newFaultLabOn(t, "", graceSeconds, limit, 1000000)
}

// newFaultLabOn is newFaultLab with the state directory on a file system
// of size bytes of its own (a tmpfs, mounted by the caller's mount
// namespace) unless size is empty, and an output cap of maxOutput bytes.
func newFaultLabOn(t *testing.T, size string, graceSeconds, limit, maxOutput int) *faultLab {
	root := t.TempDir()
	l := &faultLab{t: t, state: filepath.Join(root, "state"), seen: map[string][]string{}}
	cwd := filepath.Join(root, "work")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	if size != "" {
		if err := os.Mkdir(l.state, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", l.state, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
			t.Fatalf("mount a tmpfs for the state directory: %v", err)
		}
		t.Cleanup(func() { unix.Unmount(l.state, unix.MNT_DETACH) })
	}
	// Cleanups run last first: the guardians (procmonIn's) are killed
	// before whatever else of the lab is left.
	t.Cleanup(func() {
		for _, pid := range l.marked() {
			unix.Kill(pid, unix.SIGKILL)
		}
	})
	l.procmon = procmonIn(t, l.state, cwd)
	storeSettings(t, l.procmon, hostSettings{graceSeconds: graceSeconds, maxOutputBytes: maxOutput, commandLimit: limit})
	return l
}

// command is procmon args in the lab; faultAt names the fault point at
// which the command, and any guardian it launches, stops itself.
func (l *faultLab) command(faultAt string, args ...string) *exec.Cmd {
	c := l.procmon(args...)
	if faultAt != "" {
		c.Env = append(c.Env, "PROCMON_FAULT_AT="+faultAt)
	}
	return c
}

// run runs procmon args and returns its one answer and exit status.
func (l *faultLab) run(args ...string) (gjson.Result, int) {
	return l.answer(l.command("", args...))
}

// answer runs c to its end and checks that it answered one JSON object
// with the exit status its error code (if any) calls for.
func (l *faultLab) answer(c *exec.Cmd) (gjson.Result, int) {
	l.t.Helper()
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	c.Run()
	status := c.ProcessState.ExitCode()
	return l.checkAnswer(c.Args[1:], out.Bytes(), errOut.Bytes(), status), status
}

// background starts c and returns what ends it: it waits for c and, if c
// exited (rather than being killed), checks its answer and returns it.
func (l *faultLab) background(c *exec.Cmd) (end func() (gjson.Result, bool)) {
	l.t.Helper()
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Start(); err != nil {
		l.t.Fatal(err)
	}
	return func() (gjson.Result, bool) {
		l.t.Helper()
		c.Wait()
		if !c.ProcessState.Exited() {
			return gjson.Result{}, false
		}
		return l.checkAnswer(c.Args[1:], out.Bytes(), errOut.Bytes(), c.ProcessState.ExitCode()), true
	}
}

// startMonitor starts argv (a procmon start command line) that must
// succeed, and returns the monitor's id and record.
// stopGuardian stops the guardian of monitor id (m) with SIGSTOP, at a
// moment it does not hold the monitor's lock.
func (l *faultLab) stopGuardian(id string, m *state.Monitor) {
	l.t.Helper()
	if err := stopOutsideLock(m.GuardianPID, m.GuardianStartTicks, (&state.Dir{Path: l.state}).MonitorDir(id)); err != nil {
		l.t.Fatal(err)
	}
}

// awaitLapse waits until status shows monitor id, whose guardian is
// stopped, as needing reconciliation.
func (l *faultLab) awaitLapse(id string) {
	l.t.Helper()
	for deadline := time.Now().Add(patience); l.status(id).Get("status").String() != state.StatusNeedsReconciliation; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			l.t.Fatalf("a stopped guardian still holds custody after %v", patience)
		}
	}
}

func (l *faultLab) startMonitor(faultAt string, args ...string) (string, *state.Monitor) {
	l.t.Helper()
	r, _ := l.answer(l.command(faultAt, args...))
	id := r.Get("monitor_id").String()
	m, err := (&state.Dir{Path: l.state}).LoadMonitor(id)
	if err != nil {
		l.t.Fatalf("start answered %s: %v", r.Raw, err)
	}
	return id, m
}

// awaitReceipt shows a monitor until it has a receipt, and returns it.
func (l *faultLab) awaitReceipt(id string) gjson.Result {
	l.t.Helper()
	for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
		s := l.status(id)
		if s.Get("receipt").Exists() {
			return s
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("no receipt after %v: %s", patience, s.Raw)
		}
	}
}

func (l *faultLab) checkAnswer(args []string, out, errOut []byte, status int) gjson.Result {
	l.t.Helper()
	line, rest, _ := bytes.Cut(out, []byte{'\n'})
	r := gjson.ParseBytes(line)
	if len(rest) > 0 || !gjson.ValidBytes(line) || !r.IsObject() {
		l.t.Fatalf("procmon %v answered %q (stderr %q, exit %d): want one JSON object", args, out, errOut, status)
	}
	want := 0
	if code := r.Get("error.code"); code.Exists() {
		want = protocol.Code(code.String()).ExitStatus()
	}
	if status != want {
		l.t.Fatalf("procmon %v exited %d with %s: want %d", args, status, line, want)
	}
	if r.Get("exit_code").Exists() || r.Get("signal").Exists() {
		l.checkReceipt(args, r)
	}
	return r
}

// checkReceipt: an exit code or signal comes only with a receipt the
// guardian verified; a reconciled receipt shows neither.
func (l *faultLab) checkReceipt(args []string, r gjson.Result) {
	l.t.Helper()
	receipt := r
	if r.Get("receipt").Exists() {
		receipt = r.Get("receipt")
	}
	hasExit := r.Get("exit_code").Type == gjson.Number || r.Get("signal").Type == gjson.String
	if !hasExit {
		return
	}
	if receipt.Get("custody").String() != state.CustodyGuardian || !receipt.Get("group_empty_verified").Bool() && receipt.Get("kill_unconfirmed").Raw == "" {
		l.t.Fatalf("procmon %v shows an exit without a verified receipt: %s", args, r.Raw)
	}
}

// status shows a monitor and records the status it was shown with; a
// monitor that was terminal or needed reconciliation is never running
// again.
func (l *faultLab) status(id string) gjson.Result {
	l.t.Helper()
	r, _ := l.run("status", id)
	if r.Get("error").Exists() {
		return r
	}
	s := r.Get("status").String()
	l.mu.Lock()
	defer l.mu.Unlock()
	past := l.seen[id]
	for _, p := range past {
		terminal := p != state.StatusRunning && p != state.StatusSettling && p != state.StatusNeedsReconciliation
		if p != state.StatusRunning && s == state.StatusRunning || terminal && s != p {
			l.t.Fatalf("monitor %s was %s, then %s (statuses seen: %v)", id, p, s, past)
		}
	}
	l.seen[id] = append(past, s)
	return r
}

// settled reports whether a monitor was last shown with a receipt's
// status, which it keeps.
func (l *faultLab) settled(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := l.seen[id]
	if len(seen) == 0 {
		return false
	}
	last := seen[len(seen)-1]
	return last != state.StatusRunning && last != state.StatusSettling && last != state.StatusNeedsReconciliation
}

// monitors lists every monitor of the lab; list must work whatever a
// fault left.
func (l *faultLab) monitors() []string {
	l.t.Helper()
	r, _ := l.run("list", "--all-runs")
	var ids []string
	for _, row := range r.Get("monitors").Array() {
		if row.Get("error").Exists() {
			l.t.Fatalf("list shows a broken monitor: %s", row.Raw)
		}
		ids = append(ids, row.Get("monitor_id").String())
	}
	return ids
}

// settle ends what a fault left: a running monitor is cancelled, one that
// needs reconciliation is reconciled, one that settles is waited for.
// Then nothing of the lab may be left running, and no monitor directory
// without a record (list removes those abandoned).
func (l *faultLab) settle() {
	l.t.Helper()
	for _, id := range l.monitors() {
		if l.settled(id) {
			continue
		}
		for deadline := time.Now().Add(patience); ; time.Sleep(20 * time.Millisecond) {
			s := l.status(id).Get("status").String()
			switch s {
			case state.StatusRunning:
				l.run("cancel", "--grace", "1", id)
				continue
			case state.StatusNeedsReconciliation:
				l.run("reconcile", id)
				continue
			case state.StatusSettling:
				if time.Now().Before(deadline) {
					continue
				}
			}
			if s == state.StatusSettling || s == "" {
				l.t.Fatalf("monitor %s is %q after %v", id, s, patience)
			}
			break
		}
	}
	l.monitors() // sweeps directories abandoned before any record
	d := &state.Dir{Path: l.state}
	ids, _ := d.MonitorIDs()
	for _, id := range ids {
		if _, err := d.LoadMonitor(id); err != nil {
			l.t.Fatalf("monitor directory %s left unreadable: %v", id, err)
		}
	}
	l.nothingLeft()
}

// nothingLeft asserts that no guardian of the lab and no process started
// from it (found by the state directory in its environment, which every
// service inherits) outlives its bound.
func (l *faultLab) nothingLeft() {
	l.t.Helper()
	assertNothingLeft(l.t, l.state)
	deadline := time.Now().Add(patience)
	for {
		left := l.marked()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var names []string
			for _, pid := range left {
				cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
				names = append(names, fmt.Sprintf("%d %q", pid, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
			}
			l.t.Fatalf("processes started from the lab are still running, named by no record or not drained:\n%s", strings.Join(names, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// marked lists the live processes whose environment names the lab's state
// directory: every service started in the lab, and any procmon command
// still running in it.
func (l *faultLab) marked() []int {
	mark := []byte("\x00PROCMON_STATE_DIR=" + l.state + "\x00")
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	var out []int
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(append([]byte{0}, env...), mark) {
			continue
		}
		if ticks, err := proc.StartTicks(pid); err == nil && proc.Matches(pid, ticks) {
			out = append(out, pid)
		}
	}
	return out
}

// awaitSession waits until the session led by sid holds n processes or
// more, its leader included.
func awaitSession(t *testing.T, sid, n int) {
	t.Helper()
	for deadline := time.Now().Add(patience); ; time.Sleep(2 * time.Millisecond) {
		count := 0
		procs, _ := os.ReadDir("/proc")
		for _, p := range procs {
			if pid, err := strconv.Atoi(p.Name()); err == nil {
				if st, ok := statOf(pid); ok && st.sid == sid {
					count++
				}
			}
		}
		if count >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %d holds %d processes after %v, want %d", sid, count, patience, n)
		}
	}
}

// guardianOf returns the guardian a start launched: the launcher's child.
func guardianOf(t *testing.T, launcher int) int {
	t.Helper()
	for deadline := time.Now().Add(patience); ; time.Sleep(time.Millisecond) {
		if kids := childrenOf(launcher); len(kids) > 0 {
			return kids[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("start %d launched no guardian", launcher)
		}
	}
}

func childrenOf(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// leakyService leaves two children in its group behind its own exec, the
// processes that a guardian lost before its record would leak.
var leakyService = []string{"start", "--", "sh", "-c", "sleeper & sleeper & exec sleeper"}

// TestFaultsEscapeeAfterGuardianKill kills the guardian of a service whose
// descendant left its session with setsid (and ignores SIGTERM), once a
// heartbeat has recorded that session. Out of the guardian's session, the
// escapee was out of reconcile's sight and outlived it; reconcile now
// stops the sessions the record names.
func TestFaultsEscapeeAfterGuardianKill(t *testing.T) {
	l := newFaultLab(t, 3, 20) // heartbeats every second
	id, m := l.startMonitor("", "start", "--", "forker", "pids.txt")
	escapee, ticks := l.forkerEscapee("pids.txt")
	l.awaitEscapedSession(id, func(e state.EscapedSession) bool {
		return e.SID == escapee && slices.Contains(e.Witnesses, state.Witness{PID: escapee, StartTicks: ticks})
	})
	l.loseGuardian(id, m)
	r, _ := l.run("reconcile", id)
	if r.Get("reason").String() != "reconciled" || !r.Get("group_empty_verified").Bool() {
		t.Fatalf("reconcile answered %s", r.Raw)
	}
	if proc.Matches(escapee, ticks) {
		t.Fatalf("the escapee %d outlived the reconcile of %s: %s", escapee, id, r.Raw)
	}
	l.settle()
}

// TestFaultsEscapeeBeforeFirstHeartbeat kills the guardian of a service
// whose descendant left its session with setsid (and ignores SIGTERM) as
// the service started, long before the guardian's first heartbeat. The
// guardian records a session as soon as a look finds it, and looks often
// while the service is young, so the record names it before any
// heartbeat; recorded by the heartbeat alone, it was out of reconcile's
// sight (whose receipt still said the group was verified empty) and
// outlived it.
func TestFaultsEscapeeBeforeFirstHeartbeat(t *testing.T) {
	l := newFaultLab(t, 60, 20) // the first heartbeat 20 s after the start
	id, m := l.startMonitor("", "start", "--", "forker", "pids.txt")
	escapee, ticks := l.forkerEscapee("pids.txt")
	l.awaitEscapedSession(id, func(e state.EscapedSession) bool {
		return e.SID == escapee && slices.Contains(e.Witnesses, state.Witness{PID: escapee, StartTicks: ticks})
	})
	if rec, err := (&state.Dir{Path: l.state}).LoadMonitor(id); err != nil || rec.HeartbeatSeq != 0 {
		t.Fatalf("the session was recorded only with a heartbeat (%v): %+v", err, rec)
	}
	l.loseGuardian(id, m)
	r, _ := l.run("reconcile", id)
	if r.Get("reason").String() != "reconciled" || !r.Get("group_empty_verified").Bool() || r.Get("containment").String() != state.ContainmentGroupOnly {
		t.Fatalf("reconcile answered %s", r.Raw)
	}
	if proc.Matches(escapee, ticks) {
		t.Fatalf("the escapee %d outlived the reconcile of %s: %s", escapee, id, r.Raw)
	}
	l.settle()
}

// forkerEscapee waits for the forker of the lab (see fakes_test.go) to
// write its pids to file, in the lab's working directory, and returns its
// escapee's pid and start time.
func (l *faultLab) forkerEscapee(file string) (int, uint64) {
	l.t.Helper()
	for deadline := time.Now().Add(patience); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(filepath.Dir(l.state), "work", file))
		if f := strings.Fields(string(b)); len(f) == 3 {
			escapee, _ := strconv.Atoi(f[2])
			ticks, err := proc.StartTicks(escapee)
			if err != nil {
				l.t.Fatalf("forker's escapee %d: %v", escapee, err)
			}
			return escapee, ticks
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("forker wrote no pids in %v", patience)
		}
	}
}

// TestFaultsReconcileSparesAReusedSession: a heartbeat records the
// session a descendant made (sid X); the guardian is lost; the escapee
// ends on its own, so the kernel may hand the number X out again. Someone
// else's daemon (double fork: an intermediate at pid X calls setsid,
// forks, exits) then lives in a session numbered X with no process at pid
// X. reconcile must not signal it: procmon never started it.
// (Root only: the pid counter is set through ns_last_pid to make the
// reuse happen now rather than after a wrap of pid_max.)
func TestFaultsReconcileSparesAReusedSession(t *testing.T) {
	// Whether the counter can be set, tried by setting it where it is.
	if last, err := os.ReadFile("/proc/sys/kernel/ns_last_pid"); err != nil || os.WriteFile("/proc/sys/kernel/ns_last_pid", last, 0) != nil {
		t.Skip("the pid counter cannot be set here (/proc/sys/kernel/ns_last_pid needs root)")
	}
	// Orphans come to this test, which reaps them (pid 1 here does not).
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	reap := func(pids ...int) {
		for _, pid := range pids {
			for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
				var ws unix.WaitStatus
				if n, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); n == pid || err == unix.ECHILD {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d was never reaped", pid)
				}
			}
		}
	}
	l := newFaultLab(t, 3, 20)
	id, m := l.startMonitor("", "start", "--", "forker", "pids.txt")
	var pids []int
	for deadline := time.Now().Add(patience); len(pids) < 3; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(filepath.Dir(l.state), "work", "pids.txt"))
		pids = pids[:0]
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			pids = append(pids, n)
		}
		if time.Now().After(deadline) {
			t.Fatalf("forker wrote no pids in %v", patience)
		}
	}
	escapee := pids[2]
	l.awaitEscapedSession(id, func(e state.EscapedSession) bool { return e.SID == escapee })
	l.loseGuardian(id, m)
	reap(m.GuardianPID)
	// What the service started ends before anyone reconciles.
	for _, p := range pids {
		unix.Kill(p, unix.SIGKILL)
	}
	reap(pids...)

	// Someone else's daemon, in a new session that the kernel numbers X.
	os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(escapee-1)), 0)
	c := exec.Command("/bin/sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!")
	c.Env = []string{"PATH=/usr/bin:/bin"}
	c.SysProcAttr = &unix.SysProcAttr{Setsid: true}
	out, err := c.Output()
	daemon, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	if daemon > 1 {
		defer func() { unix.Kill(daemon, unix.SIGKILL); reap(daemon) }()
	}
	if err != nil || daemon <= 1 {
		t.Fatalf("the foreign daemon did not start: %v, %q", err, out)
	}
	if c.Process.Pid != escapee {
		t.Skipf("pid %d was taken by someone else before the daemon (got %d)", escapee, c.Process.Pid)
	}
	ticks, err := proc.StartTicks(daemon)
	if err != nil {
		t.Fatal(err)
	}

	r, _ := l.run("reconcile", id)
	if !proc.Matches(daemon, ticks) {
		t.Fatalf("reconcile of %s killed pid %d (session %d), which procmon never started: %s", id, daemon, escapee, r.Raw)
	}
	// A recorded session that holds processes it cannot prove its own:
	// something may be left.
	if r.Get("containment").String() != state.ContainmentIncomplete {
		t.Errorf("reconcile answered %s: want containment incomplete", r.Raw)
	}
	l.settle()
}

// TestFaultsEscapeeOfAZombieLeader: the service forks L, which calls
// setsid, starts G in its session and exits; the service never reaps L,
// so L stays a zombie at the session's number. A zombie still holds its
// session: it may witness it, and the pid of the number is no other
// process's. Once the guardian is lost, reconcile stops G; bounded by the
// zombie's start, as if another process held the number, it left G
// running and its receipt said nothing was left.
func TestFaultsEscapeeOfAZombieLeader(t *testing.T) {
	l := newFaultLab(t, 3, 20)
	id, m := l.startMonitor("", "start", "--", "sh", "-c",
		`setsid sh -c 'sleep 0.2; sleeper escapee & echo $! > esc.txt; exit 0' & exec sleeper`)
	var g int
	for deadline := time.Now().Add(patience); g == 0; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(filepath.Dir(l.state), "work", "esc.txt"))
		g, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if g == 0 && time.Now().After(deadline) {
			t.Fatalf("the escapee wrote no pid in %v", patience)
		}
	}
	ticks, err := proc.StartTicks(g)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := statOf(g)
	if !ok {
		t.Fatalf("escapee %d is gone", g)
	}
	l.awaitEscapedSession(id, func(e state.EscapedSession) bool { return e.SID == st.sid })
	if leader, ok := statOf(st.sid); !ok || leader.state != "Z" {
		t.Fatalf("the session's leader %d is %+v: want a zombie", st.sid, leader)
	}
	l.loseGuardian(id, m)
	r, _ := l.run("reconcile", id)
	if proc.Matches(g, ticks) {
		t.Fatalf("escapee %d of session %d, whose leader is a zombie, outlived reconcile: %s", g, st.sid, r.Raw)
	}
	l.settle()
}

// TestFaultsReconcileLetsNoHandlerRun: a member of a service whose
// guardian is lost answers SIGTERM by starting a process in a session of
// its own (setsid), then exits. Nothing recorded that session, and the
// process, an orphan, is below nothing that is left: reconcile's SIGTERM
// made a process that nothing names, and its receipt said that the group
// was verified empty while that process ran on. reconcile now stops every
// process left before it kills any, so no handler runs.
func TestFaultsReconcileLetsNoHandlerRun(t *testing.T) {
	l := newFaultLab(t, 30, 20)
	id, m := l.startMonitor("", "start", "--", "sh", "-c", "escaper term pids.txt & exec sleeper")
	l.escaperPids("pids.txt", 1)
	l.loseGuardian(id, m)
	r, _ := l.run("reconcile", id)
	l.checkFrozenThenKilled(r, 1)
	if pids := l.escaperPids("pids.txt", 1); len(pids) > 1 {
		t.Errorf("the member's SIGTERM handler ran during the reconcile of %s: it started %v", id, pids[1:])
	}
	l.settle()
}

// TestFaultsReconcileFindsAnEscapeeBelowAMember: once the guardian is
// lost, a member (which ignores SIGTERM) starts a process in a session of
// its own, which no look of the guardian could record, and stays its
// parent. In no session reconcile knew, that process outlived it, under a
// receipt that said the group was verified empty. reconcile now stops the
// descendants of each process it stops as well, found on their parents'
// children lists whatever session they are in.
func TestFaultsReconcileFindsAnEscapeeBelowAMember(t *testing.T) {
	l := newFaultLab(t, 30, 20)
	id, m := l.startMonitor("", "start", "--", "sh", "-c", "escaper usr1 pids.txt & exec sleeper")
	member := l.escaperPids("pids.txt", 1)[0]
	memberTicks, err := proc.StartTicks(member)
	if err != nil {
		t.Fatal(err)
	}
	l.loseGuardian(id, m)
	if !proc.Matches(member, memberTicks) {
		t.Fatalf("member %d did not outlive its guardian", member)
	}
	unix.Kill(member, unix.SIGUSR1)
	escapee := l.escaperPids("pids.txt", 2)[1]
	ticks, err := proc.StartTicks(escapee)
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := statOf(escapee); !ok || st.sid != escapee || st.ppid != member {
		t.Fatalf("escapee %d is %+v: want the leader of its own session, below member %d", escapee, st, member)
	}
	r, _ := l.run("reconcile", id)
	l.checkFrozenThenKilled(r, 2)
	if proc.Matches(escapee, ticks) {
		t.Errorf("escapee %d, below member %d, outlived the reconcile of %s: %s", escapee, member, id, r.Raw)
	}
	l.settle()
}

// TestFaultsReconcileFindsAnOrphanBelowAStoppedGuardian: a guardian is
// stopped; past its window a member starts a process in a session of its
// own and exits, which orphans the process to the guardian (the service's
// subreaper), where no look records it. Reconcile killed such a guardian
// before anything else, which handed the process to init, out of sight,
// and it outlived a receipt that said the group was verified empty. The
// guardian is now frozen with the rest, and what is below it is found.
func TestFaultsReconcileFindsAnOrphanBelowAStoppedGuardian(t *testing.T) {
	l := newFaultLab(t, 2, 20)
	id, m := l.startMonitor("", "start", "--", "sh", "-c", "escaper term pids.txt & exec sleeper")
	member := l.escaperPids("pids.txt", 1)[0]
	l.stopGuardian(id, m)
	l.awaitLapse(id)
	unix.Kill(member, unix.SIGTERM)
	escapee := l.escaperPids("pids.txt", 2)[1]
	ticks, err := proc.StartTicks(escapee)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if proc.Matches(escapee, ticks) {
			unix.Kill(escapee, unix.SIGKILL)
		}
	})
	for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
		if st, ok := statOf(escapee); ok && st.sid == escapee && st.ppid == m.GuardianPID {
			break
		}
		if time.Now().After(deadline) {
			st, _ := statOf(escapee)
			t.Fatalf("escapee %d is %+v: want the leader of its own session, orphaned to guardian %d", escapee, st, m.GuardianPID)
		}
	}
	r, _ := l.run("reconcile", id)
	l.checkFrozenThenKilled(r, 2)
	if proc.Matches(escapee, ticks) {
		t.Errorf("escapee %d, orphaned to the stopped guardian, outlived the reconcile of %s: %s", escapee, id, r.Raw)
	}
	if proc.Matches(m.GuardianPID, m.GuardianStartTicks) {
		t.Errorf("guardian %d outlived the reconcile", m.GuardianPID)
	}
	l.settle()
}

// escaperPids waits until the escaper of the lab (see fakes_test.go) has
// written n pids or more to file, in the lab's working directory, and
// returns them all: its own first, then its escapees'.
func (l *faultLab) escaperPids(file string, n int) []int {
	l.t.Helper()
	for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(filepath.Dir(l.state), "work", file))
		var pids []int
		for _, line := range strings.SplitAfter(string(b), "\n") {
			if pid, err := strconv.Atoi(strings.TrimSuffix(line, "\n")); err == nil && strings.HasSuffix(line, "\n") {
				pids = append(pids, pid)
			}
		}
		if len(pids) >= n {
			return pids
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("escaper wrote %d pids in %v, want %d", len(pids), patience, n)
		}
	}
}

// checkFrozenThenKilled checks the receipt r of a reconcile that found
// at least n processes left: each was stopped (SIGSTOP) before any was
// killed (SIGKILL), without a SIGTERM, and a receipt that says the group
// is verified empty leaves no process of the lab running at all.
func (l *faultLab) checkFrozenThenKilled(r gjson.Result, n int) {
	l.t.Helper()
	if r.Get("reason").String() != "reconciled" || !r.Get("group_empty_verified").Bool() || r.Get("containment").String() != state.ContainmentGroupOnly {
		l.t.Errorf("reconcile answered %s: want reconciled, group_empty_verified, containment group_only", r.Raw)
	}
	if r.Get("group_empty_verified").Bool() {
		if left := l.marked(); len(left) > 0 {
			l.t.Errorf("reconcile said the group was verified empty while processes of the lab ran on (%v): %s", left, r.Raw)
		}
	}
	signals := r.Get("signals").Array()
	if len(signals) != 2 || signals[0].Get("signal").String() != "SIGSTOP" || signals[1].Get("signal").String() != "SIGKILL" ||
		signals[0].Get("targets").Int() < int64(n) || signals[1].Get("targets").Int() != signals[0].Get("targets").Int() {
		l.t.Errorf("reconcile sent %s: want SIGSTOP to %d processes or more, then SIGKILL to each", r.Get("signals").Raw, n)
	}
}

// awaitEscapedSession waits until a heartbeat of monitor id has recorded
// an escaped session that want accepts.
func (l *faultLab) awaitEscapedSession(id string, want func(state.EscapedSession) bool) {
	l.t.Helper()
	d := &state.Dir{Path: l.state}
	for deadline := time.Now().Add(patience); ; time.Sleep(20 * time.Millisecond) {
		rec, err := d.LoadMonitor(id)
		if err == nil && slices.ContainsFunc(rec.EscapedSessions, want) {
			return
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("no heartbeat of %s recorded the session in %v: %+v", id, patience, rec)
		}
	}
}

// loseGuardian kills the guardian of monitor id (recorded as m) and waits
// until it is gone, as status must then say.
func (l *faultLab) loseGuardian(id string, m *state.Monitor) {
	l.t.Helper()
	unix.Kill(m.GuardianPID, unix.SIGKILL)
	if !awaitGone(m.GuardianPID, m.GuardianStartTicks) { // a kill is only queued
		l.t.Fatalf("guardian %d outlived SIGKILL by %v", m.GuardianPID, patience)
	}
	if s := l.status(id).Get("status").String(); s != state.StatusNeedsReconciliation {
		l.t.Fatalf("after its guardian was killed, %s is %s", id, s)
	}
}

// TestFaultsWallClockStep steps the wall clock two hours forward, then
// back, under a running monitor with a work deadline an hour and a half
// away, for its guardian and every command that looks at it, as NTP or
// date -s would. Ownership windows are judged on the monotonic clock, and
// the deadline counted on it from admission, so the monitor stays running
// and its guardian renews through both steps. Judged on the wall clock,
// the first status after the step forward showed it as needing
// reconciliation and closed its custody fence, and the guardian drained;
// and the guardian's next renewal found the deadline passed. The step
// forward comes at the worst moment for the deadline: with the guardian
// stopped just before its handoff, once custody is its own. Read from the
// wall clock after the handoff, the deadline had passed and the guardian
// drained the monitor as timed_out at once.
func TestFaultsWallClockStep(t *testing.T) {
	l := newFaultLab(t, 3, 20) // renewals every second
	step := l.steppedClock()
	c := l.command("guardian:after_record", "start", "--timeout", "90m", "--", "sleeper")
	end := l.background(c)
	guardian := guardianOf(t, c.Process.Pid)
	if err := awaitStopped(guardian); err != nil {
		t.Fatal(err)
	}
	step("7200000")
	unix.Kill(guardian, unix.SIGCONT)
	r, _ := end()
	id := r.Get("monitor_id").String()
	if r.Get("status").String() != state.StatusRunning {
		t.Fatalf("start answered %s: want running", r.Raw)
	}
	for _, ms := range []string{"7200000", "-7200000"} {
		step(ms)
		if s := l.status(id).Get("status").String(); s != state.StatusRunning {
			t.Fatalf("with the wall clock stepped by %s ms, %s is %s", ms, id, s)
		}
		// The guardian's own check of its window passes too.
		l.awaitRenewals(id, 2)
		if s := l.status(id).Get("status").String(); s != state.StatusRunning {
			t.Fatalf("after two renewals with the wall clock stepped by %s ms, %s is %s", ms, id, s)
		}
	}
	r, _ = l.run("cancel", id)
	if r.Get("reason").String() != "cancel" || !r.Get("group_empty_verified").Bool() {
		t.Fatalf("cancel answered %s", r.Raw)
	}
	l.settle()
}

// TestFaultsWallStepBeforeTheSpec steps the wall clock two hours forward
// while a start with a work deadline an hour and a half away is stopped
// between its admission and the spec it sends the guardian (as the slot
// is taken, say): the monitor runs, its deadline counted on the monotonic
// clock from the admission. Counted from the wall clock when the spec
// arrived, it had passed before the handoff.
func TestFaultsWallStepBeforeTheSpec(t *testing.T) {
	l := newFaultLab(t, 3, 20)
	step := l.steppedClock()
	c := l.command("start:before_spec", "start", "--timeout", "90m", "--", "sleeper")
	end := l.background(c)
	if err := awaitStopped(c.Process.Pid); err != nil {
		t.Fatal(err)
	}
	step("7200000")
	unix.Kill(c.Process.Pid, unix.SIGCONT)
	r, _ := end()
	id := r.Get("monitor_id").String()
	if r.Get("status").String() != state.StatusRunning {
		t.Fatalf("start answered %s: want running", r.Raw)
	}
	l.awaitRenewals(id, 2)
	if s := l.status(id).Get("status").String(); s != state.StatusRunning {
		t.Fatalf("with the wall clock stepped before the spec, %s is %s", id, s)
	}
	l.run("cancel", id)
	l.settle()
}

// TestFaultsStartAfterAWallStep starts a monitor with a work deadline an
// hour and a half away once the wall clock has been stepped two hours
// forward: the start admits it on the clock the guardian reads, so it runs
// and its deadline is an hour and a half from the stepped now. Admitted on
// the clock before the step, as the launcher once read it while the
// guardian read the stepped one, the deadline had passed at the handoff.
func TestFaultsStartAfterAWallStep(t *testing.T) {
	l := newFaultLab(t, 3, 20)
	step := l.steppedClock()
	const stepMs, timeoutMs = 7200000, 90 * 60 * 1000
	step(strconv.Itoa(stepMs))
	before := time.Now().UnixMilli() + stepMs
	id, m := l.startMonitor("", "start", "--timeout", "90m", "--", "sleeper")
	after := time.Now().UnixMilli() + stepMs
	if m.WorkDeadlineMs == nil {
		t.Fatal("no work deadline")
	}
	if d := *m.WorkDeadlineMs; d < before+timeoutMs || d > after+timeoutMs {
		t.Fatalf("work deadline %d: want between %d and %d", d, before+timeoutMs, after+timeoutMs)
	}
	l.awaitRenewals(id, 2)
	if s := l.status(id).Get("status").String(); s != state.StatusRunning {
		t.Fatalf("started with the wall clock stepped by %d ms, %s is %s", stepMs, id, s)
	}
	l.run("cancel", id)
	l.settle()
}

// TestFaultsWallClockStepsKeepTimeMarks steps the wall clock two hours
// back under a service that prints a line, waits a second and prints
// another, then three hours forward and prints a third at once: the
// guardian marks each line's time (the index of logs --since) on the
// stepped clock. Its marks were spaced by the wall clock, so after the
// step back it marked nothing for two hours; spaced by the monotonic
// clock alone, the line just after the step forward went unmarked, and
// logs --since a time after the step left it out.
func TestFaultsWallClockStepsKeepTimeMarks(t *testing.T) {
	l := newFaultLab(t, 3, 20)
	step := l.steppedClock()
	dir := t.TempDir()
	goLate, goLater := filepath.Join(dir, "late"), filepath.Join(dir, "later")
	id, _ := l.startMonitor("", "start", "--", "sh", "-c",
		`echo early; while [ ! -e `+goLate+` ]; do sleep 0.05; done; echo late; `+
			`while [ ! -e `+goLater+` ]; do sleep 0.05; done; echo later; exec sleep 1000`)
	l.run("wait", id, "--output", "early", "--timeout", "30")
	marks := func() []string {
		b, err := os.ReadFile(filepath.Join((&state.Dir{Path: l.state}).MonitorDir(id), state.TimesName))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	// The line printed once go is made is marked at offset off, at a time
	// on the wall clock stepped by stepMs.
	printed := func(stepMs int64, goFile, line, off string) {
		t.Helper()
		step(strconv.FormatInt(stepMs, 10))
		if stepMs < 0 {
			// Past the second that spaces the marks, on the monotonic
			// clock: only it can tell that a second has passed.
			time.Sleep(1500 * time.Millisecond)
		}
		before := time.Now().UnixMilli() + stepMs
		if err := os.WriteFile(goFile, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		l.run("wait", id, "--output", line, "--timeout", "30")
		after := time.Now().UnixMilli() + stepMs
		m := marks()
		at, got, _ := strings.Cut(m[len(m)-1], " ")
		if ms, _ := strconv.ParseInt(at, 10, 64); ms < before || ms > after || got != off {
			t.Fatalf("time marks %q: want the last at offset %s, at a time between %d and %d", m, off, before, after)
		}
	}
	printed(-7200000, goLate, "late", "6")
	printed(3600000, goLater, "later", "11")
	if m := marks(); len(m) != 3 {
		t.Fatalf("time marks %q: want one for each line", m)
	}
	l.run("cancel", id)
	l.settle()
}

// TestFaultsOtherTimeNamespace shows a running monitor from a time
// namespace whose monotonic clock is an hour ahead (unshare --time
// --monotonic), as a command in a container or a sandbox might. The window
// is judged there by the wall clock: judged by that namespace's monotonic
// clock, it had lapsed, the status closed the custody fence and the
// guardian drained.
func TestFaultsOtherTimeNamespace(t *testing.T) {
	inNamespace := timeNamespace(t, "3600")
	l := newFaultLab(t, 3, 20)
	id, _ := l.startMonitor("", "start", "--", "sleeper")
	r, _ := l.answer(inNamespace(l.procmon("status", id)))
	if s := r.Get("status").String(); s != state.StatusRunning {
		t.Fatalf("from a time namespace an hour ahead, %s is %s: %s", id, s, r.Raw)
	}
	l.awaitRenewals(id, 2)
	l.run("cancel", id)
	l.settle()
}

// TestFaultsOtherTimeNamespaceAfterAWallStep: as TestFaultsWallClockStep,
// with the status shown from another time namespace, which judges the
// window by the wall clock and so sees it lapsed: the guardian it asks
// answers the time its window has left, which no clock changes. Its
// answer named the window's end on its own monotonic clock, which that
// reader could not compare: the status showed needs_reconciliation,
// closed the fence and the guardian drained.
func TestFaultsOtherTimeNamespaceAfterAWallStep(t *testing.T) {
	inNamespace := timeNamespace(t, "0")
	l := newFaultLab(t, 3, 20)
	step := l.steppedClock()
	id, _ := l.startMonitor("", "start", "--", "sleeper")
	step("3600000")
	r, _ := l.answer(inNamespace(l.procmon("status", id)))
	if s := r.Get("status").String(); s != state.StatusRunning {
		t.Fatalf("from another time namespace, with the wall clock an hour ahead, %s is %s: %s", id, s, r.Raw)
	}
	l.awaitRenewals(id, 2)
	l.run("cancel", id)
	l.settle()
}

// steppedClock has every later procmon of the lab, and the guardians they
// start, read the wall clock stepped by what step is last given (in
// milliseconds), as NTP or date -s would step it for them all.
func (l *faultLab) steppedClock() (step func(ms string)) {
	dir := l.t.TempDir()
	clock := filepath.Join(dir, "clock")
	step = func(ms string) {
		// Renamed into place: written in place, a reader between the
		// truncation and the write saw no step at all.
		next := filepath.Join(dir, "clock.next")
		if err := os.WriteFile(next, []byte(ms), 0o600); err != nil {
			l.t.Fatal(err)
		}
		if err := os.Rename(next, clock); err != nil {
			l.t.Fatal(err)
		}
	}
	step("0")
	inner := l.procmon
	l.procmon = func(args ...string) *exec.Cmd {
		c := inner(args...)
		c.Env = append(c.Env, "PROCMON_FAULT_CLOCK="+clock)
		return c
	}
	return step
}

// timeNamespace returns what runs a procmon command of the lab in a new
// time namespace whose monotonic clock is offset by the given seconds, or
// skips the test where none can be made.
func timeNamespace(t *testing.T, offset string) func(c *exec.Cmd) *exec.Cmd {
	unshare, err := exec.LookPath("unshare")
	if err != nil || exec.Command(unshare, "--time", "--monotonic", offset, "true").Run() != nil {
		t.Skip("no unshare that makes a time namespace here (util-linux 2.36 or later, and root)")
	}
	// unshare runs procmon by its path: this binary is procmon under that
	// name.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	named := filepath.Join(t.TempDir(), "procmon")
	if err := os.Symlink(exe, named); err != nil {
		t.Fatal(err)
	}
	return func(c *exec.Cmd) *exec.Cmd {
		c.Path, c.Args = unshare, append([]string{unshare, "--time", "--monotonic", offset, named}, c.Args[1:]...)
		return c
	}
}

// awaitRenewals waits until the guardian of monitor id has renewed its
// window n more times, and fails if it drains meanwhile.
func (l *faultLab) awaitRenewals(id string, n int64) {
	l.t.Helper()
	d := &state.Dir{Path: l.state}
	m, err := d.LoadMonitor(id)
	if err != nil {
		l.t.Fatal(err)
	}
	for deadline := time.Now().Add(patience); ; time.Sleep(50 * time.Millisecond) {
		now, err := d.LoadMonitor(id)
		if err == nil && now.Receipt != nil {
			l.t.Fatalf("the guardian of %s drained: %+v", id, now.Receipt)
		}
		if err == nil && now.HeartbeatSeq >= m.HeartbeatSeq+n {
			return
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("the guardian of %s renewed its window fewer than %d times in %v", id, n, patience)
		}
	}
}

// TestFaultsStartInterrupted interrupts procmon start where its handoff
// is under way, as Ctrl-C, a shim's caller giving up or a hangup would:
// the start completes, drains the service it started (the children it
// forked too) and answers wait_interrupted with the receipt, so no
// service runs on that no answer named.
func TestFaultsStartInterrupted(t *testing.T) {
	drained := 0
	for _, sig := range []unix.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			l := newFaultLab(t, 30, 20)
			c := l.command("start:before_handoff", leakyService...)
			end := l.background(c)
			if err := awaitStopped(c.Process.Pid); err != nil {
				t.Fatal(err)
			}
			unix.Kill(c.Process.Pid, sig)
			unix.Kill(c.Process.Pid, unix.SIGCONT)
			r, exited := end()
			if exited && r.Get("status").String() == state.StatusRunning {
				// Too late to count (see TestFaultsStartInterruptedOnceHandedOff):
				// the answer names the service.
				l.run("cancel", r.Get("monitor_id").String())
				l.settle()
				return
			}
			if !exited || r.Get("error.code").String() != string(protocol.CodeWaitInterrupted) {
				t.Fatalf("interrupted start answered %s (exited %v): want wait_interrupted", r.Raw, exited)
			}
			drained++
			id := r.Get("error.details.monitor_id").String()
			receipt := r.Get("error.details.result")
			if receipt.Get("status").String() != state.StatusCancelled || receipt.Get("reason").String() != "interrupted" ||
				!receipt.Get("group_empty_verified").Bool() {
				t.Fatalf("interrupted start answered %s: want its receipt, cancelled for the interruption", r.Raw)
			}
			if msg, want := r.Get("error.message").String(), "start of sh was interrupted: "+id+" was drained (details.result has its receipt)"; msg != want {
				t.Fatalf("interrupted start's message: %q, want %q", msg, want)
			}
			if s := l.status(id).Get("status").String(); s != state.StatusCancelled {
				t.Fatalf("after an interrupted start, %s is %s", id, s)
			}
			l.settle()
		})
	}
	if drained == 0 {
		t.Fatal("no interrupted start drained what it started")
	}
}

// TestFaultsStartPoints kills a start's guardian at each point of its
// start, and the launcher once the guardian may spawn. A guardian lost
// before its running handoff leaves a trace (the directory that names it,
// then its record) from which the start itself stops what it had
// spawned, here the service's children that outlive the service: the
// start fails, naming the monitor and its reconciled receipt (no exit
// code) once the record exists. A launcher lost after the slot leaves a
// monitor in custody.
func TestFaultsStartPoints(t *testing.T) {
	for _, point := range []string{"guardian:before_spawn", "guardian:after_spawn", "guardian:after_record", "start:before_handoff"} {
		t.Run(strings.ReplaceAll(point, ":", "_"), func(t *testing.T) {
			l := newFaultLab(t, 30, 20)
			c := l.command(point, leakyService...)
			end := l.background(c)
			victim := c.Process.Pid
			if strings.HasPrefix(point, "guardian:") {
				victim = guardianOf(t, c.Process.Pid)
			}
			if err := awaitStopped(victim); err != nil {
				t.Fatalf("at %s: %v", point, err)
			}
			if point == "guardian:after_spawn" {
				// The service runs on while its guardian is stopped: let it
				// fork the children a lost guardian would leak (the
				// session holds the guardian, the service and those two).
				awaitSession(t, victim, 4)
			}
			unix.Kill(victim, unix.SIGKILL)
			r, _ := end()
			if strings.HasPrefix(point, "start:") {
				if ids := l.monitors(); len(ids) != 1 || l.status(ids[0]).Get("status").String() != state.StatusRunning {
					t.Fatalf("after its launcher was killed, monitors %v: want one running", ids)
				}
				l.settle()
				return
			}
			if r.Get("error.code").String() != string(protocol.CodeInternal) {
				t.Fatalf("start answered %s: want internal", r.Raw)
			}
			id := r.Get("error.details.monitor_id").String()
			if point != "guardian:after_record" {
				// Never recorded: no monitor, and nothing left (settle).
				// The answer says how the guardian ended, which said
				// nothing on stderr.
				if id != "" || len(l.monitors()) != 0 || !strings.Contains(r.Get("error.message").String(), "killed by SIGKILL") {
					t.Fatalf("a start that never recorded its monitor answered %s, and list shows %v", r.Raw, l.monitors())
				}
				l.settle()
				return
			}
			if id == "" {
				t.Fatalf("start answered %s: want the monitor named", r.Raw)
			}
			s := l.status(id)
			if s.Get("status").String() != state.StatusCancelled || s.Get("receipt.custody").String() != state.CustodyReconciled || !s.Get("receipt.group_empty_verified").Bool() || s.Get("exit_code").Exists() {
				t.Fatalf("status of the monitor whose guardian died at %s: %s", point, s.Raw)
			}
			l.settle()
		})
	}
}

// TestFaultsStartGuardianStalled: a guardian stopped before it hands off
// is killed by the start once the ownership grace has passed, and the
// answer says so: it said "killed by SIGKILL" as if someone else had.
func TestFaultsStartGuardianStalled(t *testing.T) {
	for _, point := range []string{"guardian:before_spawn", "guardian:after_record"} {
		t.Run(strings.ReplaceAll(point, ":", "_"), func(t *testing.T) {
			l := newFaultLab(t, 1, 20)
			c := l.command(point, "start", "--", "sleeper")
			end := l.background(c)
			if err := awaitStopped(guardianOf(t, c.Process.Pid)); err != nil {
				t.Fatalf("at %s: %v", point, err)
			}
			r, _ := end()
			if msg := r.Get("error.message").String(); r.Get("error.code").String() != string(protocol.CodeInternal) ||
				!strings.Contains(msg, "did not hand off within 1s, stopped or wedged, so procmon killed it") {
				t.Fatalf("a start whose guardian stopped at %s answered %s", point, r.Raw)
			}
			l.settle()
		})
	}
}

// TestFaultsStartGuardianGoneBeforeSpec: a guardian killed before its
// launcher sends it the start's spec, or after it but before the launcher
// tells it the command slot is durable, leaves nothing, and the answer
// says what happened and which slot is used: it said "send spec to
// guardian: write |1: broken pipe", and "hand off to the guardian: write
// |1: broken pipe".
func TestFaultsStartGuardianGoneBeforeSpec(t *testing.T) {
	for point, want := range map[string]string{
		"start:before_spec": "ended before it took the start",
		"start:after_spec":  "was killed by SIGKILL before the running handoff",
	} {
		t.Run(strings.ReplaceAll(point, ":", "_"), func(t *testing.T) {
			l := newFaultLab(t, 30, 20)
			c := l.command(point, "start", "--", "sleeper")
			end := l.background(c)
			if err := awaitStopped(c.Process.Pid); err != nil {
				t.Fatal(err)
			}
			// Its launcher, stopped, does not reap it. Its pidfd is readable
			// once every thread has exited, and with the last its end of the
			// spec pipe is closed; the leader shows as a zombie before the
			// others are gone.
			guardian, err := unix.PidfdOpen(guardianOf(t, c.Process.Pid), 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(guardian)
			if err := unix.PidfdSendSignal(guardian, unix.SIGKILL, nil, 0); err != nil {
				t.Fatal(err)
			}
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(guardian), Events: unix.POLLIN}}, int(patience.Milliseconds()))
			for err == unix.EINTR {
				n, err = unix.Poll([]unix.PollFd{{Fd: int32(guardian), Events: unix.POLLIN}}, int(patience.Milliseconds()))
			}
			if n != 1 {
				t.Fatalf("the guardian did not end within %v (%v)", patience, err)
			}
			unix.Kill(c.Process.Pid, unix.SIGCONT)
			r, _ := end()
			if msg := r.Get("error.message").String(); r.Get("error.code").String() != string(protocol.CodeInternal) ||
				!strings.Contains(msg, want) || !strings.Contains(msg, "command slot 1 of the run is used") ||
				r.Get("error.details.command_ordinal").Int() != 1 || len(l.monitors()) != 0 {
				t.Fatalf("a start whose guardian was killed at %s answered %s, and list shows %v", point, r.Raw, l.monitors())
			}
			l.settle()
		})
	}
}

// TestFaultsDrainPoints kills a guardian in the middle of its drain and
// before its receipt: the cancel answers that the monitor needs
// reconciliation (never an invented receipt), and reconcile stops what is
// left.
func TestFaultsDrainPoints(t *testing.T) {
	for _, point := range []string{"guardian:mid_drain", "guardian:before_receipt"} {
		t.Run(strings.ReplaceAll(point, ":", "_"), func(t *testing.T) {
			l := newFaultLab(t, 30, 20)
			id, m := l.startMonitor(point, leakyService...)
			end := l.background(l.command("", "cancel", "--grace", "1", id))
			if err := awaitStopped(m.GuardianPID); err != nil {
				t.Fatalf("at %s: %v", point, err)
			}
			unix.Kill(m.GuardianPID, unix.SIGKILL)
			r, _ := end()
			if r.Get("error.code").String() != string(protocol.CodeNeedsReconciliation) {
				t.Fatalf("cancel of a monitor whose guardian died at %s answered %s", point, r.Raw)
			}
			if s := l.status(id); s.Get("status").String() != state.StatusNeedsReconciliation {
				t.Fatalf("status after the guardian died at %s: %s", point, s.Raw)
			}
			rec, _ := l.run("reconcile", id)
			if rec.Get("custody").String() != state.CustodyReconciled || !rec.Get("group_empty_verified").Bool() {
				t.Fatalf("reconcile after the guardian died at %s: %s", point, rec.Raw)
			}
			l.settle()
		})
	}
}

// TestFaultsDrainStall stops a guardian just after it signalled its
// group, before it records that it is draining (a drain records that only
// once it has run 20 ms), past its ownership window, then lets it go:
// meanwhile the monitor needs reconciliation, never running again, and
// the cancel waiting on it answers no receipt the guardian did not write;
// resumed, the guardian finishes the drain and its receipt proves the
// group empty.
func TestFaultsDrainStall(t *testing.T) {
	l := newFaultLab(t, 2, 20)
	id, m := l.startMonitor("guardian:mid_drain", leakyService...)
	end := l.background(l.command("", "cancel", "--grace", "1", id))
	if err := awaitStopped(m.GuardianPID); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(patience); l.status(id).Get("status").String() != state.StatusNeedsReconciliation; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a guardian stopped in its drain still holds custody after %v", patience)
		}
	}
	unix.Kill(m.GuardianPID, unix.SIGCONT)
	r, exited := end()
	if !exited {
		t.Fatal("the cancel was killed")
	}
	if code := r.Get("error.code").String(); code != "" && code != string(protocol.CodeNeedsReconciliation) {
		t.Fatalf("cancel of a monitor whose guardian stalled in its drain answered %s", r.Raw)
	}
	final := l.awaitReceipt(id)
	if final.Get("status").String() != state.StatusCancelled || !final.Get("receipt.group_empty_verified").Bool() {
		t.Fatalf("receipt of a guardian resumed in its drain: %s", final.Raw)
	}
	l.settle()
}

// TestFaultsRandom kills, at a random moment, a start, its guardian, a
// cancel, or a guardian while it drains, round after round.
func TestFaultsRandom(t *testing.T) {
	seed := *faultSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("fault seed %d (replay: go test -tags faultpoints -run TestFaultsRandom -fault.seed=%d ./internal/e2e)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	soak, _ := time.ParseDuration(os.Getenv("FAULTS_SOAK"))
	end := time.Now().Add(soak)
	l := newFaultLab(t, 30, 1<<20)
	for round := 0; round < 16 || time.Now().Before(end); round++ {
		delay := time.Duration(rng.IntN(20000)) * time.Microsecond
		kind := rng.IntN(4)
		t.Logf("round %d: fault %d after %v", round, kind, delay)
		switch kind {
		case 0, 1: // the start, or its guardian, at a random moment
			c := l.command("", leakyService...)
			end := l.background(c)
			time.Sleep(delay)
			victim := c.Process.Pid
			if kind == 1 {
				if kids := childrenOf(victim); len(kids) > 0 {
					victim = kids[0]
				}
			}
			unix.Kill(victim, unix.SIGKILL)
			end()
		case 2, 3: // the cancel, or the guardian while it drains
			id, m := l.startMonitor("", leakyService...)
			c := l.command("", "cancel", "--grace", "1", id)
			end := l.background(c)
			time.Sleep(delay)
			victim := c.Process.Pid
			if kind == 3 {
				victim = m.GuardianPID
				if !proc.Matches(victim, m.GuardianStartTicks) {
					victim = 0
				}
			}
			if victim > 0 {
				unix.Kill(victim, unix.SIGKILL)
			}
			end()
		}
		for _, id := range l.monitors() {
			l.status(id)
		}
		l.settle()
	}
}

// TestFaultsStall stops a guardian past its ownership window and lets it
// go: it was reported as needing reconciliation, cancel refused it, and
// once resumed it never renews: it drains and writes a receipt whose
// reason says the heartbeat was missed.
func TestFaultsStall(t *testing.T) {
	l := newFaultLab(t, 2, 20)
	id, m := l.startMonitor("", "start", "--", "sleeper")
	l.stopGuardian(id, m)
	l.awaitLapse(id)
	if r, _ := l.run("cancel", id); r.Get("error.code").String() != string(protocol.CodeNeedsReconciliation) {
		t.Fatalf("cancel of a lapsed monitor answered %s", r.Raw)
	}
	stalled := l.status(id).Get("heartbeat_seq").Int()
	unix.Kill(m.GuardianPID, unix.SIGCONT)
	l.awaitMissedReceipt(id, stalled, "a guardian resumed past its window")
	l.settle()
}

// TestFaultsCancelStoppedGuardian cancels a monitor whose guardian is
// stopped: the cancel answers needs_reconciliation, with the advice to
// reconcile, once the ownership window lapses, as status then shows it.
// (It waited for the guardian's reply for grace + 35 s and answered
// internal.) Resumed, the guardian finds the cancel waiting on its socket
// and its window lapsed: it drains for heartbeat_missed, never for the
// cancel that answered it was not done, and never renews.
func TestFaultsCancelStoppedGuardian(t *testing.T) {
	l := newFaultLab(t, 2, 20)
	id, m := l.startMonitor("", "start", "--", "sleeper")
	l.stopGuardian(id, m)
	r, _ := l.run("cancel", "--grace", "1", id)
	if r.Get("error.code").String() != string(protocol.CodeNeedsReconciliation) || !strings.Contains(r.Get("error.message").String(), "procmon reconcile "+id) {
		t.Fatalf("cancel of a monitor whose guardian is stopped answered %s", r.Raw)
	}
	s := l.status(id)
	if s.Get("status").String() != state.StatusNeedsReconciliation {
		t.Fatalf("status once cancel answered needs_reconciliation: %s", s.Raw)
	}
	if st, ok := statOf(m.GuardianPID); !ok || st.state != "T" {
		t.Fatalf("the guardian ran before the cancel answered (state %+v, alive %v)", st, ok)
	}
	unix.Kill(m.GuardianPID, unix.SIGCONT)
	l.awaitMissedReceipt(id, s.Get("heartbeat_seq").Int(), "a guardian resumed with a cancel waiting")
	if !awaitGone(m.GuardianPID, m.GuardianStartTicks) {
		t.Fatalf("guardian %d still runs after its receipt", m.GuardianPID)
	}
	l.settle()
}

// TestFaultsWaitGuardianStopped: a wait for output printed before it is
// satisfied while the guardian is stopped and its window current. The
// wait asked the stopped guardian for its notices first, was held until
// the window lapsed, and answered unavailable with nothing scanned,
// beside a log that showed the text. The window of 8 s ends before the
// 10 s a subscription waits for an answer, and leaves the wait more than
// 5 s from the guardian's last renewal (every 8/3 s) to look.
func TestFaultsWaitGuardianStopped(t *testing.T) {
	l := newFaultLab(t, 8, 20)
	id, m := l.startMonitor("", "start", "--", "printer", "-stay", "ready")
	awaitLogBytes(t, l.state, id, int64(len("ready\n")))
	l.stopGuardian(id, m)
	r, _ := l.run("wait", id, "--output", "ready", "--timeout", "60")
	if r.Get("outcome").String() != "satisfied" || r.Get("observation.match_offset").Int() != 0 {
		t.Fatalf("wait for output printed before, its guardian stopped, answered %s", r.Raw)
	}
	if st, ok := statOf(m.GuardianPID); !ok || st.state != "T" {
		t.Fatalf("the guardian ran before the wait answered (state %+v, alive %v)", st, ok)
	}
	unix.Kill(m.GuardianPID, unix.SIGCONT)
	l.settle()
}

// TestFaultsCancelReceiptNotSent stops a guardian once it has stored its
// receipt, before it answers the cancel that asked for it, with a window
// far longer than the cancel's look at custody: the cancel answers with
// the stored receipt while the guardian is still stopped.
func TestFaultsCancelReceiptNotSent(t *testing.T) {
	l := newFaultLab(t, 30, 20)
	id, m := l.startMonitor("guardian:after_receipt", "start", "--", "sleeper")
	end := l.background(l.command("", "cancel", "--grace", "1", id))
	if err := awaitStopped(m.GuardianPID); err != nil {
		t.Fatal(err)
	}
	r, exited := end()
	if !exited {
		t.Fatal("the cancel was killed")
	}
	if r.Get("status").String() != state.StatusCancelled || r.Get("reason").String() != "cancel" || !r.Get("group_empty_verified").Bool() {
		t.Fatalf("cancel of a monitor whose guardian stopped once it stored its receipt answered %s", r.Raw)
	}
	if st, ok := statOf(m.GuardianPID); !ok || st.state != "T" {
		t.Fatalf("the guardian ran before the cancel answered (state %+v, alive %v)", st, ok)
	}
	unix.Kill(m.GuardianPID, unix.SIGCONT)
	if !awaitGone(m.GuardianPID, m.GuardianStartTicks) {
		t.Fatalf("guardian %d still runs after its receipt", m.GuardianPID)
	}
	if s := l.status(id); s.Get("status").String() != state.StatusCancelled || s.Get("reason").String() != "cancel" {
		t.Fatalf("status after the guardian resumed: %s", s.Raw)
	}
	l.settle()
}

// TestFaultsCancelWaitsForALongDrain cancels a service that ignores
// SIGTERM with a grace twice its ownership window: the guardian answers
// only once the grace has passed and SIGKILL has ended the service, and
// the cancel waits for it (the settling record's window covers the
// drain), rather than answering needs_reconciliation.
func TestFaultsCancelWaitsForALongDrain(t *testing.T) {
	l := newFaultLab(t, 2, 20)
	id, m := l.startMonitor("", "start", "--", "ignoreterm")
	if w, _ := l.run("wait", id, "--output", "ignoreterm ready", "--timeout", "30"); w.Get("outcome").String() != "satisfied" {
		t.Fatalf("wait for ignoreterm: %s", w.Raw)
	}
	r, _ := l.run("cancel", "--grace", "4", id)
	if r.Get("status").String() != state.StatusCancelled || r.Get("reason").String() != "cancel" || r.Get("signal").String() != "SIGKILL" || !r.Get("group_empty_verified").Bool() {
		t.Fatalf("cancel of a service that outlives the ownership window in its drain answered %s", r.Raw)
	}
	if !awaitGone(m.GuardianPID, m.GuardianStartTicks) {
		t.Fatalf("guardian %d still runs after its receipt", m.GuardianPID)
	}
	l.settle()
}

// TestFaultsLockStall holds a monitor's lock across its guardian's
// ownership window, as a procmon command stopped while it holds the lock
// would: the heartbeat that waits for the lock finds the window lapsed
// once it has it, and never renews. (It used to check the window before
// waiting, and renewed: the monitor was running again after it had been
// shown as needing reconciliation.)
func TestFaultsLockStall(t *testing.T) {
	l := newFaultLab(t, 2, 20)
	id, m := l.startMonitor("", "start", "--", "sleeper")
	d := &state.Dir{Path: l.state}
	// Right after a heartbeat, so that the next one waits for the lock.
	for deadline := time.Now().Add(patience); ; time.Sleep(time.Millisecond) {
		if now, err := d.LoadMonitor(id); err == nil && now.HeartbeatSeq != m.HeartbeatSeq {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no heartbeat within %v", patience)
		}
	}
	lock := flock.New(filepath.Join(d.MonitorDir(id), "lock"))
	if err := lock.Lock(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(patience); l.status(id).Get("status").String() != state.StatusNeedsReconciliation; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			lock.Unlock()
			t.Fatalf("a guardian waiting for its lock still holds custody after %v", patience)
		}
	}
	stalled := l.status(id).Get("heartbeat_seq").Int()
	lock.Unlock()
	l.awaitMissedReceipt(id, stalled, "a guardian that waited for its lock past its window")
	l.settle()
}

// awaitMissedReceipt waits for the receipt of monitor id, whose guardian
// (described by who) let its window lapse at heartbeat stalled: drained
// for heartbeat_missed, its group verified empty, the lapsed window never
// renewed.
func (l *faultLab) awaitMissedReceipt(id string, stalled int64, who string) {
	l.t.Helper()
	final := l.awaitReceipt(id)
	if final.Get("status").String() != state.StatusCancelled || final.Get("reason").String() != "heartbeat_missed" || !final.Get("receipt.group_empty_verified").Bool() {
		l.t.Fatalf("receipt of %s: %s", who, final.Raw)
	}
	if seq := final.Get("heartbeat_seq").Int(); seq != stalled {
		l.t.Fatalf("%s renewed its lapsed window: heartbeat %d, then %d", who, stalled, seq)
	}
}

// TestFaultsRunEndRacesStarts ends a run while starts in it are in
// flight: when run end returns, no monitor of the run is running; each
// start either took its slot before the end (its monitor was drained by
// it) or was refused.
func TestFaultsRunEndRacesStarts(t *testing.T) {
	seed := *faultSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("fault seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	l := newFaultLab(t, 30, 1<<20)
	for round := 0; round < 4; round++ {
		created, _ := l.run("run", "new")
		run := created.Get("run_id").String()
		var wg sync.WaitGroup
		answers := make([]gjson.Result, 6)
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i], _ = l.run("--run", run, "start", "--", "sleeper")
			}()
		}
		time.Sleep(time.Duration(rng.IntN(30000)) * time.Microsecond)
		ended, _ := l.run("--run", run, "run", "end")
		if errs := ended.Get("errors"); errs.Exists() {
			t.Fatalf("run end: %s", ended.Raw)
		}
		// At this moment nothing of the run may run.
		for _, id := range l.monitors() {
			s := l.status(id)
			if s.Get("run_id").String() == run && s.Get("status").String() == state.StatusRunning {
				t.Fatalf("round %d: monitor %s of the ended run %s is running after run end returned: %s", round, id, run, s.Raw)
			}
		}
		wg.Wait()
		for _, a := range answers {
			if code := a.Get("error.code").String(); code != "" && code != string(protocol.CodeRunEnded) {
				t.Fatalf("a start racing run end answered %s", a.Raw)
			}
			if id := a.Get("monitor_id").String(); id != "" {
				if s := l.status(id); s.Get("status").String() != state.StatusCancelled || s.Get("reason").String() != "run_ended" {
					t.Fatalf("a start that landed before the end: %s", s.Raw)
				}
			}
		}
	}
	l.settle()
}

// TestFaultsStraySignals sends a guardian every signal that would end a
// Go program by default: it keeps custody, and drains only on the
// termination signals.
func TestFaultsStraySignals(t *testing.T) {
	l := newFaultLab(t, 30, 20)
	id, m := l.startMonitor("", "start", "--", "sleeper")
	for _, sig := range []unix.Signal{unix.SIGTRAP, unix.SIGSYS, unix.SIGSTKFLT, unix.SIGABRT, unix.SIGILL, unix.SIGBUS, unix.SIGFPE, unix.SIGSEGV, unix.SIGUSR1, unix.SIGUSR2, unix.SIGALRM, unix.SIGVTALRM, unix.SIGXCPU, unix.SIGXFSZ, unix.SIGPWR, unix.SIGIO, unix.SIGPIPE} {
		unix.Kill(m.GuardianPID, sig)
		// The status's ping is answered after the signal was handled:
		// signals are delivered before the guardian runs on.
		time.Sleep(20 * time.Millisecond)
		if s := l.status(id); !proc.Matches(m.GuardianPID, m.GuardianStartTicks) || s.Get("status").String() != state.StatusRunning {
			t.Fatalf("after %v the guardian is gone or its monitor is %s", unix.SignalName(sig), s.Raw)
		}
	}
	unix.Kill(m.GuardianPID, unix.SIGTERM)
	if s := l.awaitReceipt(id); s.Get("reason").String() != "guardian_SIGTERM" || !s.Get("receipt.group_empty_verified").Bool() {
		t.Fatalf("after SIGTERM: %s", s.Raw)
	}
	l.settle()
}

// TestFaultsHostileServices runs services that try to leave custody or
// to swamp it, and cancels each: the receipt is verified and nothing of
// theirs is left.
func TestFaultsHostileServices(t *testing.T) {
	l := newFaultLab(t, 30, 20)
	services := map[string][]string{
		"double_fork_setsid": {"sh", "-c", "setsid sh -c 'sleeper & exit' & exec sleeper"},
		"other_group":        {"sh", "-c", "set -m; sleeper & sleeper & wait"},
		"fork_storm":         {"sh", "-c", "i=0; while [ $i -lt 60 ]; do sleeper & i=$((i+1)); done; wait"},
		"closes_output":      {"sh", "-c", "exec >/dev/null 2>&1; exec sleeper"},
	}
	for name, argv := range services {
		started, _ := l.run(append([]string{"start", "--name", name, "--"}, argv...)...)
		id := started.Get("monitor_id").String()
		if id == "" {
			t.Fatalf("%s: start answered %s", name, started.Raw)
		}
		time.Sleep(200 * time.Millisecond) // let it spread
		r, _ := l.run("cancel", "--grace", "1", id)
		if !r.Get("group_empty_verified").Bool() || r.Get("containment").String() != state.ContainmentComplete {
			t.Fatalf("%s: cancel answered %s", name, r.Raw)
		}
		l.nothingLeft()
	}
	// A gigabyte without a newline passes the output cap: the guardian
	// drains it as output_limit, never blocked by it.
	id, _ := l.startMonitor("", "start", "--", "sh", "-c", "head -c 1073741824 /dev/zero | tr '\\0' a")
	if s := l.awaitReceipt(id); s.Get("status").String() != state.StatusOutputLimit || !s.Get("receipt.group_empty_verified").Bool() {
		t.Fatalf("a gigabyte with no newline: %s", s.Raw)
	}
	l.settle()
}

// TestFaultsManyMonitors keeps 300 monitors live at once, then runs
// cancel, status, logs and wait on one of them together.
func TestFaultsManyMonitors(t *testing.T) {
	l := newFaultLab(t, 30, 1000)
	const n = 300
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r, _ := l.run("start", "--", "sleeper")
			ids[i] = r.Get("monitor_id").String()
		}()
	}
	wg.Wait()
	if got := len(l.monitors()); got != n {
		t.Fatalf("list shows %d monitors, want %d", got, n)
	}
	id := ids[0]
	for _, args := range [][]string{{"status", id}, {"logs", id}, {"wait", id, "--exit", "--timeout", "60"}, {"cancel", id}, {"status", id}, {"logs", id}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.run(args...)
		}()
	}
	wg.Wait()
	if s := l.status(id); s.Get("status").String() != state.StatusCancelled {
		t.Fatalf("after concurrent commands: %s", s.Raw)
	}
	ended, _ := l.run("run", "end")
	if got := len(ended.Get("monitors").Array()); got != n {
		t.Fatalf("run end drained %d monitors, want %d: %s", got, n, ended.Raw)
	}
	l.settle()
}

// inMountNamespace runs the test name again, inside `unshare --mount`, and
// reports whether this is that run, which goes on to its scenario: there
// it may mount what it likes, the guardians it starts see the same mounts,
// and the machine's mounts are never touched. The outer run passes when
// the inner one passed.
func inMountNamespace(t *testing.T, name string) bool {
	t.Helper()
	if os.Getenv("FAULTS_MOUNT_NS") == name {
		return true
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount in a mount namespace of its own")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare(1) (util-linux) to make a mount namespace")
	}
	c := exec.Command(unshare, "--mount", "--propagation", "private", "--", os.Args[0], "-test.run", "^"+name+"$", "-test.v", "-test.count=1")
	c.Env = append(os.Environ(), "FAULTS_MOUNT_NS="+name)
	out, err := c.CombinedOutput()
	t.Logf("inside the mount namespace:\n%s", out)
	if err != nil {
		t.Fatalf("the scenario failed: %v", err)
	}
	if !bytes.Contains(out, []byte("--- PASS: "+name)) {
		t.Fatal("the scenario did not run")
	}
	return false
}

// TestFaultsReadOnly remounts the state directory read-only under a live
// monitor, then cancels it: the guardian drains and cannot store its
// receipt, nor close its custody fence, and used to be shown running
// until its window lapsed. Readers now ask it, and its receipt lands once
// the directory is writable again.
func TestFaultsReadOnly(t *testing.T) {
	if !inMountNamespace(t, "TestFaultsReadOnly") {
		return
	}
	l := newFaultLabOn(t, "", 3, 20, 1<<20)
	id, _ := l.startMonitor("", "start", "--", "sleeper")
	// A bind mount of the directory over itself, remounted read-only: the
	// guardian's open log stays writable, every new write is refused
	// (EROFS), as on a file system remounted read-only.
	if err := unix.Mount(l.state, l.state, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind the state directory: %v", err)
	}
	mounted := true
	unmount := func() {
		if mounted {
			mounted = false
			if err := unix.Unmount(l.state, 0); err != nil {
				t.Fatalf("unmount the read-only state directory: %v", err)
			}
		}
	}
	t.Cleanup(unmount)
	if err := unix.Mount("", l.state, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount the state directory read-only: %v", err)
	}
	r, _ := l.run("cancel", id)
	if r.Get("status").String() != state.StatusCancelled || !r.Get("state_error").Exists() {
		t.Fatalf("cancel on a read-only state directory: %s", r.Raw)
	}
	if s := l.status(id); s.Get("status").String() != state.StatusCancelled {
		t.Fatalf("status after the cancel: %s", s.Raw)
	}
	if w, _ := l.run("wait", id, "--exit", "--timeout", "5s"); w.Get("outcome").String() != "satisfied" {
		t.Fatalf("wait --exit after the cancel: %s", w.Raw)
	}
	unmount()
	// The guardian retries with a backoff of at most 5 s.
	for deadline := time.Now().Add(patience); ; time.Sleep(20 * time.Millisecond) {
		m, err := (&state.Dir{Path: l.state}).LoadMonitor(id)
		if err == nil && m.Receipt != nil {
			if m.Receipt.Status != state.StatusCancelled {
				t.Fatalf("the stored receipt: %+v", m.Receipt)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no receipt stored within %v of the directory being writable again (%v)", patience, err)
		}
	}
	l.settle()
}

// TestFaultsFullDisk fills the file system of the state directory to its
// last byte under live monitors (a tmpfs, in a mount namespace of the
// test's own). It runs itself again inside `unshare --mount`, so that the
// guardians it starts see the tmpfs and the machine's mounts are never
// touched.
func TestFaultsFullDisk(t *testing.T) {
	if !inMountNamespace(t, "TestFaultsFullDisk") {
		return
	}
	l := newFaultLabOn(t, "4m", 3, 20, 64<<20)
	healthy, _ := l.run("start", "--name", "healthy", "--", "sleeper")
	hid := healthy.Get("monitor_id").String()
	loud, _ := l.run("start", "--name", "loud", "--", "sh", "-c", "while :; do printer -bytes 65536; sleep 0.1; done")
	lid := loud.Get("monitor_id").String()
	loud2, _ := l.run("start", "--name", "loud2", "--", "sh", "-c", "while :; do printer -bytes 65536; sleep 0.1; done")
	l2id := loud2.Get("monitor_id").String()
	quick, _ := l.startMonitor("", "start", "--name", "quick", "--", "sleeper")
	stalled, sm := l.startMonitor("", "start", "--name", "stalled", "--", "sleeper")
	unfenced, um := l.startMonitor("", "start", "--name", "unfenced", "--", "sleeper")
	lost, lm := l.startMonitor("", "start", "--name", "lost", "--", "sh", "-c", "sleeper & sleeper & exec sleeper")
	// All three have written what they write before the disk fills: one
	// still to write once its guardian is gone dies of SIGPIPE, and the
	// reconcile below would find fewer than two left.
	lostLog := filepath.Join((&state.Dir{Path: l.state}).MonitorDir(lost), state.LogName)
	for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(lostLog); bytes.Count(b, []byte("sleeper ready")) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lost monitor's three sleepers were not ready within %v", patience)
		}
	}
	// A fence that goes away counts as given up for its guardian.
	if err := os.Remove(filepath.Join((&state.Dir{Path: l.state}).MonitorDir(unfenced), state.CustodyName)); err != nil {
		t.Fatal(err)
	}

	// Fill the file system to its last byte.
	filler := filepath.Join(l.state, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for chunk := make([]byte, 64<<10); ; {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	for b := []byte{0}; ; {
		if _, err := f.Write(b); err != nil {
			break
		}
	}
	f.Close()

	// A cancel while the record still shows a current window: its receipt
	// cannot be stored, and status says so rather than show the record's
	// running (the guardian gives its custody up, and readers ask it).
	if r, _ := l.run("cancel", "--grace", "1", quick); r.Get("status").String() != state.StatusCancelled {
		t.Fatalf("cancel on a full disk answered %s", r.Raw)
	}
	if s := l.status(quick); s.Get("status").String() != state.StatusCancelled || !strings.Contains(s.Get("state_error").String(), "no space") {
		t.Fatalf("status after a cancel whose receipt cannot be stored: %s", s.Raw)
	}

	// A start that cannot be recorded is refused, typed.
	if r, _ := l.run("start", "--", "sleeper"); !strings.Contains(r.Get("error.message").String(), "is full") {
		t.Fatalf("a start on a full disk answered %s: want a typed error that says the disk is full", r.Raw)
	}
	// A reconcile that cannot store its receipt has still stopped what
	// was left: its answer says so and reports the receipt it could not
	// store, since a later reconcile finds nothing left to report. It
	// said "running services keep their custody meanwhile", with nothing
	// of what it had signalled.
	if err := unix.Kill(lm.GuardianPID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	l.awaitLapse(lost)
	if r, _ := l.run("reconcile", lost); !strings.Contains(r.Get("error.message").String(), "reconcile of "+lost+" sent SIGSTOP to 2, then SIGKILL to 2; nothing is left, but could not store its receipt") ||
		!strings.Contains(r.Get("error.message").String(), "is full") || !r.Get("error.details.receipt.group_empty_verified").Bool() ||
		len(r.Get("error.details.receipt.signals").Array()) == 0 {
		t.Fatalf("a reconcile on a full disk answered %s", r.Raw)
	}
	// Past more than one ownership window of failed heartbeats, the
	// guardians still hold custody and status says what is wrong.
	time.Sleep(5 * time.Second)
	for _, id := range []string{hid, lid} {
		s := l.status(id)
		if s.Get("status").String() != state.StatusRunning || !strings.Contains(s.Get("state_error").String(), "no space") {
			t.Fatalf("a healthy monitor on a full disk: %s", s.Raw)
		}
	}
	// A guardian whose custody holds only in memory, stopped until it is
	// shown as needing reconciliation, never claims it again once resumed:
	// it drains, though its receipt cannot be stored yet. So does one whose
	// fence was removed.
	for id, m := range map[string]*state.Monitor{stalled: sm, unfenced: um} {
		l.stopGuardian(id, m)
		l.awaitLapse(id)
		unix.Kill(m.GuardianPID, unix.SIGCONT)
		for deadline := time.Now().Add(patience); ; time.Sleep(20 * time.Millisecond) {
			s := l.status(id) // never running again
			if s.Get("status").String() == state.StatusCancelled {
				if s.Get("reason").String() != "heartbeat_missed" {
					t.Fatalf("a guardian resumed past its shown lapse: %s", s.Raw)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a guardian resumed past its shown lapse did not drain: %s", s.Raw)
			}
		}
	}
	// Output that cannot be stored is counted, and the pipe is still read:
	// the loud service never blocks.
	first := l.status(lid)
	if !strings.Contains(first.Get("log_error").String(), "no space") || first.Get("log_bytes_lost").Int() == 0 {
		t.Fatalf("a service whose output cannot be stored: %s", first.Raw)
	}
	for deadline := time.Now().Add(patience); l.status(lid).Get("captured_bytes").Int() <= first.Get("captured_bytes").Int(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the loud service's output stopped being read: %s", first.Raw)
		}
	}
	// logs says the text is not the whole output, and by how much: it
	// said output_truncated false, with 13 MB lost.
	if g, _ := l.run("logs", lid); !g.Get("output_truncated").Bool() || !strings.Contains(g.Get("truncation").Raw, `"log_lost"`) ||
		g.Get("log_bytes_lost").Int() == 0 {
		t.Fatalf("logs of a service whose output cannot be stored: %s", g.Raw)
	}
	// A wait for output that times out says that output was lost: the
	// text may have been printed among it.
	if w, _ := l.run("wait", lid, "--output", "never printed", "--timeout", "1"); w.Get("outcome").String() != "timeout" ||
		w.Get("observation.log_bytes_lost").Int() == 0 || !strings.Contains(w.Get("observation.log_error").String(), "no space") {
		t.Fatalf("a wait for output on a full disk answered %s", w.Raw)
	}
	// Once it has drained, its receipt and its counters are the
	// guardian's, not the record's, which are as old as the disk's filling.
	if r, _ := l.run("cancel", "--grace", "1", l2id); r.Get("status").String() != state.StatusCancelled {
		t.Fatalf("cancel of a loud service on a full disk answered %s", r.Raw)
	}
	if s := l.status(l2id); s.Get("status").String() != state.StatusCancelled || s.Get("log_bytes_lost").Int() == 0 ||
		!strings.Contains(s.Get("log_error").String(), "no space") || s.Get("captured_bytes").Int() <= s.Get("log_bytes").Int() {
		t.Fatalf("status of a drained service whose output could not be stored: %s", s.Raw)
	}
	// A cancel gets the guardian's verified receipt, though it cannot be
	// stored yet.
	r, _ := l.run("cancel", "--grace", "1", hid)
	if r.Get("status").String() != state.StatusCancelled || !r.Get("group_empty_verified").Bool() || r.Get("reason").String() != "cancel" || !strings.Contains(r.Get("state_error").String(), "no space") {
		t.Fatalf("cancel on a full disk answered %s", r.Raw)
	}
	// Once space returns, everything lands: the receipt is stored, the
	// guardian exits, and the other monitor renews again.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	d := &state.Dir{Path: l.state}
	if r, _ := l.run("reconcile", lost); r.Get("status").String() != state.StatusCancelled || !r.Get("group_empty_verified").Bool() {
		t.Fatalf("a reconcile once space returned answered %s", r.Raw)
	}
	for _, want := range []struct{ id, reason string }{{hid, "cancel"}, {l2id, "cancel"}, {quick, "cancel"}, {stalled, "heartbeat_missed"}, {unfenced, "heartbeat_missed"}} {
		for deadline := time.Now().Add(patience); ; time.Sleep(50 * time.Millisecond) {
			m, err := d.LoadMonitor(want.id)
			if err == nil && m.Receipt != nil && m.Receipt.Reason == want.reason && m.Receipt.GroupEmptyVerified {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the receipt never landed once space returned: %+v (%v)", m, err)
			}
		}
	}
	for deadline := time.Now().Add(patience); ; time.Sleep(50 * time.Millisecond) {
		s := l.status(lid)
		if s.Get("status").String() == state.StatusRunning && !s.Get("state_error").Exists() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other monitor still cannot renew once space returned: %s", s.Raw)
		}
	}
	l.settle()
}

// TestFaultsDescriptorLimits runs commands under every file descriptor
// limit from 4 up: each answers one typed JSON object (a limit too low to
// work with is refused as such), and running out of descriptors is never
// taken for a damaged or unsafe state directory.
func TestFaultsDescriptorLimits(t *testing.T) {
	l := newFaultLab(t, 30, 1000)
	started, _ := l.run("start", "--", "sleeper")
	id := started.Get("monitor_id").String()
	for n := 4; n <= 48; n++ {
		for _, args := range [][]string{{"status", id}, {"list"}, {"logs", id}, {"start", "--", "sleeper"}} {
			c := l.command("", "sh", "-c", fmt.Sprintf(`ulimit -n %d && exec procmon "$@"`, n), "sh")
			c.Args = append([]string{"sh", "-c", fmt.Sprintf(`ulimit -n %d && exec procmon "$@"`, n), "sh"}, args...)
			c.Path = "/bin/sh"
			r, _ := l.answer(c)
			switch code := r.Get("error.code").String(); code {
			case string(protocol.CodeStateUnsafe), string(protocol.CodeStateCorrupt):
				t.Fatalf("procmon %v under ulimit -n %d answered %s: running out of descriptors says nothing of the state directory", args, n, r.Raw)
			}
		}
	}
	l.settle()
}

// TestFaultsGuardianDescriptors holds more watch subscriptions on a
// guardian than its descriptor limit leaves room for (a few dozen waits do
// that under ulimit -n 32, the fewest procmon runs with): the guardian
// turns away the watches it cannot afford, each of which a wait replaces
// with a watch of its own on the monitor's directory, and keeps the
// descriptors its custody needs. A cancel still gets a verified receipt,
// and the service's child that left its session is stopped with the rest.
func TestFaultsGuardianDescriptors(t *testing.T) {
	l := newFaultLab(t, 30, 20)
	c := l.command("", "start", "--", "sh", "-c", "setsid sleeper escaped & exec sleeper")
	c.Args = append([]string{"sh", "-c", `ulimit -n 32 && exec procmon "$@"`, "sh"}, c.Args[1:]...)
	c.Path = "/bin/sh"
	r, _ := l.answer(c)
	id := r.Get("monitor_id").String()
	if id == "" {
		t.Fatalf("start under ulimit -n 32 answered %s", r.Raw)
	}
	sock := filepath.Join(l.state, "monitors", id, state.ControlName)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 48 {
		conn, err := net.DialTimeout("unix", sock, patience)
		if err != nil {
			t.Fatalf("dial the guardian: %v", err)
		}
		conns = append(conns, conn)
		if _, err := conn.Write([]byte(`{"op":"watch"}` + "\n")); err != nil {
			t.Fatalf("ask for a watch: %v", err)
		}
	}
	// Each watch is answered: acknowledged, or turned away at once.
	acked := 0
	for _, conn := range conns {
		conn.SetReadDeadline(time.Now().Add(patience))
		ack := make([]byte, 1)
		n, err := conn.Read(ack)
		if n == 1 {
			acked++
		} else if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a watch was neither acknowledged nor turned away within %v (%d acknowledged)", patience, acked)
		}
	}
	if acked == len(conns) {
		t.Fatalf("all %d watches acknowledged under ulimit -n 32", acked)
	}
	// Callers that connect and send nothing (stopped, say) hold a slot
	// each only briefly while the slots are all taken: a ping behind four
	// of them is answered in about a second. (They held one for 10 s
	// each, so the ping waited 20 s, well past a reader's patience.)
	for range 4 {
		conn, err := net.DialTimeout("unix", sock, patience)
		if err != nil {
			t.Fatalf("dial the guardian: %v", err)
		}
		conns = append(conns, conn)
	}
	ping, err := net.DialTimeout("unix", sock, patience)
	if err != nil {
		t.Fatalf("dial the guardian: %v", err)
	}
	conns = append(conns, ping)
	ping.SetDeadline(time.Now().Add(8 * time.Second))
	ping.Write([]byte(`{"op":"ping"}` + "\n"))
	if reply, err := bufio.NewReader(ping).ReadString('\n'); err != nil || !strings.Contains(reply, `"phase":"running"`) {
		t.Fatalf("a ping behind idle callers: %q, %v", reply, err)
	}
	got, _ := l.run("cancel", "--grace", "1", id)
	if got.Get("status").String() != state.StatusCancelled || !got.Get("group_empty_verified").Bool() || got.Get("containment").String() != "complete" {
		t.Fatalf("cancel with every spare descriptor of the guardian watched answered %s", got.Raw)
	}
	l.settle()
}

// TestFaultsStartStall stops a guardian between its spawn and its record
// and never resumes it: the start does not wait for it forever. Past the
// ownership grace it kills the guardian and stops what it spawned, and
// fails naming the monitor, whose receipt is reconciled.
func TestFaultsStartStall(t *testing.T) {
	l := newFaultLab(t, 2, 20)
	r, _ := l.answer(l.command("guardian:after_spawn", leakyService...))
	if r.Get("error.code").String() != string(protocol.CodeInternal) || len(l.monitors()) != 0 {
		t.Fatalf("a start whose guardian stalled answered %s, and list shows %v: want internal, and no monitor", r.Raw, l.monitors())
	}
	l.settle()
}

// TestFaultsExecKilled kills a foreground command's custodian (procmon
// exec) while the command's children run: the command dies with it (its
// parent-death signal), its children do not, and the trace the exec left
// in the state directory lets the next list find them, by the session the
// command leads, and stop them. An exec that ends by itself leaves no
// trace behind.
func TestFaultsExecKilled(t *testing.T) {
	l := newFaultLab(t, 30, 20)
	done, _ := l.run("exec", "--timeout", "60s", "--", "sh", "-c", "echo done")
	if done.Get("exit_code").Int() != 0 || len(l.monitors()) != 0 {
		t.Fatalf("an exec that ended by itself: %s, and list shows %v", done.Raw, l.monitors())
	}
	if ids, _ := (&state.Dir{Path: l.state}).MonitorIDs(); len(ids) != 0 {
		t.Fatalf("an exec that ended by itself left %v", ids)
	}

	c := l.command("", "exec", "--timeout", "60s", "--", "sh", "-c", "sleeper & sleeper & exec sleeper")
	end := l.background(c)
	command := guardianOf(t, c.Process.Pid) // the exec's child: the command
	awaitSession(t, command, 3)
	unix.Kill(c.Process.Pid, unix.SIGKILL)
	if _, exited := end(); exited {
		t.Fatal("exec answered though it was killed")
	}
	if ids := l.monitors(); len(ids) != 0 {
		t.Fatalf("the trace of a killed exec shows as monitors %v", ids)
	}
	l.nothingLeft()
	if ids, _ := (&state.Dir{Path: l.state}).MonitorIDs(); len(ids) != 0 {
		t.Fatalf("the trace of a killed exec is still there once nothing is left: %v", ids)
	}
}

// TestFaultsExecKilledThenRunEnd kills a foreground command's custodian
// (procmon exec) while the command's children run, then ends the run:
// the end stops what the killed exec left, as a list does, and its trace
// goes. It used to leave them running until some later list.
func TestFaultsExecKilledThenRunEnd(t *testing.T) {
	l := newFaultLab(t, 30, 20)
	c := l.command("", "exec", "--timeout", "60s", "--", "sh", "-c", "sleeper & sleeper & exec sleeper")
	end := l.background(c)
	command := guardianOf(t, c.Process.Pid) // the exec's child: the command
	awaitSession(t, command, 3)
	unix.Kill(c.Process.Pid, unix.SIGKILL)
	if _, exited := end(); exited {
		t.Fatal("exec answered though it was killed")
	}
	if r, _ := l.run("run", "end"); r.Get("error").Exists() {
		t.Fatalf("run end: %s", r.Raw)
	}
	// Nothing but the run's end has looked at the state directory since
	// the exec was killed.
	l.nothingLeft()
	if ids, _ := (&state.Dir{Path: l.state}).MonitorIDs(); len(ids) != 0 {
		t.Fatalf("the trace of a killed exec is still there after run end: %v", ids)
	}
}

// TestFaultsExecKilledWithEscapee kills a foreground command's custodian
// (procmon exec) while a descendant of the command has left the command's
// session with setsid (and ignores SIGTERM). The command dies with its
// custodian; the escapee, out of the session the trace names, was out of
// the sweep's sight and outlived it with no trace left. The custodian
// keeps the sessions it sees in the trace, and the next list stops them
// too before the trace goes.
func TestFaultsExecKilledWithEscapee(t *testing.T) {
	l := newFaultLab(t, 30, 20)
	c := l.command("", "exec", "--timeout", "60s", "--", "forker", "pids.txt")
	end := l.background(c)
	escapee, ticks := l.forkerEscapee("pids.txt")
	d := &state.Dir{Path: l.state}
	traced := func() bool {
		ids, _ := d.MonitorIDs()
		return slices.ContainsFunc(ids, func(id string) bool {
			e, err := d.LoadTraceEscapes(id)
			return err == nil && slices.ContainsFunc(e.EscapedSessions, func(s state.EscapedSession) bool {
				return s.SID == escapee && slices.Contains(s.Witnesses, state.Witness{PID: escapee, StartTicks: ticks})
			})
		})
	}
	for deadline := time.Now().Add(patience); !traced(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no trace of the exec names the escapee's session %d in %v", escapee, patience)
		}
	}
	unix.Kill(c.Process.Pid, unix.SIGKILL)
	if _, exited := end(); exited {
		t.Fatal("exec answered though it was killed")
	}
	if ids := l.monitors(); len(ids) != 0 {
		t.Fatalf("the trace of a killed exec shows as monitors %v", ids)
	}
	if proc.Matches(escapee, ticks) {
		t.Fatalf("the escapee %d outlived the sweep of the killed exec's trace", escapee)
	}
	l.nothingLeft()
	if ids, _ := d.MonitorIDs(); len(ids) != 0 {
		t.Fatalf("the trace of a killed exec is still there once nothing is left: %v", ids)
	}
}

// TestFaultsStartInterruptedOnceHandedOff signals procmon start while it
// is stopped just before it reads a handoff the guardian has already
// written, so that once resumed it decides at once. Each start answers,
// and names what it started: wait_interrupted with the drained receipt,
// or, for an interrupt that came too late to count, the running handoff.
//
// Too late is possible: the kernel hands a signal sent to the process to
// whichever of its threads runs first, and one that takes it may run the
// runtime's handler only after start has decided (about one start in two
// hundred here). An interrupt the runtime has received by then is always
// seen (os/signal delivers to channels from a goroutine of its own, and
// start waits for it), where before about one in ten was missed; and the
// Python shim cancels a running answer that reaches it with an interrupt.
func TestFaultsStartInterruptedOnceHandedOff(t *testing.T) {
	l := newFaultLab(t, 30, 100)
	drained := 0
	for i := 0; i < 20; i++ {
		c := l.command("start:before_handoff", "start", "--", "sleeper")
		end := l.background(c)
		if err := awaitStopped(c.Process.Pid); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // the guardian hands off meanwhile
		unix.Kill(c.Process.Pid, unix.SIGINT)
		unix.Kill(c.Process.Pid, unix.SIGCONT)
		r, exited := end()
		switch {
		case !exited:
			l.settle()
			t.Fatalf("start %d, interrupted, died unanswered", i)
		case r.Get("error.code").String() == string(protocol.CodeWaitInterrupted):
			if res := r.Get("error.details.result"); res.Get("reason").String() != "interrupted" || !res.Get("group_empty_verified").Bool() {
				l.settle()
				t.Fatalf("start %d answered %s: want the drained receipt", i, r.Raw)
			}
			drained++
		case r.Get("status").String() == state.StatusRunning:
			id := r.Get("monitor_id").String()
			if s := l.status(id).Get("status").String(); s != state.StatusRunning {
				l.settle()
				t.Fatalf("start %d answered %s, and %s is %s", i, r.Raw, id, s)
			}
			l.run("cancel", id)
		default:
			l.settle()
			t.Fatalf("start %d, interrupted, answered %s", i, r.Raw)
		}
	}
	l.settle()
	// Too late is rare: a start that never drains on an interrupt is
	// broken, not late.
	if drained < 15 {
		t.Fatalf("%d of 20 interrupted starts drained what they started", drained)
	}
}
