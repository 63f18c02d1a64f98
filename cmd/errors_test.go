//go:build linux

package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runIn runs one procmon command line in-process against a state
// directory and returns the exit status and the decoded response.
func runIn(t *testing.T, stateDir, stdin string, args ...string) (int, map[string]any, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := testEnv(stateDir, &out, &errOut)
	env.Stdin = strings.NewReader(stdin)
	status := Run(args, env)
	var resp map[string]any
	if out.Len() > 0 {
		if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
			t.Fatalf("%v: stdout is not one JSON object: %q", args, out.String())
		}
	}
	if strings.Contains(errOut.String(), "goroutine") || strings.Contains(out.String(), "panic") {
		t.Fatalf("%v: stack trace in output: %s %s", args, out.String(), errOut.String())
	}
	return status, resp, out.String()
}

func errorCode(resp map[string]any) string {
	e, _ := resp["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func TestBadInputIsTypedError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if status, _, _ := runIn(t, dir, "", "configure", "--enable"); status != 0 {
		t.Fatalf("configure --enable: exit %d", status)
	}
	cases := []refusal{
		{"empty body", "", []string{"start"}, "invalid_request", 2, "empty request body"},
		{"blank body", "  \n", []string{"logs"}, "invalid_request", 2, "empty request body"},
		{"not json", "argv=sleep", []string{"start"}, "invalid_request", 2, "malformed JSON"},
		{"truncated", `{"request": {"argv": ["sle`, []string{"start"}, "invalid_request", 2, "truncated"},
		{"trailing data", `{"request": {"argv": ["sleep"]}} {}`, []string{"start"}, "invalid_request", 2, "trailing data"},
		{"unknown top field", `{"request": {"argv": ["sleep"]}, "extra": 1}`, []string{"start"}, "invalid_request", 2, `"extra"`},
		{"unknown field", `{"request": {"argv": ["sleep"], "bogus": 1}}`, []string{"start"}, "invalid_request", 2, `"bogus"`},
		{"wrong type", `{"request": {"argv": "sleep 1"}}`, []string{"start"}, "invalid_request", 2, `"argv"`},
		{"wrong nested type", `{"request": {"argv": ["sleep"], "env": {"A": 1}}}`, []string{"start"}, "invalid_request", 2, `env`},
		{"missing request", `{}`, []string{"start"}, "invalid_request", 2, `"request"`},
		{"empty argv", `{"request": {"argv": []}}`, []string{"start"}, "invalid_request", 2, `"argv"`},
		{"dash, no command", "", []string{"start", "--"}, "invalid_request", 2, `field \"argv\" is required`},
		{"zero timeout", `{"request": {"argv": ["sleep"], "timeout_seconds": 0}}`, []string{"start"}, "invalid_request", 2, "timeout_seconds"},
		{"fractional timeout", `{"request": {"argv": ["sleep"], "timeout_seconds": 1.5}}`, []string{"start"}, "invalid_request", 2, "timeout_seconds"},
		{"short secret", `{"request": {"argv": ["sleep"], "secrets": ["hunter2"]}}`, []string{"start"}, "invalid_request", 2, "secrets[0]"},
		{"traversal name", "", []string{"status", "../../../etc/passwd"}, "unknown_monitor", 4, "is named"},
		{"flags without argv", "", []string{"start", "--name", "web"}, "invalid_request", 2, "is required and must not be empty: the command and its arguments; usage: procmon start [flags] [--] COMMAND [ARGS...]"},
		{"no such run subcommand", "", []string{"run", "frob"}, "invalid_request", 2, "unknown command"},
		{"empty id in body", `{"request": {"monitor_id": ""}}`, []string{"status"}, "invalid_request", 2, "not valid"},
		{"did you mean", "", []string{"stauts"}, "invalid_request", 2, "did you mean: start, status"},
		{"traversal id in body", `{"request": {"monitor_id": "m_../../x"}}`, []string{"cancel"}, "invalid_request", 2, "not valid"},
		{"uppercase id", "", []string{"status", "m_ABCDEFGHIJKLMNOPQRSTUVWXYZ"}, "invalid_request", 2, "not valid"},
		{"unknown monitor", "", []string{"status", "m_" + strings.Repeat("0", 26)}, "unknown_monitor", 4, "no monitor"},
		{"unknown monitor cancel", "", []string{"cancel", "m_" + strings.Repeat("0", 26)}, "unknown_monitor", 4, "no monitor"},
		{"unknown run end", "", []string{"run", "end", "r_" + strings.Repeat("0", 26)}, "unknown_run", 4, "no run"},
		{"unknown run listed", "", []string{"--run", "r_" + strings.Repeat("0", 26), "list"}, "unknown_run", 4, "no run"},
		{"unknown run's status", "", []string{"--run", "r_" + strings.Repeat("0", 26), "status"}, "unknown_run", 4, "no run"},
		{"no such schema", "", []string{"schema", "nosuch"}, "invalid_request", 2, "the tools: start_process, wait_process"},
		{"a tail past any log", "", []string{"logs", "m_" + strings.Repeat("0", 26), "--tail", "99999999999999999999999"}, "invalid_request", 2, "for every line, give --tail all"},
		{"no such shell", "", []string{"completion", "tcsh"}, "invalid_request", 2, `(see procmon completion --help)`},
		{"too many arguments", "", []string{"status", "a", "b"}, "invalid_request", 2, `"message":"procmon status takes one monitor id or name, got 2 arguments (see procmon status --help)","details":{"field":"monitor_id"}`},
		{"a stray word", "", []string{"configure", "x"}, "invalid_request", 2, "procmon configure takes no arguments, got 1 (see procmon configure --help)"},
		{"init as owner", "", []string{"run", "new", "--owner-pid", "1"}, "invalid_request", 2, "owner pid 1 cannot own a run"},
		{"no owner as owner", "", []string{"run", "new", "--owner-pid", "0"}, "invalid_request", 2, "owner pid 0 cannot own a run"},
		{"no owner as owner by request", `{"request": {"owner_pid": 0}}`, []string{"run", "new"}, "invalid_request", 2, "owner pid 0 cannot own a run"},
		{"several with one unknown", "", []string{"cancel", "nosuch", "m_" + strings.Repeat("0", 26)}, "unknown_monitor", 4, "none of the 2 monitors given was cancelled"},
		// A flag that builds a request from the command line is refused
		// with one read from stdin, which would go on without it.
		{"grace with a body", `{"request": {"monitor_id": "m_` + strings.Repeat("0", 26) + `"}}`, []string{"cancel", "--grace", "1m"}, "invalid_request", 2, `--grace applies to a monitor named on the command line; name one (see procmon cancel --help)`},
		{"grace with no body", "", []string{"cancel", "--grace", "1m"}, "invalid_request", 2, `--grace applies to a monitor named on the command line; name one (see procmon cancel --help)`},
		// reconcile gives no grace (its service's custodian is gone): it
		// has none to take.
		{"reconcile with a grace", "", []string{"reconcile", "m_" + strings.Repeat("0", 26), "--grace", "1"}, "invalid_request", 2, "reconcile takes no grace: with the guardian gone"},
		{"reconcile request with a grace", `{"request": {"monitor_id": "m_` + strings.Repeat("0", 26) + `", "grace_seconds": 1}}`, []string{"reconcile"}, "invalid_request", 2, "reconcile takes no grace: with the guardian gone"},
		{"max-bytes with a body", `{"request": {"monitor_id": "m_` + strings.Repeat("0", 26) + `"}}`, []string{"logs", "--max-bytes", "64"}, "invalid_request", 2, `--max-bytes applies to a monitor named on the command line; name one (see procmon logs --help)`},
		{"offset with a body", `{"request": {"monitor_id": "m_` + strings.Repeat("0", 26) + `"}}`, []string{"logs", "--offset", "0"}, "invalid_request", 2, `--offset applies`},
		{"unknown run show", "", []string{"run", "show", "r_" + strings.Repeat("0", 26)}, "unknown_run", 4, "no run"},
		{"unknown run start", "", []string{"--run", "r_" + strings.Repeat("0", 26), "start", "sleep", "1"}, "unknown_run", 4, "no run"},
		{"unknown flag", "", []string{"start", "--bogus"}, "invalid_request", 2, "bogus"},
		{"unknown command", "", []string{"frobnicate"}, "invalid_request", 2, "frobnicate"},
		{"bad run id", "", []string{"--run", "../x", "list"}, "invalid_request", 2, "run id"},
		{"negative grace", "", []string{"cancel", "m_" + strings.Repeat("0", 26), "--grace", "-1"}, "invalid_request", 2, "grace_seconds"},
		{"docker mode", `{"sandbox": {"mode": "docker", "process_monitor": true, "work_duration": {"protocol": "forge-work-duration-v2", "timeout_seconds": null}}}`, []string{"configure"}, "transport_unavailable", 3, "host"},
		{"pool mode", `{"sandbox": {"mode": "pool", "process_monitor": true}}`, []string{"configure"}, "transport_unavailable", 3, "host"},
		{"legacy capture", `{"sandbox": {"mode": "host", "process_monitor": true}}`, []string{"configure"}, "legacy_policy", 3, "forge-work-duration-v2"},
		{"legacy protocol", `{"sandbox": {"mode": "host", "process_monitor": true, "work_duration": {"protocol": "v1", "timeout_seconds": null}}}`, []string{"configure"}, "legacy_policy", 3, "legacy"},
		{"negative limit", `{"sandbox": {"mode": "host", "process_monitor": true, "work_duration": {"protocol": "forge-work-duration-v2", "timeout_seconds": null}, "command_limit": -1}}`, []string{"configure"}, "invalid_request", 2, "command_limit"},
		{"zero limit", `{"request": {"sandbox": {"mode": "host", "process_monitor": true, "work_duration": {"protocol": "forge-work-duration-v2", "timeout_seconds": 0}}}}`, []string{"configure"}, "invalid_request", 2, "timeout_seconds"},
		{"no mode", `{"sandbox": {"process_monitor": true}}`, []string{"configure"}, "invalid_request", 2, "sandbox.mode"},
		{"unknown settings field", `{"sandbox": {"mode": "host", "colour": 1}}`, []string{"configure"}, "invalid_request", 2, "colour"},
	}
	checkRefusals(t, dir, cases, nil)
}

func TestMonitorsDisabledUntilConfigured(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	status, resp, raw := runIn(t, dir, `{"request": {"argv": ["sleep", "1"]}}`, "start")
	if errorCode(resp) != "monitors_disabled" || status != 3 || !strings.Contains(raw, "procmon configure --enable") {
		t.Fatalf("start before configure: exit %d %s", status, raw)
	}
	// Settings that keep monitors off are stored but enable nothing.
	off := `{"sandbox": {"mode": "host", "process_monitor": false}}`
	if status, _, raw := runIn(t, dir, off, "configure"); status != 0 {
		t.Fatalf("configure off: exit %d %s", status, raw)
	}
	status, resp, _ = runIn(t, dir, `{"request": {"argv": ["sleep", "1"]}}`, "start")
	if errorCode(resp) != "monitors_disabled" || status != 3 {
		t.Fatalf("start with monitors off: exit %d %v", status, resp)
	}
}

func TestCorruptRecordIsRefusedAndIsolated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	runIn(t, dir, "", "configure", "--enable")
	good := "m_" + strings.Repeat("a", 26)
	bad := "m_" + strings.Repeat("b", 26)
	short := "m_" + strings.Repeat("c", 26)
	starting := "m_" + strings.Repeat("d", 26) // no record yet: a start in progress
	for _, id := range []string{good, bad, short, starting} {
		if err := os.MkdirAll(filepath.Join(dir, "monitors", id), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A record with a valid checksum, then one with a flipped byte, then a
	// truncated one; a stray temp file is ignored.
	record := writeTestRecord(t, dir, good)
	flipped := bytes.Replace(record, []byte(`"pid":4242`), []byte(`"pid":4243`), 1)
	os.WriteFile(filepath.Join(dir, "monitors", bad, "record.json"), flipped, 0o600)
	os.WriteFile(filepath.Join(dir, "monitors", short, "record.json"), record[:len(record)/2], 0o600)
	os.WriteFile(filepath.Join(dir, "monitors", ".tmp-record.json-123"), []byte("junk"), 0o600)

	for _, id := range []string{bad, short} {
		status, resp, raw := runIn(t, dir, "", "status", id)
		if errorCode(resp) != "state_corrupt" || status != 1 {
			t.Fatalf("status %s: exit %d %s", id, status, raw)
		}
		status, resp, raw = runIn(t, dir, "", "cancel", id)
		if errorCode(resp) != "state_corrupt" || status != 1 {
			t.Fatalf("cancel %s: exit %d %s", id, status, raw)
		}
	}
	status, resp, raw := runIn(t, dir, "", "status", good)
	if status != 0 || resp["status"] != "needs_reconciliation" {
		t.Fatalf("status of the good record: exit %d %s", status, raw)
	}
	status, resp, raw = runIn(t, dir, "", "list", "--all-runs")
	rows, _ := resp["monitors"].([]any)
	if status != 0 || len(rows) != 3 || !strings.Contains(raw, "state_corrupt") || strings.Contains(raw, starting) {
		t.Fatalf("list with corrupt records and a start in progress: exit %d %s", status, raw)
	}
	status, resp, raw = runIn(t, dir, "", "status", starting)
	if errorCode(resp) != "unknown_monitor" || status != 4 {
		t.Fatalf("status of a start in progress: exit %d %s", status, raw)
	}
}

func TestGroupWritableStateDirIsUnsafe(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	runIn(t, dir, "", "configure", "--enable")
	if err := os.Chmod(dir, 0o770); err != nil {
		t.Fatal(err)
	}
	status, resp, raw := runIn(t, dir, "", "list")
	if errorCode(resp) != "state_unsafe" || status != 1 || !strings.Contains(raw, "chmod 700") {
		t.Fatalf("group-writable state dir: exit %d %s", status, raw)
	}
}

// refusal is a command line that procmon must refuse with a typed error.
type refusal struct {
	name     string
	stdin    string
	args     []string
	code     string
	exit     int
	mentions string
}

// checkRefusals runs each refusal (with defaultArgs when it names none)
// and checks its code, exit status and message.
func checkRefusals(t *testing.T, dir string, cases []refusal, defaultArgs []string) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if args == nil {
				args = defaultArgs
			}
			status, resp, raw := runIn(t, dir, c.stdin, args...)
			if got := errorCode(resp); got != c.code || status != c.exit {
				t.Fatalf("got code %q exit %d, want %q exit %d: %s", got, status, c.code, c.exit, raw)
			}
			if !strings.Contains(raw, c.mentions) {
				t.Fatalf("message does not mention %q: %s", c.mentions, raw)
			}
		})
	}
}

// failingWriter refuses every write, as a full disk or a closed pipe does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// An error of procmon's own code that has no type of its own (here the
// response cannot be written) is internal, exit 1, said on stderr: never a
// usage error that would send a caller to the help.
func TestUntypedErrorIsInternal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	var errOut bytes.Buffer
	env := testEnv(dir, failingWriter{}, &errOut)
	if status := Run([]string{"configure", "--enable"}, env); status != 1 {
		t.Fatalf("exit %d, want 1 (internal); stderr %q", status, errOut.String())
	}
	if msg := errOut.String(); !strings.Contains(msg, "no space left") || strings.Contains(msg, "--help") {
		t.Fatalf("stderr %q: want the write error, not a pointer to the help", msg)
	}
	// Cobra's own refusals stay usage errors.
	if status, resp, raw := runIn(t, dir, "", "configure", "extra-argument"); status != 2 || errorCode(resp) != "invalid_request" {
		t.Fatalf("a stray argument: exit %d %s", status, raw)
	}
}

// TestRequestlessCommandsReadStdin: run end, run show, run list and list
// read their request from stdin like every command: a body naming a run
// acts on that run, and a body that is no request is refused, never
// ignored (run end once ended the selected run whatever its body said).
// An empty stdin is an empty request.
func TestRequestlessCommandsReadStdin(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if status, _, raw := runIn(t, dir, "", "configure", "--enable"); status != 0 {
		t.Fatalf("configure --enable: %s", raw)
	}
	_, created, raw := runIn(t, dir, "", "run", "new")
	other, _ := created["run_id"].(string)
	if other == "" {
		t.Fatalf("run new: %s", raw)
	}
	_, created, raw = runIn(t, dir, "", "run", "new")
	mine, _ := created["run_id"].(string)
	if mine == "" {
		t.Fatalf("run new: %s", raw)
	}
	for _, args := range [][]string{{"run", "end"}, {"run", "show"}, {"run", "list"}, {"list"}, {"status"}} {
		status, resp, raw := runIn(t, dir, "garbage{", args...)
		if status != 2 || errorCode(resp) != "invalid_request" {
			t.Errorf("%v with a body that is no request: exit %d %s; want invalid_request", args, status, raw)
		}
		// A hook's JSON on stdin: the refusal says how to run it then.
		status, _, raw = runIn(t, dir, `{"session_id": "abc"}`, args...)
		if status != 2 || !strings.Contains(raw, "reads its request from stdin: when stdin holds something else, name what it acts on (see procmon "+strings.Join(args, " ")+" --help) or give it \u003c/dev/null") {
			t.Errorf("%v with another program's JSON on stdin: exit %d %s; want a refusal that says how to run it", args, status, raw)
		}
	}
	status, resp, raw := runIn(t, dir, `{"request": {"run_id": "r_nope"}}`, "run", "show")
	if status != 2 || errorCode(resp) != "invalid_request" || !strings.Contains(raw, `"field":"run_id"`) {
		t.Errorf("run show of an invalid run_id: exit %d %s; want invalid_request naming run_id", status, raw)
	}
	status, resp, raw = runIn(t, dir, `{"request": {"run_id": "`+other+`"}}`, "--run", mine, "run", "end")
	if status != 0 || resp["run_id"] != other {
		t.Fatalf("run end of %s by request: exit %d %s", other, status, raw)
	}
	_, shown, raw := runIn(t, dir, `{"request": {"run_id": "`+other+`"}}`, "run", "show")
	if shown["run_id"] != other || shown["ended_at_ms"] == nil {
		t.Errorf("run show of %s by request: %s; want it, ended", other, raw)
	}
	_, shown, raw = runIn(t, dir, "", "--run", mine, "run", "show")
	if shown["run_id"] != mine || shown["ended_at_ms"] != nil {
		t.Errorf("run show of the selected run: %s; want %s, not ended", raw, mine)
	}
	_, listed, raw := runIn(t, dir, `{"request": {"all_runs": true}}`, "list")
	if _, ok := listed["monitors"]; !ok || listed["run_id"] != nil {
		t.Errorf("list with all_runs by request: %s; want every run's monitors, no run_id", raw)
	}
	// An empty --tools grants no tool, as "tools": [] does.
	if _, none, raw := runIn(t, dir, "", "run", "new", "--tools", ""); fmt.Sprint(none["tools"]) != "[]" {
		t.Errorf("run new --tools '': %s; want a run that grants no tool", raw)
	}
	if status, _, raw := runIn(t, dir, `{"request": {}}`, "run", "list"); status != 0 {
		t.Errorf("run list with an empty request: exit %d %s", status, raw)
	}
	// status without a monitor lists, from an empty stdin as at a terminal.
	if status, listed, raw := runIn(t, dir, "", "--run", mine, "status"); status != 0 || listed["run_id"] != mine {
		t.Errorf("status with an empty stdin: exit %d %s; want the run's list", status, raw)
	}
}

// TestRunShowsItsOwnersExit: a run whose owner has exited shows as ended
// (owner_exited) in run show and run list, not only once a start finds it
// so; its monitors were drained when the owner went.
func TestRunShowsItsOwnersExit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if status, _, raw := runIn(t, dir, "", "configure", "--enable"); status != 0 {
		t.Fatalf("configure --enable: %s", raw)
	}
	owner := exec.Command("sleep", "300")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer owner.Process.Kill()
	_, created, raw := runIn(t, dir, "", "run", "new", "--owner-pid", strconv.Itoa(owner.Process.Pid))
	id, _ := created["run_id"].(string)
	if id == "" {
		t.Fatalf("run new: %s", raw)
	}
	if _, shown, raw := runIn(t, dir, "", "run", "show", id); shown["ended_at_ms"] != nil {
		t.Fatalf("run show while its owner lives: %s", raw)
	}
	owner.Process.Kill()
	owner.Wait()
	// While the end cannot be recorded (its run's lock planted as a link),
	// the run is still shown and listed, as it is stored.
	lock := filepath.Join(dir, "runs", id, "lock")
	os.Remove(lock)
	if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), lock); err != nil {
		t.Fatal(err)
	}
	if status, _, raw := runIn(t, dir, "", "run", "show", id); status != 0 {
		t.Errorf("run show of a run whose end cannot be recorded: exit %d %s", status, raw)
	}
	if _, listed, raw := runIn(t, dir, "", "run", "list"); len(listed["runs"].([]any)) != 1 {
		t.Errorf("run list with a run whose end cannot be recorded: %s", raw)
	}
	os.Remove(lock)
	_, shown, raw := runIn(t, dir, "", "run", "show", id)
	if shown["ended_at_ms"] == nil || shown["end_reason"] != "owner_exited" {
		t.Errorf("run show once its owner exited: %s; want it ended, owner_exited", raw)
	}
	_, listed, raw := runIn(t, dir, "", "run", "list")
	runs, _ := listed["runs"].([]any)
	if len(runs) != 1 || runs[0].(map[string]any)["end_reason"] != "owner_exited" {
		t.Errorf("run list once its owner exited: %s", raw)
	}
}
