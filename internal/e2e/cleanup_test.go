package e2e

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"

	"procmon/internal/proc"
	"procmon/internal/state"
)

// TestCleanupSparesAReusedPid: the clean-up every test and script runs at
// its end (killLeftovers) never kills what another test started, even
// when a record of its own names a pid that another test's guardian holds
// now. Before the clean-up kept to the recorded guardian's session, one
// script's end could take a pgid it had recorded for the pid of a
// guardian started later by a script beside it, once the pid counter had
// wrapped (a wait on that monitor then found its guardian gone with no
// receipt). The reuse is staged here by rewriting the record.
func TestCleanupSparesAReusedPid(t *testing.T) {
	work := t.TempDir()
	dirA, dirB := filepath.Join(work, "a"), filepath.Join(work, "b")
	procmonA, procmonB := procmonIn(t, dirA, work), procmonIn(t, dirB, work)
	for _, pm := range []func(...string) *exec.Cmd{procmonA, procmonB} {
		runProcmon(t, pm, "configure", "--enable")
	}
	a := startMonitor(t, procmonA, "start", "--", "sleep", "1000")
	runProcmon(t, procmonA, "cancel", a)
	b := startMonitor(t, procmonB, "start", "--", "sleep", "1000")
	mb := recordOf(t, dirB, b)

	// A's record now names B's guardian, as a reused pid would: same
	// number, its holder started after the guardian A's record names.
	_, err := (&state.Dir{Path: dirA}).UpdateMonitor(a, func(m *state.Monitor) error {
		m.GuardianPID, m.GuardianStartTicks = mb.GuardianPID, mb.GuardianStartTicks-1
		m.PID, m.PGID = mb.GuardianPID, mb.GuardianPID
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	killLeftovers(dirA)

	if !proc.Matches(mb.GuardianPID, mb.GuardianStartTicks) || !proc.Matches(mb.PID, mb.ChildStartTicks) {
		t.Fatalf("cleaning up after A killed B's guardian %d or its service %d", mb.GuardianPID, mb.PID)
	}
	if st := gjson.GetBytes(runProcmon(t, procmonB, "status", b), "status").String(); st != state.StatusRunning {
		t.Fatalf("B is %s after A's clean-up, want running", st)
	}
	runProcmon(t, procmonB, "cancel", b)
	assertNothingLeft(t, dirB)
	assertNothingLeft(t, dirA)
}
