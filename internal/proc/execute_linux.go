package proc

import (
	"context"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

// DefaultExecTimeoutSeconds bounds a foreground command whose request
// names no timeout: it always has a deadline, so a test client that
// hangs never holds its caller forever.
const DefaultExecTimeoutSeconds = 600

// ExecRequest is a foreground command (execute_command) as the caller
// resolved it.
type ExecRequest struct {
	Command
	RunID string
	// DependsOn names the monitors the command needs running.
	DependsOn []string
	// WindowBytes is the most of the end of the redacted output returned.
	WindowBytes int64
}

// Executed is a foreground command's actual result, and what it ran as.
type Executed struct {
	*ExecResult
	RunID          string
	CommandOrdinal int64
	DeadlineMs     *int64
	Warnings       []string // about the request: see Start
}

// Execute runs a foreground command in its run and returns its result:
// it is admitted as a start is (the run grants ExecTool), refused with
// needs_reconciliation unless every monitor it depends on is running
// with a current ownership window (later commands never run on an
// uncertain handoff), takes one slot of the run's budget, never refunded,
// and runs under this process's custody (see Exec). Interrupted (ctx
// done), the command is drained and the result says so (reason
// ExecInterrupted).
func Execute(ctx context.Context, dir *state.Dir, req ExecRequest) (*Executed, error) {
	admitted := nowMs()
	if err := req.check(); err != nil {
		return nil, err
	}
	run, err := dir.Admit(req.RunID, state.ExecTool, admitted, OwnerAlive)
	if err != nil {
		return nil, err
	}
	for _, id := range req.DependsOn {
		o, err := Observe(dir, id)
		if err != nil {
			return nil, err
		}
		if o.Status != state.StatusRunning {
			why := o.Why
			if why == "" {
				why = "it is " + o.Status + ", not running"
			}
			return nil, protocol.Errorf(protocol.CodeNeedsReconciliation, "exec depends on monitor %s, which is not running with a current ownership window (%s)", id, why).
				With("monitor_id", id).With("status", o.Status).With("why", why)
		}
	}
	timeout := int64(DefaultExecTimeoutSeconds)
	if req.TimeoutSeconds != nil {
		timeout = *req.TimeoutSeconds
	}
	env := req.Environ()
	secrets, warnings, err := req.secrets(env, run)
	if err != nil {
		return nil, err
	}
	sb := run.Policy.Sandbox
	spec := ExecSpec{
		Argv:           req.Argv,
		Cwd:            req.Cwd,
		Env:            env,
		Secrets:        secrets,
		DeadlineMs:     run.WorkDeadline(admitted, &timeout),
		MaxOutputBytes: sb.MaxOutputBytes,
		WindowBytes:    req.WindowBytes,
		GraceMs:        DefaultDrainGraceMs,
		State:          dir,
		RunID:          run.RunID,
		Owner:          run.Owner,
	}
	// The slot is taken before anything is spawned and never refunded, as
	// a start's is; an exec that fails to spawn has used it. What comes
	// before the spawn is done while the slot is made durable.
	type prepared struct {
		p   *PreparedExec
		err error
	}
	ready := make(chan prepared, 1)
	go func() {
		p, err := PrepareExec(spec)
		ready <- prepared{p, err}
	}()
	ordinal, err := dir.TakeOrdinal(run.RunID, sb.CommandLimit, nil)
	pr := <-ready
	if err != nil {
		if pr.p != nil {
			pr.p.Abandon()
		}
		return nil, err
	}
	if pr.err != nil {
		return nil, slotUsed(pr.err, ordinal)
	}
	res, err := pr.p.Run(ctx)
	if err != nil {
		return nil, slotUsed(err, ordinal)
	}
	return &Executed{ExecResult: res, RunID: run.RunID, CommandOrdinal: ordinal, DeadlineMs: spec.DeadlineMs, Warnings: warnings}, nil
}
