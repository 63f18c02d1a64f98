package state

import (
	"errors"
	"io/fs"
	"math"
	"strings"

	"procmon/internal/ids"
	"procmon/internal/protocol"
)

// OpenRun loads run id. The default run is created on first use, freezing
// the settings of that moment (nowMs is its creation time); it is never
// created while monitors are disabled, so enabling them later still
// reaches it.
func (d *Dir) OpenRun(id string, nowMs int64) (*Run, error) {
	r, err := d.LoadRun(id)
	if err == nil || id != DefaultRun || !protocol.HasCode(err, protocol.CodeUnknownRun) {
		return r, err
	}
	settings, err := d.EnabledSettings()
	if err != nil {
		return nil, err
	}
	created := &Run{RunID: id, CreatedAtMs: nowMs, Policy: settings, Tools: Tools}
	if err := d.CreateRun(created); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	return d.LoadRun(id)
}

// EnabledSettings returns the stored settings if they enable monitors, and
// monitors_disabled otherwise.
func (d *Dir) EnabledSettings() (Settings, error) {
	s, ok, err := d.LoadSettings()
	if err != nil {
		return s, err
	}
	if !ok {
		return s, MonitorsDisabled("no runner settings are stored in " + d.Path)
	}
	if !s.Sandbox.ProcessMonitor {
		return s, MonitorsDisabled("the stored settings have process_monitor false")
	}
	return s, nil
}

// NewRun is what a new run is made of besides the settings it freezes.
type NewRun struct {
	Tools             []string // the tools it grants; nil: all of Tools
	NativeCheckpoints bool
	Owner             *Owner // a process already proven alive; nil: unbound
}

// CreateNewRun creates a run with a new id, freezing the stored settings
// (which need not enable monitors: a run made while they are off refuses
// its monitors, see Grants).
func (d *Dir) CreateNewRun(n NewRun, nowMs int64) (*Run, error) {
	settings, ok, err := d.LoadSettings()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, MonitorsDisabled("no runner settings are stored in " + d.Path)
	}
	r := &Run{
		RunID:             ids.NewID("r_"),
		CreatedAtMs:       nowMs,
		Policy:            settings,
		Tools:             Tools,
		NativeCheckpoints: n.NativeCheckpoints,
		Owner:             n.Owner,
	}
	if n.Tools != nil {
		r.Tools = nil
		for _, t := range n.Tools {
			t = strings.TrimSpace(t)
			if !contains(Tools, t) {
				return nil, protocol.Errorf(protocol.CodeInvalidRequest, "unknown tool %q: the tools are %s", t, strings.Join(Tools, ", ")).With("field", "tools")
			}
			if !contains(r.Tools, t) {
				r.Tools = append(r.Tools, t)
			}
		}
	}
	if err := d.CreateRun(r); err != nil {
		return nil, err
	}
	return r, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Grants checks the run's frozen policy and grants for one tool: monitors
// were on when it was made, it grants the tool, and, for a monitor tool,
// it does not use native checkpoints (which reject monitor grants; a
// foreground command, ExecTool, is no monitor).
func (r *Run) Grants(tool string) error {
	if !r.Policy.Sandbox.ProcessMonitor {
		return protocol.AsError(MonitorsDisabled("run "+r.RunID+" was created while they were off")).With("run_id", r.RunID)
	}
	if r.NativeCheckpoints && tool != ExecTool {
		return protocol.Errorf(protocol.CodeCheckpointsIncompat, "run %s uses native checkpoints, which reject monitor grants", r.RunID).With("run_id", r.RunID)
	}
	return r.GrantsTool(tool)
}

// GrantsTool checks the run's grants alone for one tool: tool_not_allowed
// unless it is among the run's tools.
func (r *Run) GrantsTool(tool string) error {
	if !r.Allows(tool) {
		return protocol.Errorf(protocol.CodeToolNotAllowed, "run %s does not allow %s (it allows: %s)", r.RunID, tool, allowedTools(r.Tools)).
			With("run_id", r.RunID).With("tool", tool)
	}
	return nil
}

// allowedTools lists a run's tools for a message.
func allowedTools(tools []string) string {
	if len(tools) == 0 {
		return "none"
	}
	return strings.Join(tools, ", ")
}

// Admit opens the run a new command (tool is StartTool or ExecTool) is
// to be run in and checks that it may be: the run grants the tool, has
// not ended and has work duration left. A run whose owner has exited (ownerAlive says, for a
// bound run) has ended: that is recorded, as the owner's watchers would,
// and the command is refused. The command's slot is taken later, under
// the run's lock, which refuses it should the run end meanwhile.
func (d *Dir) Admit(runID, tool string, nowMs int64, ownerAlive func(Owner) bool) (*Run, error) {
	run, err := d.OpenRun(runID, nowMs)
	if err != nil {
		return nil, err
	}
	if err := run.Grants(tool); err != nil {
		return nil, err
	}
	if run.EndedAtMs != nil {
		return nil, protocol.Errorf(protocol.CodeRunEnded, "run %s has ended and takes no more commands", run.RunID).With("run_id", run.RunID)
	}
	if wd := run.Policy.Sandbox.WorkDuration; wd != nil && wd.TimeoutSeconds != nil {
		// A command admitted past the run's work duration would be
		// drained at once, its slot spent, after an answer that it runs.
		if end := endAfter(run.CreatedAtMs, *wd.TimeoutSeconds); end <= nowMs {
			return nil, protocol.Errorf(protocol.CodeRunEnded, "run %s has used its work duration (%d s from its creation) and takes no more commands",
				run.RunID, *wd.TimeoutSeconds).With("run_id", run.RunID).With("work_deadline_ms", end)
		}
	}
	if o := run.Owner; o != nil && !ownerAlive(*o) {
		if _, err := d.EndOwnerless(run, nowMs, ownerAlive); err != nil {
			return nil, err
		}
		return nil, protocol.Errorf(protocol.CodeRunEnded, "run %s has ended: its owner (pid %d) exited", run.RunID, o.PID).With("run_id", run.RunID)
	}
	return run, nil
}

// EndOwnerless records the end of run r, bound to an owner that has
// exited (ownerAlive says), as the owner's watchers would, and returns
// the run as stored; any other run is returned as it is. A run is shown
// ended once its owner is gone, not only once a start finds it so.
func (d *Dir) EndOwnerless(r *Run, nowMs int64, ownerAlive func(Owner) bool) (*Run, error) {
	if r.EndedAtMs != nil || r.Owner == nil || ownerAlive(*r.Owner) {
		return r, nil
	}
	return d.UpdateRun(r.RunID, func(r *Run) error {
		if r.EndedAtMs == nil {
			r.EndedAtMs, r.EndReason = &nowMs, "owner_exited"
		}
		return nil
	})
}

// WorkDeadline is the deadline of a command admitted at admittedMs: the
// smallest chosen cap of the run's work duration (counted from the run's
// creation), its monitor timeout and the request's timeout (counted from
// admission). None chosen: nil, no deadline.
func (r *Run) WorkDeadline(admittedMs int64, requestSeconds *int64) *int64 {
	var deadline *int64
	consider := func(fromMs int64, seconds *int64) {
		if seconds == nil {
			return
		}
		if d := endAfter(fromMs, *seconds); deadline == nil || d < *deadline {
			deadline = &d
		}
	}
	if wd := r.Policy.Sandbox.WorkDuration; wd != nil {
		consider(r.CreatedAtMs, wd.TimeoutSeconds)
	}
	consider(admittedMs, r.Policy.Sandbox.MonitorTimeoutSeconds)
	consider(admittedMs, requestSeconds)
	return deadline
}

// endAfter is seconds after fromMs, in milliseconds, saturated: a stored
// policy may predate the bound on durations.
func endAfter(fromMs, seconds int64) int64 {
	if seconds > (math.MaxInt64-fromMs)/1000 {
		return math.MaxInt64
	}
	return fromMs + seconds*1000
}

// AdmitFor checks that the run monitor m belongs to grants tool, a tool
// that acts on a monitor.
func (d *Dir) AdmitFor(m *Monitor, tool string, nowMs int64) error {
	r, err := d.OpenRun(m.RunID, nowMs)
	if err != nil {
		return err
	}
	if err := r.Grants(tool); err != nil {
		// The monitor's run decides, whichever run is selected.
		return protocol.AsError(err).With("monitor_id", m.MonitorID)
	}
	return nil
}
