package e2e

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// freezerRoot is the cgroup v1 freezer hierarchy. A task frozen there
// stays in uninterruptible sleep with a SIGKILL pending until it is
// thawed, as a task stuck in D state does (the v2 freezer lets SIGKILL
// through, so it cannot stand in for one).
const freezerRoot = "/sys/fs/cgroup/freezer"

// TestKillUnconfirmedFrozenService: a service that survives SIGKILL is
// not waited on forever. Cancel returns within its bounds a receipt that
// names it once in kill_unconfirmed, says containment was incomplete and
// shows no exit code; the record keeps that receipt, and once the service
// can die it is gone.
func TestKillUnconfirmedFrozenService(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("freezing a process needs root")
	}
	if _, err := os.Stat(filepath.Join(freezerRoot, "cgroup.procs")); err != nil {
		t.Skipf("no cgroup v1 freezer: %v", err)
	}
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	var started struct {
		MonitorID string `json:"monitor_id"`
		PID       int    `json:"pid"`
	}
	if err := json.Unmarshal(runProcmon(t, procmon, "start", "--", "sleeper"), &started); err != nil {
		t.Fatal(err)
	}

	cg := filepath.Join(freezerRoot, "procmon-test-"+started.MonitorID)
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	setState := func(state string) error {
		return os.WriteFile(filepath.Join(cg, "freezer.state"), []byte(state), 0)
	}
	t.Cleanup(func() {
		// Thawed, the service acts on its pending SIGKILL; the group is
		// removed once it is empty.
		setState("THAWED")
		for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
			err := os.Remove(cg)
			if err == nil || errors.Is(err, fs.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("freezer group %s: %v", cg, err)
				break
			}
		}
	})
	if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(started.PID)), 0); err != nil {
		t.Fatal(err)
	}
	if err := setState("FROZEN"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(cg, "freezer.state"))
		if strings.TrimSpace(string(b)) == "FROZEN" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("freezer state %q %v after freezing", b, patience)
		}
	}

	type receipt struct {
		Status             string `json:"status"`
		ExitCode           *int   `json:"exit_code"`
		GroupEmptyVerified bool   `json:"group_empty_verified"`
		Containment        string `json:"containment"`
		KillUnconfirmed    []int  `json:"kill_unconfirmed"`
	}
	check := func(what string, out []byte) {
		t.Helper()
		var r receipt
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		if r.Status != "cancelled" || r.ExitCode != nil || r.GroupEmptyVerified || r.Containment != "incomplete" || !slices.Equal(r.KillUnconfirmed, []int{started.PID}) {
			t.Fatalf("%s of a service that survives SIGKILL: %s", what, out)
		}
	}
	check("cancel", runProcmon(t, procmon, "cancel", "--grace", "1", started.MonitorID))
	var status struct {
		Status   string          `json:"status"`
		ExitCode *int            `json:"exit_code"`
		Receipt  json.RawMessage `json:"receipt"`
	}
	out := runProcmon(t, procmon, "status", started.MonitorID)
	if err := json.Unmarshal(out, &status); err != nil || status.Status != "cancelled" || status.ExitCode != nil {
		t.Fatalf("status of a service that survives SIGKILL (%v): %s", err, out)
	}
	check("status's receipt", status.Receipt)

	if err := setState("THAWED"); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, stateDir)
}
