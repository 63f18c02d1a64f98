package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestLogsSinceATime: logs --since places a time between a service's
// lines by the guardian's time marks: the output written after it is
// shown, and what was written seconds before is not.
func TestLogsSinceATime(t *testing.T) {
	work := t.TempDir()
	stateDir := filepath.Join(work, "state")
	procmon := procmonIn(t, stateDir, work)
	runProcmon(t, procmon, "configure", "--enable")
	id := startMonitor(t, procmon, "start", "--", "sh", "-c",
		`echo early; while [ ! -e go ]; do sleep 0.05; done; echo late; exec sleep 1000`)
	runProcmon(t, procmon, "wait", id, "--output", "early", "--timeout", "30")
	// More than the second a mark covers, so that the two lines are
	// marked apart whatever the machine's load.
	time.Sleep(2500 * time.Millisecond)
	between := time.Now()
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	runProcmon(t, procmon, "wait", id, "--output", "late", "--timeout", "30")

	out := runProcmon(t, procmon, "logs", id, "--since", between.Format(time.RFC3339Nano))
	if text := gjson.GetBytes(out, "text").String(); text != "late\n" {
		t.Errorf("logs --since between the lines: %q, want only the later line", text)
	}
	out = runProcmon(t, procmon, "logs", id, "--since", between.Add(-time.Minute).Format(time.RFC3339Nano))
	if text := gjson.GetBytes(out, "text").String(); text != "early\nlate\n" {
		t.Errorf("logs --since before the start: %q, want all of it", text)
	}
	runProcmon(t, procmon, "cancel", id)
	assertNothingLeft(t, stateDir)
}
