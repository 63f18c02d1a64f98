//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
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

	"procmon/cmd"
	"procmon/internal/proc"
	"procmon/internal/state"
)

// waitingSignals are the signals the waiting command may send.
var waitingSignals = map[string]unix.Signal{"INT": unix.SIGINT, "TERM": unix.SIGTERM, "HUP": unix.SIGHUP}

// waiting [-signal INT|TERM|HUP] COUNT waits until at least COUNT `procmon
// wait` processes started by this script are watching: subscribed on the
// guardian's control socket, or holding an inotify watch when there is no
// guardian (a wait does either only after its signal handlers are in
// place, so from then on a signal is answered, not fatal); with -signal it
// then sends each of them that signal. No event announces a watch in
// another process, so this looks at /proc every 10 ms, within patience.
func cmdWaiting(ts *testscript.TestScript, neg bool, args []string) {
	usage := func() { ts.Fatalf("usage: waiting [-signal INT|TERM|HUP] COUNT") }
	var sig unix.Signal
	if len(args) == 3 && args[0] == "-signal" {
		s, ok := waitingSignals[args[1]]
		if !ok {
			usage()
		}
		sig, args = s, args[2:]
	}
	if neg || len(args) != 1 {
		usage()
	}
	count, err := strconv.Atoi(args[0])
	if err != nil || count < 1 {
		usage()
	}
	stateDir := ts.Getenv("PROCMON_STATE_DIR")
	pids, ok := awaitWaiting(stateDir, count)
	if !ok {
		ts.Fatalf("waiting: %d of %d procmon wait processes watching after %v", len(pids), count, patience)
	}
	if sig != 0 {
		for _, pid := range pids {
			if err := signalWaiting(pid, stateDir, sig); err != nil {
				ts.Fatalf("waiting: signal %d: %v", pid, err)
			}
		}
	}
}

// awaitWaiting polls for count waiting processes of stateDir and returns
// the ones it found.
func awaitWaiting(stateDir string, count int) ([]int, bool) {
	deadline := time.Now().Add(patience)
	for {
		pids := waitingProcs(stateDir)
		if len(pids) >= count {
			return pids, true
		}
		if time.Now().After(deadline) {
			return pids, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitingProcs lists the `procmon wait` processes that this test process
// started with the state directory stateDir and that hold an inotify
// descriptor. Scripts run in parallel, so the state directory tells whose
// a wait is.
func waitingProcs(stateDir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && isWaiting(pid, stateDir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func isWaiting(pid int, stateDir string) bool {
	if st, ok := statOf(pid); !ok || st.ppid != os.Getpid() {
		return false
	}
	dir := "/proc/" + strconv.Itoa(pid)
	cmdline, _ := os.ReadFile(dir + "/cmdline")
	argv := strings.Split(string(cmdline), "\x00")
	if len(argv) < 2 || filepath.Base(argv[0]) != "procmon" || argv[1] != "wait" {
		return false
	}
	environ, _ := os.ReadFile(dir + "/environ")
	if !bytes.Contains(append([]byte{0}, environ...), []byte("\x00PROCMON_STATE_DIR="+stateDir+"\x00")) {
		return false
	}
	// A wait on a live monitor subscribes on the guardian's control socket;
	// on one without a guardian it watches the monitor's directory.
	fds, _ := os.ReadDir(dir + "/fd")
	for _, fd := range fds {
		target, _ := os.Readlink(dir + "/fd/" + fd.Name())
		if target == "anon_inode:inotify" || strings.HasPrefix(target, "socket:") {
			return true
		}
	}
	return false
}

// signalWaiting signals a waiting process through a pidfd, checked again
// after it is opened, so a pid reused meanwhile is never signalled.
func signalWaiting(pid int, stateDir string, sig unix.Signal) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if !isWaiting(pid, stateDir) {
		return errors.New("no longer a waiting procmon wait")
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0)
}

// hardlink OLD NEW gives the file OLD a second name NEW.
func cmdHardlink(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: hardlink OLD NEW")
	}
	if err := os.Link(ts.MkAbs(args[0]), ts.MkAbs(args[1])); err != nil {
		ts.Fatalf("hardlink: %v", err)
	}
}

// socketCount is the number of sockets process pid holds.
func socketCount(pid int) int {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	fds, _ := os.ReadDir(dir)
	n := 0
	for _, fd := range fds {
		if target, _ := os.Readlink(dir + fd.Name()); strings.HasPrefix(target, "socket:") {
			n++
		}
	}
	return n
}

// interruptWait runs procmon wait ARGS..., sends it sig once it is
// watching, and returns what it wrote and its exit status (-1 when the
// signal killed it).
func interruptWait(t *testing.T, procmon func(args ...string) *exec.Cmd, stateDir string, sig unix.Signal, args ...string) (string, int) {
	t.Helper()
	w := procmon(append([]string{"wait"}, args...)...)
	var stdout bytes.Buffer
	w.Stdout = &stdout
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	if _, ok := awaitWaiting(stateDir, 1); !ok {
		w.Process.Kill()
		w.Wait()
		t.Fatalf("procmon wait %v never started watching", args)
	}
	if err := w.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	w.Wait()
	return stdout.String(), w.ProcessState.ExitCode()
}

// TestWaitTerminated checks what a script cannot see: the exit status of
// a wait ended by SIGTERM is exactly 130, its one response is the typed
// error, and the service keeps running.
func TestWaitTerminated(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	run := func(args ...string) []byte { return runProcmon(t, procmon, args...) }

	run("configure", "--enable")
	id := startMonitor(t, procmon, "start", "--", "sleeper")

	stdout, status := interruptWait(t, procmon, stateDir, unix.SIGTERM, id, "--output", "never printed")
	if status != 130 {
		t.Fatalf("procmon wait after SIGTERM: exit status %d, want 130", status)
	}
	if lines := strings.Count(stdout, "\n"); lines != 1 {
		t.Fatalf("procmon wait wrote %d lines, want one response: %q", lines, stdout)
	}
	if code := gjson.Get(stdout, "error.code").String(); code != "wait_interrupted" {
		t.Fatalf("error code %q, want wait_interrupted: %s", code, stdout)
	}

	if status := gjson.GetBytes(run("status", id), "status").String(); status != "running" {
		t.Fatalf("status after the interrupted wait: %s, want running", status)
	}
	run("cancel", id)
	assertNothingLeft(t, stateDir)
}

// TestWatchChangesFromGuardian checks the guardian's change notices, which
// waits on live monitors take their changes from: a notice after new
// output, the end of the notices once the receipt is durable, and no
// guardian to subscribe to after that.
func TestWatchChangesFromGuardian(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	cwd := t.TempDir()
	gate := filepath.Join(cwd, "gate")
	if err := unix.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	procmon := procmonIn(t, stateDir, cwd)
	run := func(args ...string) []byte { return runProcmon(t, procmon, args...) }
	run("configure", "--enable")
	id := startMonitor(t, procmon, "start", "--", "sh", "-c", `read line < gate; echo "$line"; exec sleeper`)
	dir := &state.Dir{Path: stateDir}
	m, err := dir.LoadMonitor(id)
	if err != nil {
		t.Fatal(err)
	}
	// Subscriptions that end while the service is quiet are let go at
	// once, not at the next notice: a wait that returned leaves nothing.
	before := socketCount(m.GuardianPID)
	for range 5 {
		_, sub, err := proc.WatchChanges(context.Background(), dir, m)
		if err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		sub.Close()
	}
	for deadline := time.Now().Add(patience); socketCount(m.GuardianPID) != before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("guardian holds %d sockets after 5 subscriptions ended, %d before", socketCount(m.GuardianPID), before)
		}
	}

	notices, sub, err := proc.WatchChanges(context.Background(), dir, m)
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	defer sub.Close()

	// The service prints only once the subscription stands.
	if err := os.WriteFile(gate, []byte("released\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir.MonitorDir(id), state.LogName)
	for {
		select {
		case _, ok := <-notices:
			if !ok {
				t.Fatal("notices ended while the service ran")
			}
		case <-time.After(patience):
			t.Fatalf("no notice of the output within %v", patience)
		}
		if data, _ := os.ReadFile(log); bytes.Contains(data, []byte("released\n")) {
			break
		}
	}

	run("cancel", id)
	deadline := time.After(patience)
	for ended := false; !ended; {
		select {
		case _, ok := <-notices:
			ended = !ok
		case <-deadline:
			t.Fatalf("notices did not end within %v of the receipt", patience)
		}
	}
	if m, err := dir.LoadMonitor(id); err != nil || m.Receipt == nil {
		t.Fatalf("notices ended before the receipt was durable: %+v, %v", m, err)
	}
	if _, _, err := proc.WatchChanges(context.Background(), dir, m); !proc.IsNoGuardian(err) {
		t.Fatalf("subscribe after the receipt: %v, want no guardian", err)
	}
	assertNothingLeft(t, stateDir)
}

// TestWaitIsNoSecretOracle plays the attack of guessing a registered
// secret one character at a time, through wait and through the guardian's
// control socket, and checks that no answer tells a guess that begins the
// secret from one that does not: every output wait waits out its timeout
// and answers the same observation, and every control request that carries
// a text is refused alike. The guesses run in-process, many at a time, so
// a few hundred cost a few seconds.
func TestWaitIsNoSecretOracle(t *testing.T) {
	const secret = "tok-Q7f3k9Zx2mW4pL"
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	run := func(args ...string) []byte { return runProcmon(t, procmon, args...) }
	run("configure", "--enable")
	id := startMonitor(t, procmon, "start", "--env", "API_TOKEN="+secret, "--", "printer", "-stay", "-env", "API_TOKEN")
	defer func() {
		run("cancel", id)
		assertNothingLeft(t, stateDir)
	}()
	run("wait", id, "--output", "[REDACTED]", "--timeout", "30")

	// Each guess ends with a candidate for the next character of the
	// secret after a prefix the attacker has (or has not) found; one in
	// each 64 is right. The whole secret and the secret inside a longer
	// text are guessed too.
	const alphabet = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
	var guesses []string
	for k := 3; k < 7; k++ {
		for _, c := range alphabet {
			guesses = append(guesses, "key="+secret[:k]+string(c))
		}
	}
	guesses = append(guesses, secret, "key="+secret+" end")

	env := func(stdout *bytes.Buffer) *cmd.Env {
		return &cmd.Env{
			Stdin:  strings.NewReader(""),
			Stdout: stdout,
			Stderr: io.Discard,
			Getenv: func(k string) string {
				switch k {
				case "PROCMON_STATE_DIR":
					return stateDir
				case "PROCMON_RUN", "XDG_STATE_HOME":
					return ""
				}
				return os.Getenv(k)
			},
			Environ: os.Environ,
			Getwd:   os.Getwd,
			Now:     time.Now,
		}
	}
	type answer struct {
		status int
		out    string
	}
	answers := make([]answer, len(guesses))
	var wg sync.WaitGroup
	next := make(chan int)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				var stdout bytes.Buffer
				status := cmd.Run([]string{"wait", id, "--output", guesses[i], "--timeout", "1"}, env(&stdout))
				answers[i] = answer{status, stdout.String()}
			}
		}()
	}
	for i := range guesses {
		next <- i
	}
	close(next)
	wg.Wait()

	// The answers may differ only in the condition they echo and in
	// elapsed time, which must be the whole timeout for every guess.
	var first string
	for i, a := range answers {
		var resp map[string]any
		if err := json.Unmarshal([]byte(a.out), &resp); err != nil {
			t.Fatalf("guess %d: exit status %d, response %q: %v", i, a.status, a.out, err)
		}
		obs, _ := resp["observation"].(map[string]any)
		elapsed, _ := obs["elapsed_ms"].(float64)
		if a.status != 0 || resp["outcome"] != "timeout" || elapsed < 1000 {
			t.Fatalf("guess %d (a prefix of the secret: %v): exit status %d, %s; want outcome timeout after the whole second",
				i, strings.HasSuffix(guesses[i], secret[:4]) || strings.Contains(guesses[i], secret), a.status, redactFor(a.out, secret))
		}
		delete(resp, "condition")
		delete(obs, "elapsed_ms")
		rest, _ := json.Marshal(resp)
		if i == 0 {
			first = string(rest)
		} else if string(rest) != first {
			t.Fatalf("guess %d answered %s, guess 0 %s", i, redactFor(string(rest), secret), redactFor(first, secret))
		}
	}

	// The guardian's control socket takes no text to redact: every such
	// request gets the same refusal, whatever the text.
	dir := &state.Dir{Path: stateDir}
	mdir, err := unix.Open(dir.MonitorDir(id), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(mdir)
	sock := fmt.Sprintf("/proc/self/fd/%d/%s", mdir, state.ControlName)
	var firstReply string
	for i, g := range guesses {
		req, _ := json.Marshal(map[string]string{"op": "redact", "text": g})
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatalf("dial the guardian: %v", err)
		}
		conn.SetDeadline(time.Now().Add(patience))
		conn.Write(append(req, '\n'))
		reply, err := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if err != nil {
			t.Fatalf("guess %d: read the guardian's reply: %v", i, err)
		}
		if i == 0 {
			firstReply = reply
		} else if reply != firstReply {
			t.Fatalf("the guardian answered guess %d with %s, guess 0 with %s", i, redactFor(reply, secret), redactFor(firstReply, secret))
		}
	}
	if !strings.Contains(firstReply, `"code":"invalid_request"`) {
		t.Fatalf("the guardian answered a text to redact with %s, want a refusal", firstReply)
	}
}

// redactFor keeps a test's failure message from printing the secret it
// guards.
func redactFor(s, secret string) string { return strings.ReplaceAll(s, secret, "<secret>") }

// TestWaitInterruptedWhileGuardianStalls checks that a wait blocked on a
// guardian that answers nothing (stopped, within its ownership window)
// still ends at SIGINT, SIGTERM and SIGHUP with exit status 130 and the
// one typed error, and leaves the service running.
func TestWaitInterruptedWhileGuardianStalls(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	run := func(args ...string) []byte { return runProcmon(t, procmon, args...) }
	// A window far longer than the nine waits below: one that lapsed
	// while the guardian is stopped would answer them at once.
	storeSettings(t, procmon, hostSettings{graceSeconds: 300, maxOutputBytes: 1000000, commandLimit: 20})
	id := startMonitor(t, procmon, "start", "--", "sleeper")
	dir := &state.Dir{Path: stateDir}
	m, err := dir.LoadMonitor(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := stopOutsideLock(m.GuardianPID, m.GuardianStartTicks, dir.MonitorDir(id)); err != nil {
		t.Fatal(err)
	}
	defer unix.Kill(m.GuardianPID, unix.SIGCONT)

	for _, sig := range []unix.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP} {
		for _, kind := range [][]string{{"--output", "never printed"}, {"--exit"}, {"--file", "never.json"}} {
			stdout, status := interruptWait(t, procmon, stateDir, sig, append([]string{id}, kind...)...)
			if status != 130 {
				t.Fatalf("procmon wait %v after %v: exit status %d, want 130; wrote %q", kind, sig, status, stdout)
			}
			if lines := strings.Count(stdout, "\n"); lines != 1 || !strings.Contains(stdout, `"code":"wait_interrupted"`) {
				t.Fatalf("procmon wait %v after %v wrote %q, want one wait_interrupted error", kind, sig, stdout)
			}
		}
	}

	unix.Kill(m.GuardianPID, unix.SIGCONT)
	run("cancel", id)
	assertNothingLeft(t, stateDir)
}
