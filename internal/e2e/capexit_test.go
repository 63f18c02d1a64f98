package e2e

import (
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"
)

// TestCapThenExitIsOutputLimit runs a command that writes past the output
// cap and exits at once, over and over, through exec and as a monitor:
// each time it is output_limit, its capture cut, and exec --check fails it.
// Which of its exit and the cap procmon took first used to decide, and a
// third of the execs and of the monitors or more were exited 0 here, so
// that exec --check passed a command whose output had been cut. Now the
// answer holds however the two are taken; repeated, the old race shows
// (TestExecPastCapThenExitedIsOutputLimit forces the order).
func TestCapThenExitIsOutputLimit(t *testing.T) {
	const tries = 12
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	storeSettings(t, procmon, hostSettings{graceSeconds: 30, maxOutputBytes: 2000, commandLimit: 40})
	// 4 KiB from a shell's builtins: written and ended within a
	// millisecond or so, before procmon looks (printer, a large binary,
	// takes longer to start than procmon to look).
	argv := []string{"sh", "-c", "x=0123456789abcdef; x=$x$x$x$x; x=$x$x$x$x; x=$x$x$x$x; echo $x$x$x$x"}

	for i := range tries {
		out, err := procmon(append([]string{"exec", "--check", "--"}, argv...)...).Output()
		if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 6 {
			t.Errorf("exec %d: exec --check ended with %v, want exit status 6", i, err)
		}
		r := gjson.ParseBytes(out)
		if r.Get("status").String() != "output_limit" || r.Get("reason").String() != "output_limit" ||
			r.Get("truncation.0").String() != "capture_limit" || !r.Get("group_empty_verified").Bool() {
			t.Errorf("exec %d answered %s", i, out)
		}
	}

	for i := range tries {
		id := startMonitor(t, procmon, append([]string{"start", "--"}, argv...)...)
		awaitRecordedReceipt(t, stateDir, id, "by its exit or the cap")
		s := gjson.ParseBytes(runProcmon(t, procmon, "status", id))
		if s.Get("status").String() != "output_limit" || s.Get("receipt.reason").String() != "output_limit" ||
			!s.Get("receipt.group_empty_verified").Bool() || s.Get("log_bytes").Int() != 2000 {
			t.Errorf("monitor %d: status answered %s", i, s.Raw)
		}
		if l := gjson.ParseBytes(runProcmon(t, procmon, "logs", id)); l.Get("truncation.0").String() != "capture_limit" {
			t.Errorf("monitor %d: logs answered %s", i, l.Raw)
		}
	}
	assertNothingLeft(t, stateDir)
}
