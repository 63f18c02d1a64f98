//go:build linux

package cmd

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"procmon/internal/proc"
	"procmon/internal/state"
	"procmon/internal/wait"
)

// hiddenMonitorFields are the fields of a monitor record that status and
// list leave out, and why. Every other field is shown under its record
// name with its record value.
var hiddenMonitorFields = map[string]string{
	"boot_id":                    "custody evidence, judged into status",
	"child_start_ticks":          "custody evidence, judged into status",
	"guardian_pid":               "custody evidence, judged into status",
	"guardian_start_ticks":       "custody evidence, judged into status",
	"admitted_at_ms":             "internal: the start of the work deadline",
	"owner_grace_ms":             "internal: the length of the ownership window",
	"max_output_bytes":           "the run's policy, shown by run show",
	"phase":                      "judged into status",
	"ownership_clock":            "the clock the window is judged by, judged into status",
	"escaped_sessions":           "custody evidence, for reconcile",
	"escaped_sessions_truncated": "custody evidence, for reconcile",
	"ownership_expires_mono_ms": "the window's end on the clock it is judged by, judged into status; " +
		"ownership_expires_at_ms shows it",
}

// The view is the record's third spelling after the struct and its
// encodings: this holds it to the record, so that a field added to
// state.Monitor is shown as it is stored or named above, never dropped
// unnoticed.
func TestMonitorViewShowsTheRecord(t *testing.T) {
	code, sig, exited, deadline, limit := 3, "SIGTERM", int64(90), int64(80), int64(70)
	m := &state.Monitor{
		MonitorID: "m_0123456789abcdefghij", RunID: "r_0123456789abcdefghij", Name: "web",
		Argv: []string{"a", "b"}, Cwd: "/w", CommandOrdinal: 1, BootID: "boot", PID: 2, PGID: 3,
		ChildStartTicks: 4, GuardianPID: 5, GuardianStartTicks: 6, AdmittedAtMs: 7, StartedAtMs: 8,
		HeartbeatSeq: 9, OwnershipExpiresAtMs: 10, OwnershipExpiresMonoMs: 16, OwnershipClock: "time:[1]", OwnerGraceMs: 11,
		EscapedSessions: []state.EscapedSession{{SID: 17, Witnesses: []state.Witness{{PID: 19, StartTicks: 18}}}}, EscapedSessionsTruncated: true, WorkDeadlineMs: &deadline,
		MaxOutputBytes: &limit, Phase: state.PhaseTerminal, CapturedBytes: 12, LogBytes: 13,
		LogError: "full", LogBytesLost: 14,
		Receipt: &state.Receipt{
			Status: state.StatusExited, Reason: "exited", ExitCode: &code, Signal: &sig,
			Signals:            []state.SignalEvent{{Signal: "SIGTERM", AtMs: 15, Targets: 1}},
			GroupEmptyVerified: true, OutputDrained: true, Containment: state.ContainmentComplete,
			Escaped: []int{16}, KillUnconfirmed: []int{17}, Custody: state.CustodyGuardian,
			ExitedAtMs: &exited, FinishedAtMs: 18,
		},
	}
	record, view := asObject(t, m), asObject(t, viewOf(&proc.Observation{Monitor: m, Status: state.StatusExited}))
	for _, f := range reflect.VisibleFields(reflect.TypeFor[state.Monitor]()) {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); record[name] == nil {
			t.Fatalf("the test record leaves %s empty: give it a value", name)
		}
	}
	for name, v := range record {
		if reflect.ValueOf(v).IsZero() {
			t.Fatalf("the test record leaves %s empty: give it a value", name)
		}
		if _, hidden := hiddenMonitorFields[name]; hidden {
			if _, shown := view[name]; shown {
				t.Errorf("%s is listed as hidden but shown", name)
			}
			continue
		}
		if !reflect.DeepEqual(view[name], v) {
			t.Errorf("record field %s is shown as %v, want %v (or list it in hiddenMonitorFields)", name, view[name], v)
		}
	}
	for name := range hiddenMonitorFields {
		if _, ok := record[name]; !ok {
			t.Errorf("hiddenMonitorFields names %s, which the record does not have", name)
		}
	}
}

func asObject(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReceiptSummaryCountsProcesses: a receipt's signals read as counts
// of processes, not as a bare number that looks like a pid.
func TestReceiptSummaryCountsProcesses(t *testing.T) {
	r := state.Receipt{Reason: "cancel", GroupEmptyVerified: true, Signals: []state.SignalEvent{{Signal: "SIGTERM", Targets: 1}, {Signal: "SIGKILL", Targets: 3}}}
	got := receiptSummary(r)
	for _, want := range []string{"sent SIGTERM to 1 process,", "sent SIGKILL to 3 processes,"} {
		if !strings.Contains(got, want) {
			t.Errorf("receipt summary %q lacks %q", got, want)
		}
	}
}

// TestConfigureViewShowsDurations: configure --show writes the settings'
// durations as --timeout takes them, as every other view does.
func TestConfigureViewShowsDurations(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	body := `{"sandbox": {"mode": "host", "process_monitor": true,
		"work_duration": {"protocol": "forge-work-duration-v2", "timeout_seconds": 5400},
		"monitor_owner_grace_seconds": 45, "monitor_timeout_seconds": 600,
		"max_output_bytes": 1000000, "command_limit": 20}}`
	if status, _, raw := runIn(t, dir, body, "configure"); status != 0 {
		t.Fatalf("configure: exit %d %s", status, raw)
	}
	var out, errOut bytes.Buffer
	if status := Run([]string{"configure", "--show", "-o", "text"}, testEnv(dir, &out, &errOut)); status != 0 {
		t.Fatalf("configure --show: exit %d %s", status, errOut.String())
	}
	want := "monitors enabled; settings in " + dir + `
  work deadline per run   1h30m
  deadline per service    10m
  output per service      1000000 bytes
  starts per run          20
  owner grace             45s
`
	if out.String() != want {
		t.Errorf("configure --show shows\n%s\nwant\n%s", out.String(), want)
	}
	one := strings.Replace(body, `"max_output_bytes": 1000000`, `"max_output_bytes": 1`, 1)
	if status, _, raw := runIn(t, dir, one, "configure"); status != 0 {
		t.Fatalf("configure: exit %d %s", status, raw)
	}
	out.Reset()
	Run([]string{"configure", "--show", "-o", "text"}, testEnv(dir, &out, &errOut))
	if !strings.Contains(out.String(), "  output per service      1 byte\n") {
		t.Errorf("configure --show of a 1-byte limit shows\n%s", out.String())
	}
}

// TestFollowEndNote: the line logs --follow leaves says how the service
// ended as its receipt says it, or, with no receipt, what to do.
func TestFollowEndNote(t *testing.T) {
	code, sig := 3, "SIGTERM"
	id := "m_0123456789abcdefghij"
	for _, c := range []struct {
		v    monitorView
		want string
	}{
		{monitorView{MonitorID: id, Name: "web", Status: state.StatusExited, ExitCode: &code, Reason: "exited", Receipt: &state.Receipt{}}, "(web ended: exited (3))"},
		{monitorView{MonitorID: id, Status: state.StatusCancelled, Signal: &sig, Reason: "cancel", Receipt: &state.Receipt{}}, "(m_01234567 ended: cancelled (SIGTERM))"},
		{monitorView{MonitorID: id, Status: state.StatusTimedOut, Reason: "deadline", Receipt: &state.Receipt{}}, "(m_01234567 ended: timed_out (deadline))"},
		{monitorView{MonitorID: id, Name: "web", Status: state.StatusNeedsReconciliation, Why: "the guardian is gone and left no receipt"},
			"(web: needs_reconciliation, the guardian is gone and left no receipt; next: procmon reconcile " + id + ")"},
	} {
		if got := followEndNote(c.v); got != c.want {
			t.Errorf("followEndNote = %q, want %q", got, c.want)
		}
	}
}

// TestTableAlignsWideCharacters: a column lines up by the cells its text
// takes on a terminal, so a name in kana (two cells a character) or with
// a combining accent (none) shifts no column after it.
func TestTableAlignsWideCharacters(t *testing.T) {
	tb := table{header: []string{"MONITOR", "NAME", "AGE", "ARGV"}}
	for _, row := range [][]string{
		{"m_1", quoteArg("ウェブ"), "1s", "sleep 1"},
		{"m_2", quoteArg("cafe\u0301"), "2s", "sleep 2"},
		{"m_3", "web", "3s", "sleep 3"},
	} {
		tb.add(row, nil)
	}
	var b strings.Builder
	tb.write(&b, 0)
	want := "" +
		"MONITOR  NAME      AGE  ARGV\n" +
		"m_1      'ウェブ'  1s   sleep 1\n" +
		"m_2      'cafe\u0301'    2s   sleep 2\n" +
		"m_3      web       3s   sleep 3\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestCellWidth counts as a terminal does: two cells for a wide or fullwidth
// character, none for a combining mark.
func TestCellWidth(t *testing.T) {
	for s, want := range map[string]int{
		"":                   0,
		"web":                3,
		"ウェブ":                6,
		"服务器":                6,
		"ｗｅｂ":                6, // fullwidth latin
		"ｳｪﾌﾞ":               4, // halfwidth katakana
		"cafe\u0301":         4,
		"한국어":                6,
		"\u1100\u1161\u11a8": 2, // a syllable of conjoining jamo
		"😀":                  2,
		"…":                  1,
	} {
		if got := cellWidth(s); got != want {
			t.Errorf("cellWidth(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestTableFitsWidth: a row wider than the terminal has its widest free
// text cut with an ellipsis, a command line before a name, and never an
// id, a status or a time; at any width a table without a limit is whole.
func TestTableFitsWidth(t *testing.T) {
	long := shellQuote([]string{"sh", "-c", "echo 服务器已启动 && sleep 600 # and on past the edge"})
	tb := table{
		header:   []string{"MONITOR", "STATUS", "NAME", "AGE", "ARGV"},
		cuttable: []bool{false, false, true, false, true},
	}
	tb.add([]string{"m_1", "running", quoteArg("ウェブサーバー"), "1s", long}, nil)
	tb.add([]string{"m_22", "exited (0)", "web", "2m05s", "sleep 1"}, nil)
	for _, c := range []struct {
		width int
		want  string
	}{
		{0, "" +
			"MONITOR  STATUS      NAME              AGE    ARGV\n" +
			"m_1      running     'ウェブサーバー'  1s     " + long + "\n" +
			"m_22     exited (0)  web               2m05s  sleep 1\n"},
		// The command is cut first, then both by turns once it is no
		// wider than the name.
		{70, "" +
			"MONITOR  STATUS      NAME              AGE    ARGV\n" +
			"m_1      running     'ウェブサーバー'  1s     sh -c 'echo 服务器已启…\n" +
			"m_22     exited (0)  web               2m05s  sleep 1\n"},
		{60, "" +
			"MONITOR  STATUS      NAME             AGE    ARGV\n" +
			"m_1      running     'ウェブサーバ…   1s     sh -c 'echo 服…\n" +
			"m_22     exited (0)  web              2m05s  sleep 1\n"},
		{50, "" +
			"MONITOR  STATUS      NAME        AGE    ARGV\n" +
			"m_1      running     'ウェブサ…  1s     sh -c 'ec…\n" +
			"m_22     exited (0)  web         2m05s  sleep 1\n"},
		// Narrower than what is never cut: the rows wrap.
		{20, "" +
			"MONITOR  STATUS      NAME  AGE    ARGV\n" +
			"m_1      running     'ウ…  1s     sh …\n" +
			"m_22     exited (0)  web   2m05s  sle…\n"},
	} {
		var b strings.Builder
		tb.write(&b, c.width)
		if b.String() != c.want {
			t.Errorf("width %d:\n%s\nwant:\n%s", c.width, b.String(), c.want)
		}
		for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
			if c.width >= 40 && cellWidth(l) > c.width {
				t.Errorf("width %d: %q takes %d cells", c.width, l, cellWidth(l))
			}
		}
	}
}

// TestCutToWidth cuts by cells, never inside a character, and keeps a
// combining mark with the character it marks.
func TestCutToWidth(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		want  string
	}{
		{"sleep 600", 9, "sleep 600"},
		{"sleep 600", 8, "sleep 6…"},
		{"ウェブ", 6, "ウェブ"},
		{"ウェブ", 5, "ウェ…"},
		{"ウェブ", 4, "ウ…"},
		{"cafe\u0301s", 5, "cafe\u0301s"},
		{"cafe\u0301s", 4, "caf…"},
		{"xcafe\u0301s", 5, "xcaf…"},
		{"cafe\u0301 au lait", 6, "cafe\u0301 …"},
	} {
		if got := cutToWidth(c.in, c.width); got != c.want {
			t.Errorf("cutToWidth(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
}

// TestViewWidth: a table fits the terminal it is shown on; where that
// says nothing, $COLUMNS or 80; in a pipe without $COLUMNS, any width.
func TestViewWidth(t *testing.T) {
	for _, c := range []struct {
		columns  string
		terminal bool
		want     int
	}{
		{"", false, 0},
		{"", true, 80},
		{"100", false, 100},
		{"100", true, 100},
		{"wide", true, 80},
		{"-3", false, 0},
	} {
		env := testEnv(t.TempDir(), &strings.Builder{}, &strings.Builder{})
		env.StdoutIsTerminal = c.terminal
		env.Getenv = func(k string) string {
			if k == "COLUMNS" {
				return c.columns
			}
			return ""
		}
		if got := viewWidth(env); got != c.want {
			t.Errorf("COLUMNS=%q on a terminal %v: width %d, want %d", c.columns, c.terminal, got, c.want)
		}
	}
}

// TestViewReceiptNamesTheMonitor: a receipt shown to a person (cancel,
// reconcile, run end) names a named monitor as status and list do, quoted
// as it would be typed back, before its id; its JSON is the protocol's,
// which has no name.
func TestViewReceiptNamesTheMonitor(t *testing.T) {
	r := receiptView{MonitorID: "m_web", Receipt: &state.Receipt{Status: "cancelled", Reason: "cancel", GroupEmptyVerified: true}, name: "my web"}
	var b strings.Builder
	viewReceipt(&b, palette{}, r)
	if want := "'my web' m_web  cancelled (cancel)\n  reason cancel, group empty (verified)\n"; b.String() != want {
		t.Errorf("receipt:\n%s\nwant:\n%s", b.String(), want)
	}
	data, err := json.Marshal(r)
	if err != nil || strings.Contains(string(data), "my web") {
		t.Errorf("the receipt's JSON is %s, %v: want no name in it", data, err)
	}
}

// TestViewRunEnd: run end shows the receipts of what it drained and
// counts the rest, however many the run started; its JSON is every
// receipt alike, and nothing of what the view leaves out.
func TestViewRunEnd(t *testing.T) {
	receipt := func(id, status string) receiptView {
		return receiptView{MonitorID: id, Receipt: &state.Receipt{Status: status, Reason: status, GroupEmptyVerified: true}}
	}
	r := &runEndResponse{RunID: "r_1", Monitors: []receiptView{receipt("m_old1", "exited"), receipt("m_live", "cancelled"), receipt("m_old2", "exited")}, drained: map[string]bool{"m_live": true}}
	var b strings.Builder
	viewRunEnd(&b, palette{}, r)
	want := "" +
		"run r_1 ended; it starts nothing more\n" +
		"m_live  cancelled\n" +
		"  reason cancelled, group empty (verified)\n" +
		"2 others had already ended; procmon list --run r_1 shows them\n"
	if b.String() != want {
		t.Errorf("run end:\n%s\nwant:\n%s", b.String(), want)
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"m_old1", "m_live", "m_old2"} {
		if !strings.Contains(string(data), `"monitor_id":"`+id+`"`) {
			t.Errorf("the JSON leaves out %s: %s", id, data)
		}
	}
	if strings.Contains(string(data), `"drained"`) {
		t.Errorf("the JSON tells what only the view needs: %s", data)
	}

	for _, c := range []struct {
		drained map[string]bool
		want    string
	}{
		{map[string]bool{"m_old1": true, "m_live": true}, "1 other had already ended; "},
		{map[string]bool{}, "nothing was running: 3 monitors had already ended; "},
	} {
		r.drained = c.drained
		b.Reset()
		viewRunEnd(&b, palette{}, r)
		if !strings.Contains(b.String(), "\n"+c.want) {
			t.Errorf("run end:\n%s\nwant a line starting %q", b.String(), c.want)
		}
	}
}

// TestViewRunList: runs are a table, so that an ended run, whose status
// says why it ended, shifts no column of the runs after it.
func TestViewRunList(t *testing.T) {
	now := time.UnixMilli(100_000)
	limit, ended := int64(20), int64(90_000)
	run := func(id string, endedAt *int64, reason string, l *int64) runView {
		r := &state.Run{RunID: id, CreatedAtMs: 40_000, EndedAtMs: endedAt, EndReason: reason}
		r.Policy.Sandbox.CommandLimit = l
		return runView{Run: r, BudgetUsed: 3}
	}
	var b strings.Builder
	viewRunList(&b, now, runListResponse{Runs: []runView{
		run("default", nil, "", &limit),
		run("r_0123456789abcdefghijklmnop", &ended, "owner_exited", &limit),
		run("r_qrstuvwxyz0123456789abcdef", nil, "", nil),
	}}, 80)
	want := "" +
		"RUN                           STATUS                AGE    STARTS\n" +
		"default                       active                1m00s  3 of 20\n" +
		"r_0123456789abcdefghijklmnop  ended (owner_exited)  1m00s  3 of 20\n" +
		"r_qrstuvwxyz0123456789abcdef  active                1m00s  3, no limit\n"
	if b.String() != want {
		t.Errorf("run list:\n%s\nwant:\n%s", b.String(), want)
	}
}

// run show promises the run's frozen policy, grants and owner; its view
// shows each of them.
func TestViewRunShow(t *testing.T) {
	limit, grace := int64(5), int64(12)
	r := &runView{Run: &state.Run{
		RunID: "r_1", Tools: []string{"start_process", "wait_process"}, Owner: &state.Owner{PID: 4242},
		Policy: state.Settings{Sandbox: state.Sandbox{CommandLimit: &limit, MonitorOwnerGraceSeconds: &grace}},
	}, BudgetUsed: 2}
	var b strings.Builder
	viewRunDetails(&b, r)
	for _, want := range []string{
		"  tools                   start_process, wait_process\n",
		"  owner                   pid 4242 (its exit ends the run)\n",
		"  starts per run          5\n",
		"  owner grace             12s\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("run show's details lack %q:\n%s", want, b.String())
		}
	}
}

// TestViewWaitSaysOutputWasLost: a wait for output that did not succeed on
// a monitor whose log lost bytes says so, since the text may be among them.
func TestViewWaitSaysOutputWasLost(t *testing.T) {
	scanned := int64(2048)
	r := &waitResponse{MonitorID: "m_web", Condition: wait.Condition{Kind: wait.KindOutput, Text: "ready"},
		Evidence: wait.Evidence{Outcome: wait.OutcomeTimeout, Observation: wait.Observation{
			Status: state.StatusRunning, ElapsedMs: 1000, ScannedBytes: &scanned,
			LogBytesLost: 4096, LogError: "write output.log: no space left on device"}}}
	var b strings.Builder
	viewWait(&b, palette{}, r)
	if want := "  4.1 kB of output could not be stored (the text may be in it): write output.log: no space left on device\n"; !strings.Contains(b.String(), want) {
		t.Errorf("wait:\n%s\nwant a line:\n%s", b.String(), want)
	}
	// A failed sync loses nothing the wait read.
	r.Observation.LogBytesLost, r.Observation.LogError = 0, "fsync output.log: input/output error"
	b.Reset()
	viewWait(&b, palette{}, r)
	if want := "  the log could not be written: fsync output.log: input/output error\n"; !strings.Contains(b.String(), want) || strings.Contains(b.String(), "0 B") {
		t.Errorf("wait:\n%s\nwant a line:\n%s", b.String(), want)
	}
}

// TestViewWaitSaysOutputIsHeld: a wait for output that did not succeed
// while the redactor holds the last bytes back says so, since the text
// may be among them (a URL's port may begin a password).
func TestViewWaitSaysOutputIsHeld(t *testing.T) {
	scanned := int64(30)
	r := &waitResponse{MonitorID: "m_web", Condition: wait.Condition{Kind: wait.KindOutput, Text: "http://localhost:8000"},
		Evidence: wait.Evidence{Outcome: wait.OutcomeTimeout, Observation: wait.Observation{
			Status: state.StatusRunning, ElapsedMs: 1000, ScannedBytes: &scanned, HeldBytes: 4}}}
	var b strings.Builder
	viewWait(&b, palette{}, r)
	if want := "  the last 4 bytes of the output are held back until the service writes more: they may begin a credential; the text may be among them\n"; !strings.Contains(b.String(), want) {
		t.Errorf("wait:\n%s\nwant a line:\n%s", b.String(), want)
	}
	if got, want := heldNote(1), "the last byte of the output is held back until the service writes more: it may begin a credential"; got != want {
		t.Errorf("heldNote(1) = %q, want %q", got, want)
	}
}

// TestTruncationNote: what a person is told, on stderr, of a logs answer
// that is not the whole output. The window's note hid every other
// reason, and a full disk's lost output among them.
func TestTruncationNote(t *testing.T) {
	for _, c := range []struct {
		r    logsResponse
		want string
	}{
		{logsResponse{Offset: 10, NextOffset: 20, StreamBytes: 30, Truncation: []string{state.TruncWindow}},
			"(showing bytes 10 to 20 of 30; more with --offset or --tail)"},
		{logsResponse{Offset: 10, NextOffset: 20, StreamBytes: 30, LogBytesLost: 13000000, LogError: "write output.log: no space left on device",
			Truncation: []string{state.TruncWindow, state.TruncLogLost}},
			"(showing bytes 10 to 20 of 30; more with --offset or --tail; the log could not store the last 13.0 MB of the output: write output.log: no space left on device)"},
		{logsResponse{Truncation: []string{state.TruncCaptureLimit, state.TruncIncompleteUTF8}},
			"(output cut: capture_limit, incomplete_utf8)"},
	} {
		if got := truncationNote(&c.r); got != c.want {
			t.Errorf("truncationNote(%v) = %q, want %q", c.r.Truncation, got, c.want)
		}
	}
}

// TestViewMonitorSaysWhatTheLogKeeps: past the output cap the log keeps
// less than was captured, which status says, so that logs showing less
// is no surprise; a live record's counts, a write apart, say nothing.
func TestViewMonitorSaysWhatTheLogKeeps(t *testing.T) {
	for _, c := range []struct {
		v    monitorView
		want string
	}{
		{monitorView{MonitorID: "m_a", Status: state.StatusOutputLimit, CapturedBytes: 1100000, LogBytes: 1000000, Receipt: &state.Receipt{}}, "output    1.1 MB captured, 1.0 MB stored\n"},
		{monitorView{MonitorID: "m_b", Status: state.StatusRunning, CapturedBytes: 900, LogBytes: 500, LogBytesLost: 400}, "output    900 B captured, 500 B stored\n"},
		{monitorView{MonitorID: "m_c", Status: state.StatusRunning, CapturedBytes: 900, LogBytes: 500}, "output    900 B captured\n"},
		{monitorView{MonitorID: "m_d", Status: state.StatusExited, CapturedBytes: 900, LogBytes: 900, Receipt: &state.Receipt{}}, "output    900 B captured\n"},
	} {
		var b strings.Builder
		viewMonitor(&b, palette{}, time.UnixMilli(0), &c.v)
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%s:\n%s\nwant a line %q", c.v.MonitorID, b.String(), c.want)
		}
	}
}

// TestViewRunNewSaysHowToSelectIt: a new run is used only once selected,
// which run new at a terminal says how to do.
func TestViewRunNewSaysHowToSelectIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	runIn(t, dir, "", "configure", "--enable")
	var out, errOut bytes.Buffer
	if status := Run([]string{"run", "new", "-o", "text"}, testEnv(dir, &out, &errOut)); status != 0 {
		t.Fatalf("run new: exit %d: %s%s", status, out.String(), errOut.String())
	}
	id := strings.Fields(out.String())[1]
	if want := "  select it: export PROCMON_RUN=" + id + "   (or --run " + id + ")\n"; !strings.HasPrefix(id, "r_") || !strings.HasSuffix(out.String(), want) {
		t.Errorf("run new showed:\n%s\nwant it to end with %q", out.String(), want)
	}
}

// TestViewNamesOnlyOnce: a monitor without a name is shown by its id
// alone, not by its short id and then its id.
func TestViewNamesOnlyOnce(t *testing.T) {
	var b strings.Builder
	viewStart(&b, palette{}, &startResponse{MonitorID: "m_0g6wlns4ia83abcdefghijklmn", RunID: "default", PID: 7, CommandOrdinal: 1, Argv: []string{"sleep", "1"}})
	if want := "started m_0g6wlns4ia83abcdefghijklmn (pid 7, command 1 of run default): sleep 1\n"; b.String() != want {
		t.Errorf("start of an unnamed monitor:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	viewStart(&b, palette{}, &startResponse{MonitorID: "m_0g6wlns4ia83abcdefghijklmn", Name: "web", RunID: "default", PID: 7, CommandOrdinal: 1, Argv: []string{"sleep", "1"}})
	if want := "started web m_0g6wlns4ia83abcdefghijklmn (pid 7, command 1 of run default): sleep 1\n"; b.String() != want {
		t.Errorf("start of a named monitor:\n%s\nwant:\n%s", b.String(), want)
	}
}
