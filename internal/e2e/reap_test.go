//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGuardianReapsOrphans runs a service whose own child leaves a
// background process behind and exits: the orphan is reparented to the
// guardian (a child subreaper), which must reap it once it exits, while
// the service runs on. A zombie left unreaped would hold its pid for as
// long as the service runs.
func TestGuardianReapsOrphans(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")

	id := startMonitor(t, procmon, "start", "--", "sh", "-c", `sh -c 'sleep 2 & echo orphan $!'; exec sleep 1000`)
	defer func() {
		runProcmon(t, procmon, "cancel", id)
		assertNothingLeft(t, stateDir)
	}()
	mdir := filepath.Join(stateDir, "monitors", id)
	guardian := recordOf(t, stateDir, id).GuardianPID

	// The orphan's pid, as its parent printed it before exiting.
	orphanLine := regexp.MustCompile(`orphan (\d+)\n`)
	var orphan int
	for deadline := time.Now().Add(patience); orphan == 0; {
		log, _ := os.ReadFile(filepath.Join(mdir, "output.log"))
		if m := orphanLine.FindSubmatch(log); m != nil {
			orphan, _ = strconv.Atoi(string(m[1]))
		} else if time.Now().After(deadline) {
			t.Fatalf("no orphan pid in output.log within %v: %q", patience, log)
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	// While it sleeps, the orphan is the guardian's child, once the shell
	// that printed its pid has exited (it prints before it exits).
	for deadline := time.Now().Add(patience); ; time.Sleep(time.Millisecond) {
		st, _ := statOf(orphan)
		if st.ppid == guardian {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("orphan %d has parent %d (state %q), want the guardian %d", orphan, st.ppid, st.state, guardian)
		}
	}
	// Once it exits, it is reaped: its /proc entry goes, zombie included.
	for deadline := time.Now().Add(patience); ; time.Sleep(20 * time.Millisecond) {
		st, _ := statOf(orphan)
		if st.ppid != guardian {
			break // reaped (or the pid reused by another parent's child)
		}
		if time.Now().After(deadline) {
			t.Fatalf("orphan %d is still the guardian's child (state %q) %v later", orphan, st.state, patience)
		}
	}
	if status := runProcmon(t, procmon, "status", id); !strings.Contains(string(status), `"status":"running"`) {
		t.Fatalf("the service stopped with its orphan: %s", status)
	}
}
