package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tidwall/gjson"
	"golang.org/x/sys/unix"

	"procmon/internal/proc"
	"procmon/internal/protocol"
	"procmon/internal/state"
	"procmon/internal/wait"
)

// TestScripts runs every script of testscripts/ against the binary, each
// in a state directory of its own, and fails a script whose guardians
// logged a failure of their own.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "../../testscripts",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       os.Getenv("PROCMON_UPDATE") == "1", // rewrite what cmp compares with
		Setup: func(e *testscript.Env) error {
			stateDir := filepath.Join(e.WorkDir, "state")
			e.Setenv("PROCMON_STATE_DIR", stateDir)
			e.Setenv("HOME", filepath.Join(e.WorkDir, "home"))
			e.Setenv("XDG_STATE_HOME", "")
			e.Setenv("PROCMON_RUN", "")
			// Whatever a failed script left behind is killed: only the
			// guardians and groups its own records prove it started.
			e.Defer(func() { killLeftovers(stateDir) })
			// Deferred calls run last first: the guardians' logs are read
			// before anything is killed.
			e.Defer(func() { checkGuardianLogs(e.T(), stateDir) })
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "timens" {
				return timeNamespaces(), nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"json":         cmdJSON,
			"capture":      cmdCapture,
			"await":        cmdAwait,
			"awaitlog":     cmdAwaitLog,
			"awaitcounted": cmdAwaitCounted,
			"gone":         cmdGone,
			"nothingleft":  cmdNothingLeft,
			"killguardian": cmdKillGuardian,
			"waiting":      cmdWaiting,
			"hardlink":     cmdHardlink,
			"tamper":       cmdTamper,
			"owner":        cmdOwner,
			"running":      cmdRunning,
			"reassemble":   cmdReassemble,
			"nosecret":     cmdNoSecret,
			"sigchild":     cmdSigChild,
			"sigguardian":  cmdSigGuardian,
			"private":      cmdPrivate,
			"heartbeats":   cmdHeartbeats,
			"markended":    cmdMarkEnded,
			"plant":        cmdPlant,
			"unplant":      cmdUnplant,
			"outside":      cmdOutside,
			"bounded":      cmdBounded,
			"pty":          cmdPty,
		},
	})
}

// timeNamespaces reports whether this test may run a command in a time
// namespace of its own (condition timens): it needs unshare(1), root and a
// kernel built with time namespaces.
var timeNamespaces = sync.OnceValue(func() bool {
	return exec.Command("unshare", "--time", "--boottime", "1", "true").Run() == nil
})

// guardianFailures are what a guardian writes to its log only when it
// fails: a panic, a fatal runtime error, or a data race seen by a guardian
// built with the race detector (which would otherwise go unnoticed, since
// nobody waits for a guardian's exit status).
var guardianFailures = []string{"panic:", "fatal error:", "WARNING: DATA RACE"}

// checkGuardianLogs shows the log of every guardian of the state directory
// (in the test's output, seen when it fails or with -v) and fails the
// script when one of them failed.
func checkGuardianLogs(t testscript.T, dir string) {
	d := &state.Dir{Path: dir}
	ids, _ := d.MonitorIDs()
	var failed []string
	for _, id := range ids {
		b, err := os.ReadFile(filepath.Join(d.MonitorDir(id), state.GuardianLogName))
		if err != nil || len(b) == 0 {
			continue
		}
		t.Log(fmt.Sprintf("guardian.log of %s:\n%s", id, b))
		for _, f := range guardianFailures {
			if bytes.Contains(b, []byte(f)) {
				failed = append(failed, fmt.Sprintf("%s (%q)", id, f))
			}
		}
	}
	if len(failed) > 0 {
		t.Fatal("guardians failed: " + strings.Join(failed, ", "))
	}
}

// json FILE PATH WANT checks one field of a JSON file (or stdout) with a
// gjson path; WANT is compared with the field's string form (null for a
// JSON null), @NAME compares with the content of file NAME, <N asserts a
// number below N, and the special WANT <absent> asserts that the field
// does not exist.
func cmdJSON(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: json FILE PATH WANT")
	}
	want := args[2]
	if name, ok := strings.CutPrefix(want, "@"); ok {
		want = ts.ReadFile(name)
	}
	res := gjson.Get(ts.ReadFile(args[0]), args[1])
	got, ok := res.String(), res.Exists()
	if res.Type == gjson.Null && ok {
		got = "null"
	}
	match := ok && got == want
	if want == "<absent>" {
		match = !ok
	} else if bound, isBound := strings.CutPrefix(want, "<"); isBound {
		n, err := strconv.ParseFloat(bound, 64)
		if err != nil {
			ts.Fatalf("json: bound %q is not a number", want)
		}
		match = ok && res.Type == gjson.Number && res.Float() < n
	}
	if match == neg {
		ts.Fatalf("json %s %s: got %q (exists %v), want %s%q", args[0], args[1], got, ok, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// capture VAR FILE PATH sets $VAR to a field of a JSON file (or stdout).
func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: capture VAR FILE PATH")
	}
	res := gjson.Get(ts.ReadFile(args[1]), args[2])
	if !res.Exists() {
		ts.Fatalf("capture: %s has no %s", args[1], args[2])
	}
	ts.Setenv(args[0], res.String())
}

func stateDir(ts *testscript.TestScript) *state.Dir {
	return &state.Dir{Path: ts.Getenv("PROCMON_STATE_DIR")}
}

// awaitEvent calls check on every change in dir until it returns true,
// failing the script after patience. A slow timer covers missed events.
func awaitEvent(ts *testscript.TestScript, dir string, what func() string, check func() bool) {
	w, err := wait.NewWatcher(dir)
	if err != nil {
		ts.Fatalf("watch %s: %v", dir, err)
	}
	defer w.Close()
	deadline := time.After(patience)
	safety := time.NewTicker(time.Second)
	defer safety.Stop()
	for !check() {
		select {
		case <-w.Events():
		case <-safety.C:
		case <-deadline:
			ts.Fatalf("%s: not reached within %v", what(), patience)
		}
	}
}

// await ID STATUS waits until a monitor shows the status; a record not
// there, damaged or unsafe (made so by the script) is waited for too.
func cmdAwait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: await MONITOR_ID STATUS")
	}
	dir := stateDir(ts)
	last := ""
	what := func() string {
		s := "await " + args[1] + " (last seen " + strconv.Quote(last) + ")"
		// A guardian the script signalled is known by pid even when its
		// record is not there: say where it is, for a failure to explain.
		var pid int
		if _, err := fmt.Sscan(ts.Getenv("sigguardian:"+args[0]), &pid); err == nil && pid > 0 {
			s += "; guardian " + processState(pid)
		}
		return s
	}
	awaitEvent(ts, dir.MonitorDir(args[0]), what, func() bool {
		o, err := proc.Observe(dir, args[0])
		if protocol.HasCode(err, protocol.CodeUnknownMonitor) || protocol.HasCode(err, protocol.CodeStateCorrupt) ||
			protocol.HasCode(err, protocol.CodeStateUnsafe) {
			// One removed, damaged or linked by the script, which the
			// guardian writes again.
			last = err.Error()
			return false
		}
		if err != nil {
			ts.Fatalf("await: %v", err)
		}
		last = o.Status
		return o.Status == args[1]
	})
}

// processState says what a process is doing, as /proc shows it: its state
// and the kernel function it waits in (an fsync shows as a journal
// wait), or that it is gone.
func processState(pid int) string {
	st, ok := statOf(pid)
	if !ok {
		return fmt.Sprintf("%d is gone", pid)
	}
	wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
	return fmt.Sprintf("%d is in state %s, waiting in %q", pid, st.state, wchan)
}

// awaitlog ID TEXT waits until the monitor's stored output holds TEXT.
func cmdAwaitLog(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: awaitlog MONITOR_ID TEXT")
	}
	mdir := stateDir(ts).MonitorDir(args[0])
	awaitEvent(ts, mdir, func() string { return "awaitlog " + args[1] }, func() bool {
		b, _ := os.ReadFile(filepath.Join(mdir, state.LogName))
		return strings.Contains(string(b), args[1])
	})
}

// awaitcounted ID N waits until the monitor's guardian counts N bytes
// written to its log (its live counters, or its record once it is gone).
// The guardian counts a write once it returns, so text may be in the log
// (awaitlog) before it is counted: a check of the log against the count
// must wait for the count.
func cmdAwaitCounted(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: awaitcounted MONITOR_ID BYTES")
	}
	n, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil {
		ts.Fatalf("awaitcounted: %v", err)
	}
	dir := stateDir(ts)
	counted := int64(-1)
	awaitEvent(ts, dir.MonitorDir(args[0]), func() string { return fmt.Sprintf("awaitcounted %d (counted %d)", n, counted) }, func() bool {
		m, err := dir.LoadMonitor(args[0])
		if err != nil {
			return false
		}
		proc.LiveCounters(context.Background(), dir, m)
		counted = m.LogBytes
		return counted >= n
	})
}

// gone PIDFILE|PID... asserts that every pid given, or listed in a file,
// has ended (waiting for it, bounded).
func cmdGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: gone PIDFILE|PID...")
	}
	var pids []string
	for _, a := range args {
		if _, err := strconv.Atoi(a); err == nil {
			pids = append(pids, a)
		} else {
			pids = append(pids, strings.Fields(ts.ReadFile(a))...)
		}
	}
	for _, f := range pids {
		pid, err := strconv.Atoi(f)
		if err != nil {
			ts.Fatalf("gone: %s holds %q", args[0], f)
		}
		ticks, err := proc.StartTicks(pid)
		if err != nil {
			continue
		}
		if !awaitGone(pid, ticks) {
			ts.Fatalf("gone: pid %d is still running", pid)
		}
	}
}

// nothingleft asserts that no monitor of the state directory left a
// process: every guardian has exited, every group is empty, every child
// is gone.
func cmdNothingLeft(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: nothingleft")
	}
	if problems := leftovers(ts.Getenv("PROCMON_STATE_DIR"), true); len(problems) > 0 {
		ts.Fatalf("processes left behind:\n%s", strings.Join(problems, "\n"))
	}
}

// killguardian ID kills a monitor's guardian with SIGKILL.
func cmdKillGuardian(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: killguardian MONITOR_ID")
	}
	m, err := stateDir(ts).LoadMonitor(args[0])
	if err != nil {
		ts.Fatalf("killguardian: %v", err)
	}
	if !proc.Matches(m.GuardianPID, m.GuardianStartTicks) {
		ts.Fatalf("killguardian: guardian %d is not running", m.GuardianPID)
	}
	unix.Kill(m.GuardianPID, unix.SIGKILL)
	if !awaitGone(m.GuardianPID, m.GuardianStartTicks) {
		ts.Fatalf("killguardian: guardian %d survived SIGKILL", m.GuardianPID)
	}
}

// running PID... asserts that each process is alive now.
func cmdRunning(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: running PID...")
	}
	for _, a := range args {
		pid, err := strconv.Atoi(a)
		if err != nil {
			ts.Fatalf("running: %q is not a pid", a)
		}
		if ticks, err := proc.StartTicks(pid); err != nil || !proc.Matches(pid, ticks) {
			ts.Fatalf("running: pid %d is not running", pid)
		}
	}
}

// tamper ID FIELD VALUE rewrites one field of a monitor record, with a
// valid checksum, to stage what procmon must not be fooled by: VALUE is
// JSON, or +N to add N to a number.
func cmdTamper(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: tamper MONITOR_ID FIELD VALUE")
	}
	// The tampered record may no longer lead the final clean-up to the
	// guardian and child: remember them as they were.
	if m, err := stateDir(ts).LoadMonitor(args[0]); err == nil {
		ts.Defer(func() {
			for _, p := range []proc.Member{{PID: m.GuardianPID, StartTicks: m.GuardianStartTicks}, {PID: m.PID, StartTicks: m.ChildStartTicks}} {
				if proc.Matches(p.PID, p.StartTicks) {
					unix.Kill(p.PID, unix.SIGKILL)
				}
			}
		})
	}
	_, err := stateDir(ts).UpdateMonitor(args[0], func(m *state.Monitor) error {
		raw, _ := json.Marshal(m)
		var obj map[string]any
		json.Unmarshal(raw, &obj)
		if delta, ok := strings.CutPrefix(args[2], "+"); ok {
			n, err := strconv.ParseFloat(delta, 64)
			old, isNum := obj[args[1]].(float64)
			if err != nil || !isNum {
				return fmt.Errorf("field %s is not a number", args[1])
			}
			obj[args[1]] = old + n
		} else {
			var v any
			if err := json.Unmarshal([]byte(args[2]), &v); err != nil {
				return fmt.Errorf("value %q is not JSON", args[2])
			}
			obj[args[1]] = v
		}
		raw, _ = json.Marshal(obj)
		*m = state.Monitor{}
		return json.Unmarshal(raw, m)
	})
	if err != nil {
		ts.Fatalf("tamper: %v", err)
	}
}

// owner start VAR starts a process to own a run and sets $VAR to its pid;
// owner kill VAR kills it. Only the pid started here is ever signalled.
func cmdOwner(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 || (args[0] != "start" && args[0] != "kill") {
		ts.Fatalf("usage: owner start|kill VAR")
	}
	key := "owner:" + args[1]
	if args[0] == "start" {
		exe, err := os.Executable()
		if err != nil {
			ts.Fatalf("owner: %v", err)
		}
		c := exec.Command(exe)
		c.Args[0] = "sleeper"
		if err := c.Start(); err != nil {
			ts.Fatalf("owner: %v", err)
		}
		go c.Wait()
		ts.Defer(func() { c.Process.Kill() })
		ts.Setenv(args[1], strconv.Itoa(c.Process.Pid))
		ts.Setenv(key, strconv.Itoa(c.Process.Pid))
		return
	}
	pid, err := strconv.Atoi(ts.Getenv(key))
	if err != nil {
		ts.Fatalf("owner kill %s: no owner started under that name", args[1])
	}
	ticks, _ := proc.StartTicks(pid)
	unix.Kill(pid, unix.SIGKILL)
	if !awaitGone(pid, ticks) {
		ts.Fatalf("owner %d survived SIGKILL", pid)
	}
}

// reassemble ID FILE MAXBYTES reads a monitor's whole output through the
// logs offset cursor in windows of MAXBYTES and compares it, byte for
// byte, with FILE.
func cmdReassemble(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: reassemble MONITOR_ID FILE MAXBYTES")
	}
	want := ts.ReadFile(args[1])
	var got strings.Builder
	offset := int64(0)
	for calls := 0; ; calls++ {
		if calls > len(want)+10 {
			ts.Fatalf("reassemble: no progress at offset %d", offset)
		}
		ts.Check(ts.Exec("procmon", "logs", args[0], "--offset", strconv.FormatInt(offset, 10), "--max-bytes", args[2]))
		out := ts.ReadFile("stdout")
		text := gjson.Get(out, "text").String()
		sum := sha256.Sum256([]byte(text))
		if gjson.Get(out, "output_sha256").String() != hex.EncodeToString(sum[:]) || gjson.Get(out, "output_bytes").Int() != int64(len(text)) {
			ts.Fatalf("reassemble: output_bytes/output_sha256 do not describe the text at offset %d", offset)
		}
		got.WriteString(text)
		next := gjson.Get(out, "next_offset").Int()
		if next == gjson.Get(out, "stream_bytes").Int() {
			break
		}
		if next <= offset {
			ts.Fatalf("reassemble: next_offset %d does not advance from %d", next, offset)
		}
		offset = next
	}
	if got.String() != want {
		ts.Fatalf("reassemble: %d bytes differ from the %d of %s", got.Len(), len(want), args[1])
	}
}

// nosecret TEXT... asserts that no file under the state directory, and no
// command line or environment of a live guardian, holds any TEXT.
func cmdNoSecret(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: nosecret TEXT...")
	}
	root := ts.Getenv("PROCMON_STATE_DIR")
	check := func(where string, data []byte) {
		for _, secret := range args {
			if strings.Contains(string(data), secret) {
				ts.Fatalf("nosecret: %s holds a secret (%d bytes long)", where, len(secret))
			}
		}
	}
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(path)
			check(path, data)
		}
		return nil
	})
	d := &state.Dir{Path: root}
	ids, _ := d.MonitorIDs()
	for _, id := range ids {
		if m, err := d.LoadMonitor(id); err == nil && proc.Matches(m.GuardianPID, m.GuardianStartTicks) {
			for _, f := range []string{"cmdline", "environ"} {
				data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/%s", m.GuardianPID, f))
				check(fmt.Sprintf("guardian %d %s", m.GuardianPID, f), data)
			}
		}
	}
}

// sigchild ID SIGNAL and sigguardian ID SIGNAL send SIGSTOP, SIGCONT,
// SIGTERM or SIGKILL to a monitor's own child or guardian, checked against the start
// time recorded when the monitor started (read before any tampering).
func cmdSigChild(ts *testscript.TestScript, neg bool, args []string) {
	signalMonitor(ts, neg, args, "sigchild", func(m *state.Monitor) (int, uint64) { return m.PID, m.ChildStartTicks })
}

func cmdSigGuardian(ts *testscript.TestScript, neg bool, args []string) {
	signalMonitor(ts, neg, args, "sigguardian", func(m *state.Monitor) (int, uint64) { return m.GuardianPID, m.GuardianStartTicks })
}

func signalMonitor(ts *testscript.TestScript, neg bool, args []string, name string, target func(*state.Monitor) (int, uint64)) {
	sig := map[string]unix.Signal{"SIGSTOP": unix.SIGSTOP, "SIGCONT": unix.SIGCONT, "SIGTERM": unix.SIGTERM, "SIGKILL": unix.SIGKILL}
	if neg || len(args) != 2 || sig[args[1]] == 0 {
		ts.Fatalf("usage: %s MONITOR_ID SIGSTOP|SIGCONT|SIGTERM|SIGKILL", name)
	}
	key := name + ":" + args[0]
	pid, ticks := 0, uint64(0)
	if saved := ts.Getenv(key); saved != "" {
		fmt.Sscan(saved, &pid, &ticks)
	} else {
		m, err := stateDir(ts).LoadMonitor(args[0])
		if err != nil {
			ts.Fatalf("%s: %v", name, err)
		}
		pid, ticks = target(m)
		ts.Setenv(key, fmt.Sprint(pid, " ", ticks))
	}
	if !proc.Matches(pid, ticks) {
		ts.Fatalf("%s: pid %d is not running", name, pid)
	}
	if name == "sigguardian" && sig[args[1]] == unix.SIGSTOP {
		if err := stopOutsideLock(pid, ticks, stateDir(ts).MonitorDir(args[0])); err != nil {
			ts.Fatalf("%s: %v", name, err)
		}
		return
	}
	ts.Check(unix.Kill(pid, sig[args[1]]))
}

// heartbeats ID N waits until the monitor's heartbeat_seq reaches N, and
// checks that each renewal moved the ownership window forward.
func cmdHeartbeats(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: heartbeats MONITOR_ID N")
	}
	want, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil {
		ts.Fatalf("heartbeats: %q is not a number", args[1])
	}
	d := stateDir(ts)
	first, err := d.LoadMonitor(args[0])
	if err != nil {
		ts.Fatalf("heartbeats: %v", err)
	}
	var seq int64
	awaitEvent(ts, d.MonitorDir(args[0]), func() string { return fmt.Sprintf("heartbeat %d (at %d)", want, seq) }, func() bool {
		m, err := d.LoadMonitor(args[0])
		if err != nil {
			ts.Fatalf("heartbeats: %v", err)
		}
		seq = m.HeartbeatSeq
		if seq > first.HeartbeatSeq && m.OwnershipExpiresAtMs <= first.OwnershipExpiresAtMs {
			ts.Fatalf("heartbeats: seq %d did not extend the ownership window", seq)
		}
		return seq >= want
	})
}

// markended RUN_ID records a run as ended without draining anything, as
// when "procmon run end" is killed before it reaches the guardians: each
// guardian must notice at its next heartbeat.
func cmdMarkEnded(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: markended RUN_ID")
	}
	now := time.Now().UnixMilli()
	_, err := stateDir(ts).UpdateRun(args[0], func(r *state.Run) error {
		r.EndedAtMs, r.EndReason = &now, "run_ended"
		return nil
	})
	ts.Check(err)
}

// private asserts that everything in the state directory belongs to its
// user alone: directories 0700, files and the control socket 0600.
func cmdPrivate(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: private")
	}
	filepath.WalkDir(ts.Getenv("PROCMON_STATE_DIR"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		want := os.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			ts.Fatalf("private: %s has mode %04o, want %04o", path, fi.Mode().Perm(), want)
		}
		return nil
	})
}
