package state

import (
	"path/filepath"
	"strings"
	"testing"

	"procmon/internal/protocol"
)

func openTestDir(t *testing.T) *Dir {
	t.Helper()
	d, err := Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestAdmit: a command is admitted in a run only while monitors were on
// when it was made, it grants the tool and has not ended; the default run
// is made on first use, and only while monitors are enabled.
func TestAdmit(t *testing.T) {
	alive := func(Owner) bool { return true }
	d := openTestDir(t)
	if _, err := d.Admit(DefaultRun, StartTool, 1000, alive); !protocol.HasCode(err, protocol.CodeMonitorsDisabled) {
		t.Fatalf("admit before configure: %v, want monitors_disabled", err)
	}
	if _, err := d.LoadRun(DefaultRun); !protocol.HasCode(err, protocol.CodeUnknownRun) {
		t.Fatalf("a refused admission made the default run: %v", err)
	}
	if err := d.SaveSettings(ExampleSettings()); err != nil {
		t.Fatal(err)
	}
	r, err := d.Admit(DefaultRun, StartTool, 1000, alive)
	if err != nil || r.RunID != DefaultRun || r.CreatedAtMs != 1000 {
		t.Fatalf("admit: %+v, %v; want the default run made at 1000", r, err)
	}

	narrow, err := d.CreateNewRun(NewRun{Tools: []string{ExecTool, " " + StatusTool, ExecTool}}, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if len(narrow.Tools) != 2 || narrow.Tools[0] != ExecTool || narrow.Tools[1] != StatusTool {
		t.Errorf("tools %q, want [%s %s]", narrow.Tools, ExecTool, StatusTool)
	}
	if _, err := d.Admit(narrow.RunID, StartTool, 2000, alive); !protocol.HasCode(err, protocol.CodeToolNotAllowed) {
		t.Errorf("start in a run without it: %v, want tool_not_allowed", err)
	}
	if _, err := d.Admit(narrow.RunID, ExecTool, 2000, alive); err != nil {
		t.Errorf("exec in a run that grants it: %v", err)
	}
	if _, err := d.CreateNewRun(NewRun{Tools: []string{"rm_rf"}}, 2000); !protocol.HasCode(err, protocol.CodeInvalidRequest) {
		t.Errorf("a run with an unknown tool: %v, want invalid_request", err)
	}

	// Native checkpoints reject monitors, not foreground commands.
	cp, err := d.CreateNewRun(NewRun{NativeCheckpoints: true}, 3000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Admit(cp.RunID, StartTool, 3000, alive); !protocol.HasCode(err, protocol.CodeCheckpointsIncompat) {
		t.Errorf("start with native checkpoints: %v, want checkpoints_incompatible", err)
	}
	if _, err := d.Admit(cp.RunID, ExecTool, 3000, alive); err != nil {
		t.Errorf("exec with native checkpoints: %v", err)
	}
}

// TestAdmitRefusesPastTheWorkDuration: a run whose work duration has
// passed admits no command (run_ended, naming the deadline), rather than
// one that its deadline drains at once; a monitor timeout, counted from
// admission, never refuses.
func TestAdmitRefusesPastTheWorkDuration(t *testing.T) {
	alive := func(Owner) bool { return true }
	d := openTestDir(t)
	s := ExampleSettings()
	seconds, timeout := int64(3), int64(1)
	s.Sandbox.WorkDuration.TimeoutSeconds = &seconds
	s.Sandbox.MonitorTimeoutSeconds = &timeout
	if err := d.SaveSettings(s); err != nil {
		t.Fatal(err)
	}
	r, err := d.CreateNewRun(NewRun{}, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Admit(r.RunID, StartTool, 12_999, alive); err != nil {
		t.Fatalf("admit 1 ms before the work duration ends: %v", err)
	}
	// A stored policy with no work duration and a monitor timeout that is
	// no longer valid (an older procmon's, or planted) is no refusal.
	bare, err := d.UpdateRun(r.RunID, func(r *Run) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	bare.RunID = "r_" + strings.Repeat("b", 26)
	bare.Policy.Sandbox.WorkDuration.TimeoutSeconds = nil
	bare.Policy.Sandbox.MonitorTimeoutSeconds = &zero
	if err := d.CreateRun(bare); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Admit(bare.RunID, StartTool, 13_000, alive); err != nil {
		t.Errorf("admit in a run with no work duration: %v", err)
	}
	for _, tool := range []string{StartTool, ExecTool} {
		_, err := d.Admit(r.RunID, tool, 13_000, alive)
		pe := protocol.AsError(err)
		if !protocol.HasCode(err, protocol.CodeRunEnded) || pe.Details["work_deadline_ms"] != int64(13_000) {
			t.Errorf("%s once the work duration has passed: %v (details %v), want run_ended at 13000", tool, err, pe.Details)
		}
	}
}

// TestAdmitRecordsAnExitedOwner: a run whose owner has exited has ended;
// the first command to see it records the end, and it is refused.
func TestAdmitRecordsAnExitedOwner(t *testing.T) {
	d := openTestDir(t)
	if err := d.SaveSettings(ExampleSettings()); err != nil {
		t.Fatal(err)
	}
	r, err := d.CreateNewRun(NewRun{Owner: &Owner{PID: 4242, StartTicks: 7}}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var asked Owner
	gone := func(o Owner) bool { asked = o; return false }
	if _, err := d.Admit(r.RunID, ExecTool, 5000, gone); !protocol.HasCode(err, protocol.CodeRunEnded) {
		t.Fatalf("admit with the owner gone: %v, want run_ended", err)
	}
	if asked != (Owner{PID: 4242, StartTicks: 7}) {
		t.Errorf("asked about %+v, want the run's owner", asked)
	}
	ended, err := d.LoadRun(r.RunID)
	if err != nil || ended.EndedAtMs == nil || *ended.EndedAtMs != 5000 || ended.EndReason != "owner_exited" {
		t.Fatalf("run after the refusal: %+v, %v; want ended at 5000, owner_exited", ended, err)
	}
	if _, err := d.Admit(r.RunID, StartTool, 6000, func(Owner) bool { return true }); !protocol.HasCode(err, protocol.CodeRunEnded) {
		t.Errorf("admit in an ended run: %v, want run_ended", err)
	}
}

// TestWorkDeadline: the smallest of the run's work duration (from its
// creation), its monitor timeout and the request's (from admission); none
// chosen, none; a sum past int64 saturates rather than wrapping.
func TestWorkDeadline(t *testing.T) {
	sec := func(n int64) *int64 { return &n }
	run := func(work, monitor *int64) *Run {
		r := &Run{CreatedAtMs: 1_000}
		r.Policy.Sandbox.MonitorTimeoutSeconds = monitor
		if work != nil {
			r.Policy.Sandbox.WorkDuration = &WorkDuration{TimeoutSeconds: work}
		}
		return r
	}
	for _, c := range []struct {
		name                   string
		work, monitor, request *int64
		want                   int64 // -1: none
	}{
		{"none", nil, nil, nil, -1},
		{"request only", nil, nil, sec(5), 15_000},
		{"work duration counts from the run's creation", sec(5), nil, sec(60), 6_000},
		{"monitor timeout", nil, sec(3), sec(60), 13_000},
		{"request smallest", sec(100), sec(50), sec(1), 11_000},
		{"saturated", nil, nil, sec(1 << 62), 1<<63 - 1},
	} {
		got := run(c.work, c.monitor).WorkDeadline(10_000, c.request)
		if (got == nil) != (c.want == -1) || got != nil && *got != c.want {
			t.Errorf("%s: deadline %v, want %d", c.name, got, c.want)
		}
	}
}
