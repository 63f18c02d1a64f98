//go:build linux

package e2e

import (
	"encoding/json"
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

	out := runProcmon(t, procmon, "start", "--", "sh", "-c", `sh -c 'sleep 2 & echo orphan $!'; exec sleep 1000`)
	var started struct {
		MonitorID string `json:"monitor_id"`
	}
	if err := json.Unmarshal(out, &started); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	defer func() {
		runProcmon(t, procmon, "cancel", started.MonitorID)
		if problems := leftovers(stateDir, true); len(problems) > 0 {
			t.Fatalf("processes left behind: %v", problems)
		}
	}()
	mdir := filepath.Join(stateDir, "monitors", started.MonitorID)
	guardian := recordOf(t, stateDir, started.MonitorID).GuardianPID

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
		ppid, state := parentOf(orphan)
		if ppid == guardian {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("orphan %d has parent %d (state %q), want the guardian %d", orphan, ppid, state, guardian)
		}
	}
	// Once it exits, it is reaped: its /proc entry goes, zombie included.
	for deadline := time.Now().Add(patience); ; time.Sleep(20 * time.Millisecond) {
		ppid, state := parentOf(orphan)
		if ppid != guardian {
			break // reaped (or the pid reused by another parent's child)
		}
		if time.Now().After(deadline) {
			t.Fatalf("orphan %d is still the guardian's child (state %q) %v later", orphan, state, patience)
		}
	}
	if status := runProcmon(t, procmon, "status", started.MonitorID); !strings.Contains(string(status), `"status":"running"`) {
		t.Fatalf("the service stopped with its orphan: %s", status)
	}
}

// parentOf returns the parent pid and state of process pid from its stat
// line (0 once it is gone).
func parentOf(pid int) (int, string) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // comm may hold spaces
	if len(f) < 2 {
		return 0, ""
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid, f[0]
}
