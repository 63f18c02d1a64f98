package e2e

import (
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"
)

// TestExecDependsOnAnIdsStart: by hand, exec names a monitor it depends
// on by the start of its id, as every other command does; a start that
// matches no monitor is unknown_monitor.
func TestExecDependsOnAnIdsStart(t *testing.T) {
	work := t.TempDir()
	stateDir := filepath.Join(work, "state")
	procmon := procmonIn(t, stateDir, work)
	runProcmon(t, procmon, "configure", "--enable")
	id := startMonitor(t, procmon, "start", "--", "sleep", "1000")
	out := runProcmon(t, procmon, "exec", "--depends-on", id[:8], "--", "true")
	if gjson.GetBytes(out, "status").String() != "exited" || gjson.GetBytes(out, "exit_code").Int() != 0 {
		t.Fatalf("exec depending on %s (as %s) answered %s", id, id[:8], out)
	}
	out, _ = procmon("exec", "--depends-on", "m_zzzzzzzz", "--", "true").Output()
	if code := gjson.GetBytes(out, "error.code").String(); code != "unknown_monitor" {
		t.Fatalf("exec depending on an id's start that matches nothing answered %s", out)
	}
	runProcmon(t, procmon, "cancel", id)
	assertNothingLeft(t, stateDir)
}
