package e2e

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"golang.org/x/sys/unix"

	"procmon/internal/state"
)

// followBeforeSocketDeadline bounds how long a test waits for logs -f to
// show what it must show while its guardian is stopped: ample for a
// command that needs no answer from the guardian, and short of the 10 s a
// follow used to wait for a stopped guardian to answer its subscription
// before it showed anything at all.
const followBeforeSocketDeadline = 8 * time.Second

// TestLogsFollowGuardianStopped: logs -f of a monitor whose guardian was
// stopped until its custody lapsed shows the tail, and says that custody
// lapsed, while the guardian is still stopped: it used to show nothing
// until its subscription to the stopped guardian gave up, 10 s later.
// Resumed, the guardian drains and the follow ends with the monitor.
func TestLogsFollowGuardianStopped(t *testing.T) {
	work := t.TempDir()
	stateDir := filepath.Join(work, "state")
	procmon := procmonIn(t, stateDir, work)
	// A stopped guardian's custody lapses 2 s after its last renewal.
	storeSettings(t, procmon, hostSettings{graceSeconds: 2, maxOutputBytes: 1000000, commandLimit: 20})
	id := startMonitor(t, procmon, "start", "--", "printer", "-stay", "one", "two", "three")
	awaitLogBytes(t, stateDir, id, int64(len("one\ntwo\nthree\n")))
	m := recordOf(t, stateDir, id)
	if err := stopOutsideLock(m.GuardianPID, m.GuardianStartTicks, (&state.Dir{Path: stateDir}).MonitorDir(id)); err != nil {
		t.Fatal(err)
	}
	defer unix.Kill(m.GuardianPID, unix.SIGCONT)
	awaitStatus(t, procmon, id, state.StatusNeedsReconciliation)

	var stdout, stderr lockedBuffer
	follow := procmon("logs", "-f", id, "--tail", "2")
	follow.Stdout, follow.Stderr = &stdout, &stderr
	ended := startFollow(t, follow)
	shown := func() bool {
		return stdout.String() == "two\nthree\n" && strings.Contains(stderr.String(), "procmon reconcile "+id)
	}
	for deadline := time.Now().Add(followBeforeSocketDeadline); !shown(); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-ended:
			t.Fatalf("logs -f ended (%v) while the guardian was stopped; stdout %q, stderr %q", err, stdout.String(), stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			follow.Process.Kill()
			<-ended
			t.Fatalf("logs -f showed %q and said %q within %v, its guardian stopped; want the last 2 lines and the lapse", stdout.String(), stderr.String(), followBeforeSocketDeadline)
		}
	}

	resumeAndAwaitEnd(t, m, follow, ended, &stderr)
	assertNothingLeft(t, stateDir)
}

// TestLogsFollowGuardianGone: logs -f of a monitor whose guardian was
// killed shows the tail, then ends, saying on stderr (piped, where no
// terminal note says how the follow ended) that custody lapsed with no
// guardian left, and what settles it.
func TestLogsFollowGuardianGone(t *testing.T) {
	work := t.TempDir()
	stateDir := filepath.Join(work, "state")
	procmon := procmonIn(t, stateDir, work)
	runProcmon(t, procmon, "configure", "--enable")
	id := startMonitor(t, procmon, "start", "--", "printer", "-stay", "one", "two", "three")
	awaitLogBytes(t, stateDir, id, int64(len("one\ntwo\nthree\n")))
	m := recordOf(t, stateDir, id)
	if err := unix.Kill(m.GuardianPID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !awaitGone(m.GuardianPID, m.GuardianStartTicks) {
		t.Fatalf("guardian %d still runs after SIGKILL", m.GuardianPID)
	}

	var stdout, stderr lockedBuffer
	follow := procmon("logs", "-f", id, "--tail", "2")
	follow.Stdout, follow.Stderr = &stdout, &stderr
	// It ends with needs_reconciliation's status: the monitor has not.
	awaitFollowEndWith(t, follow, startFollow(t, follow), &stderr, 5)
	if got := stdout.String(); got != "two\nthree\n" {
		t.Errorf("logs -f of a monitor whose guardian is gone showed %q, want %q", got, "two\nthree\n")
	}
	if said := stderr.String(); strings.Count(said, "lapsed") != 1 || !strings.Contains(said, "no guardian is left") || !strings.Contains(said, "procmon reconcile "+id) {
		t.Errorf("logs -f of a monitor whose guardian is gone said %q; want once that custody lapsed with no guardian left, and the reconcile", said)
	}
	runProcmon(t, procmon, "reconcile", id)
	assertNothingLeft(t, stateDir)
}

// awaitStatus waits until status shows monitor id with status want.
func awaitStatus(t *testing.T, procmon func(args ...string) *exec.Cmd, id, want string) {
	t.Helper()
	for deadline := time.Now().Add(patience); ; time.Sleep(50 * time.Millisecond) {
		got := gjson.GetBytes(runProcmon(t, procmon, "status", id), "status").String()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("monitor %s is %s after %v, want %s", id, got, patience, want)
		}
	}
}

// startFollow starts a logs -f command and returns what its end sends.
func startFollow(t *testing.T, follow *exec.Cmd) <-chan error {
	t.Helper()
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- follow.Wait() }()
	return ended
}

// resumeAndAwaitEnd resumes the stopped guardian of m and waits for the
// follow of its monitor to end with the drain that follows: the lapse
// said once, and the guardian gone.
func resumeAndAwaitEnd(t *testing.T, m *state.Monitor, follow *exec.Cmd, ended <-chan error, stderr *lockedBuffer) {
	t.Helper()
	unix.Kill(m.GuardianPID, unix.SIGCONT)
	awaitFollowEnd(t, follow, ended, stderr)
	if n := strings.Count(stderr.String(), "lapsed"); n != 1 {
		t.Errorf("the lapse was said %d times: %q", n, stderr.String())
	}
	if !awaitGone(m.GuardianPID, m.GuardianStartTicks) {
		t.Fatalf("guardian %d still runs after its drain", m.GuardianPID)
	}
}

// awaitFollowEnd waits for a logs -f command, started by startFollow, to
// end of itself with exit status 0, the monitor having ended.
func awaitFollowEnd(t *testing.T, follow *exec.Cmd, ended <-chan error, stderr *lockedBuffer) {
	t.Helper()
	awaitFollowEndWith(t, follow, ended, stderr, 0)
}

// awaitFollowEndWith is awaitFollowEnd for an end with exit status want.
func awaitFollowEndWith(t *testing.T, follow *exec.Cmd, ended <-chan error, stderr *lockedBuffer, want int) {
	t.Helper()
	err := awaitExit(t, follow, ended, patience, fmt.Sprintf("logs -f did not end within %v of its monitor", patience),
		func() string { return fmt.Sprintf("stderr %q", stderr.String()) })
	var exit *exec.ExitError
	switch {
	case want == 0 && err != nil, want != 0 && (!errors.As(err, &exit) || exit.ExitCode() != want):
		t.Fatalf("logs -f: %v, want exit status %d; stderr %q", err, want, stderr.String())
	}
}
