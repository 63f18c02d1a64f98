//go:build linux

package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"procmon/internal/state"
)

// endedMonitor stores a monitor of the default run whose guardian has
// written receipt, with output as its log.
func endedMonitor(t *testing.T, stateDir, id string, receipt *state.Receipt, output string) {
	t.Helper()
	d, err := state.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CreateMonitorDir(id, state.Maker{}); err != nil {
		t.Fatal(err)
	}
	m := &state.Monitor{
		MonitorID: id, RunID: state.DefaultRun, Argv: []string{"server"}, Cwd: t.TempDir(),
		PID: 4242, PGID: 4242, GuardianPID: 1 << 22, BootID: state.BootID(),
		Phase: state.PhaseTerminal, Receipt: receipt,
	}
	if err := d.SaveMonitor(m, false); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.MonitorDir(id), state.LogName), []byte(output), 0o600); err != nil {
		t.Fatal(err)
	}
}

// field walks a decoded response along a dotted path.
func field(resp map[string]any, path string) any {
	var v any = resp
	for _, k := range strings.Split(path, ".") {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// TestWaitRequestOnStdin drives wait with JSON requests against monitors
// that have ended, so every outcome is decided at the first look.
func TestWaitRequestOnStdin(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if status, _, raw := runIn(t, dir, "", "configure", "--enable"); status != 0 {
		t.Fatalf("configure --enable: %s", raw)
	}
	// Creates the default run the monitors belong to.
	runIn(t, dir, "", "list")
	seven := 7
	exited := "m_" + strings.Repeat("e", 24)
	endedMonitor(t, dir, exited, &state.Receipt{Status: state.StatusExited, Reason: "exited", ExitCode: &seven, Custody: state.CustodyGuardian}, "boot\nListening on 8000\nbye\n")
	reconciled := "m_" + strings.Repeat("r", 24)
	endedMonitor(t, dir, reconciled, &state.Receipt{Status: state.StatusCancelled, Reason: "reconciled", Custody: state.CustodyReconciled}, "")
	unproven := "m_" + strings.Repeat("u", 24)
	endedMonitor(t, dir, unproven, &state.Receipt{Status: state.StatusCancelled, Reason: "reconciled", Custody: state.CustodyUnverified}, "")

	request := func(id, condition, rest string) string {
		return `{"request": {"monitor_id": "` + id + `", "condition": ` + condition + rest + `}}`
	}
	cases := []struct {
		name  string
		stdin string
		want  map[string]any
	}{
		{"output", request(exited, `{"kind": "output", "text": "Listening"}`, `, "timeout_seconds": 5`), map[string]any{
			"outcome": "satisfied", "condition.text": "Listening", "observation.match_offset": 5.0,
			"observation.exit_code": 7.0, "observation.status": "exited",
		}},
		{"output never printed", request(exited, `{"kind": "output", "text": "ready"}`, `, "timeout_seconds": null`), map[string]any{
			"outcome": "process_ended", "observation.exit_code": 7.0, "observation.match_offset": nil,
		}},
		{"exit", request(exited, `{"kind": "exit"}`, ""), map[string]any{
			"outcome": "satisfied", "observation.exit_code": 7.0, "observation.reason": "exited",
		}},
		{"file", request(exited, `{"kind": "file", "path": "ready.json"}`, ""), map[string]any{
			// No guardian is left to hand over the component root: no file
			// is read, and the refusal says why.
			"outcome": "process_ended", "observation.refusal": "component_unproven", "observation.path": "ready.json",
			"observation.sha256": nil,
		}},
		{"reconciled exit", request(reconciled, `{"kind": "exit"}`, ""), map[string]any{
			"outcome": "satisfied", "observation.reason": "reconciled", "observation.exit_code": nil,
		}},
		{"unproven exit", request(unproven, `{"kind": "exit"}`, ""), map[string]any{
			"outcome": "unavailable", "observation.exit_code": nil,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, resp, raw := runIn(t, dir, c.stdin, "wait")
			if status != 0 {
				t.Fatalf("exit %d: %s", status, raw)
			}
			for path, want := range c.want {
				if got := field(resp, path); got != want {
					t.Errorf("%s = %v, want %v: %s", path, got, want, raw)
				}
			}
		})
	}
}

func TestWaitRefusals(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	runIn(t, dir, "", "configure", "--enable")
	id := "m_" + strings.Repeat("0", 24)
	cases := []refusal{
		{"zero timeout", `{"request": {"monitor_id": "` + id + `", "condition": {"kind": "exit"}, "timeout_seconds": 0}}`, nil, "invalid_request", 2, "timeout_seconds"},
		{"fractional timeout", `{"request": {"monitor_id": "` + id + `", "condition": {"kind": "exit"}, "timeout_seconds": 0.5}}`, nil, "invalid_request", 2, "timeout_seconds"},
		{"huge timeout", `{"request": {"monitor_id": "` + id + `", "condition": {"kind": "exit"}, "timeout_seconds": 9223372036854775807}}`, nil, "invalid_request", 2, "timeout_seconds"},
		{"null condition", `{"request": {"monitor_id": "` + id + `", "condition": null}}`, nil, "invalid_condition", 2, "JSON object"},
		{"condition not an object", `{"request": {"monitor_id": "` + id + `", "condition": "exit"}}`, nil, "invalid_condition", 2, "JSON object"},
		{"url field", `{"request": {"monitor_id": "` + id + `", "condition": {"kind": "output", "text": "x", "url": "http://x"}}}`, nil, "invalid_condition", 2, `"url"`},
		{"no kind flag", "", []string{"wait", id}, "invalid_request", 2, "--output"},
		{"sha256 without file", "", []string{"wait", id, "--output", "x", "--sha256", strings.Repeat("a", 64)}, "invalid_request", 2, "--file"},
		{"empty output", "", []string{"wait", id, "--output", ""}, "invalid_condition", 2, "empty"},
		{"unknown monitor", "", []string{"wait", id, "--exit"}, "unknown_monitor", 4, "no monitor"},
		{"flags, no monitor", "", []string{"wait", "--output", "x", "--timeout", "1"}, "invalid_request", 2, "name the monitor to wait on: procmon wait ID|NAME, or --name NAME"},
	}
	checkRefusals(t, dir, cases, []string{"wait"})
}
