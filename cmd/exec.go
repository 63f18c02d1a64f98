//go:build linux

package cmd

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"procmon/internal/proc"
	"procmon/internal/protocol"
	"procmon/internal/redact"
	"procmon/internal/state"
)

// execRequest is execute_command's request.
type execRequest struct {
	Argv           []string          `json:"argv"`
	Cwd            string            `json:"cwd,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	Secrets        []string          `json:"secrets,omitempty"`
	SecretEnv      []string          `json:"secret_env,omitempty"`
	TimeoutSeconds *int64            `json:"timeout_seconds,omitempty"`
	MaxBytes       *int64            `json:"max_bytes,omitempty"`
	DependsOn      []string          `json:"depends_on,omitempty"`
}

// execResponse is the actual result of a foreground command: its receipt
// and the end of its redacted output.
type execResponse struct {
	RunID          string   `json:"run_id"`
	CommandOrdinal int64    `json:"command_ordinal"`
	Argv           []string `json:"argv"`
	PID            int      `json:"pid"`
	PGID           int      `json:"pgid"`
	StartedAtMs    int64    `json:"started_at_ms"`
	DurationMs     int64    `json:"duration_ms"`
	WorkDeadlineMs *int64   `json:"work_deadline_ms"`
	state.Receipt
	Text            string   `json:"text"`
	OutputBytes     int      `json:"output_bytes"`
	OutputSHA256    string   `json:"output_sha256"`
	CapturedBytes   int64    `json:"captured_bytes"`
	StreamBytes     int64    `json:"stream_bytes"`
	OutputTruncated bool     `json:"output_truncated"`
	Truncation      []string `json:"truncation"`
	Warnings        []string `json:"warnings,omitempty"`
}

// defaultExecTimeoutSeconds bounds a command whose request names no
// timeout: a foreground command always has a deadline, so a test client
// that hangs never holds the agent forever.
const defaultExecTimeoutSeconds = 600

func newExecCmd(env *Env, g *globals) *cobra.Command {
	var req execRequest
	var envPairs []string
	var timeout, maxBytes int64
	c := &cobra.Command{
		Use:   "exec [flags] -- ARGV...",
		Short: "Run a foreground command in the run (execute_command) and return its result",
		Long: `Run one command in the foreground, for test clients, and return its actual
result: exit_code or signal, and the end of its redacted output with
output_bytes, output_sha256 and truncation. Takes one command slot of the
run's budget (starts and execs share it and its ordinals; never refunded).

  procmon exec -- curl -fsS http://127.0.0.1:8000/
  procmon exec --depends-on m_... --timeout 2m -- pytest -x tests/e2e
  echo '{"request":{"argv":["make","check"],"depends_on":["m_..."]}}' | procmon exec

The command runs in a process group (and session) of its own with the same redaction, output
cap (max_output_bytes) and deadline rules as a monitor; when it ends (or is
drained) its group and any escaped descendant are drained and verified
gone. Its deadline is the smallest of the run's work duration, the
monitor timeout and --timeout, which defaults to 600 seconds: a foreground
command always has one. Output past max_output_bytes drains it (status
output_limit); a deadline drains it as timed_out.

--depends-on names monitors the command needs: unless each is running with
a current ownership window the command is refused (needs_reconciliation)
before any slot is taken.

Ctrl-C, SIGTERM or SIGHUP drains the command's group and ends with the
error wait_interrupted (exit status 130) whose details.result is the
result so far (status cancelled, reason interrupted).`,
		RunE: func(c *cobra.Command, args []string) error {
			// Installed first: an interrupt at any point drains the command
			// rather than killing procmon with its custody.
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			if len(args) > 0 || flagsUsed(c) {
				req.Argv = args
				if c.Flags().Changed("timeout") {
					req.TimeoutSeconds = &timeout
				}
				if c.Flags().Changed("max-bytes") {
					req.MaxBytes = &maxBytes
				}
				var err error
				if req.Env, err = envFlags(envPairs); err != nil {
					return err
				}
			} else if err := readRequest(env, c, &req); err != nil {
				return err
			}
			resp, err := runExec(ctx, env, g, req)
			if err != nil {
				return err
			}
			return respond(env, g, resp)
		},
	}
	c.Flags().StringVar(&req.Cwd, "cwd", "", "working directory (default: the current directory)")
	c.Flags().StringArrayVar(&envPairs, "env", nil, "NAME=VALUE added to the inherited environment (repeatable)")
	c.Flags().StringArrayVar(&req.SecretEnv, "secret-env", nil, "name of an env variable whose value is a secret (repeatable)")
	secondsVar(c, &timeout, "timeout", defaultExecTimeoutSeconds, "deadline from admission (30s, 10m, 2h; a plain number is seconds)")
	c.Flags().Int64Var(&maxBytes, "max-bytes", defaultLogBytes, "return at most this many bytes of the end of the output (at least 4)")
	c.Flags().StringArrayVar(&req.DependsOn, "depends-on", nil, "monitor id the command needs running (repeatable)")
	return c
}

// runExec admits the command, checks the monitors it depends on, takes
// its command slot and runs it. Interrupted (ctx done), it still reports
// what the drained command did, in the error's details.
func runExec(ctx context.Context, env *Env, g *globals, req execRequest) (*execResponse, error) {
	admitted := env.Now().UnixMilli()
	if err := checkExecRequest(&req); err != nil {
		return nil, err
	}
	cwd, err := resolveCwd(env, req.Cwd)
	if err != nil {
		return nil, err
	}
	dir, err := openState(env)
	if err != nil {
		return nil, err
	}
	runID, err := selectedRun(env, g)
	if err != nil {
		return nil, err
	}
	run, err := dir.Admit(runID, state.ExecTool, admitted, func(o state.Owner) bool { return proc.Matches(o.PID, o.StartTicks) })
	if err != nil {
		return nil, err
	}
	// Later commands never run on an uncertain handoff: every monitor the
	// command depends on must be running with a current ownership window.
	for _, id := range req.DependsOn {
		o, err := proc.Observe(dir, id)
		if err != nil {
			return nil, err
		}
		if o.Status != state.StatusRunning {
			why := o.Why
			if why == "" {
				why = "it is " + o.Status + ", not running"
			}
			return nil, protocol.Errorf(protocol.CodeNeedsReconciliation, "exec depends on monitor %s, which is not running with a current ownership window (%s); see procmon status %s", id, why, id).
				With("monitor_id", id).With("status", o.Status).With("why", why)
		}
	}
	timeout := int64(defaultExecTimeoutSeconds)
	if req.TimeoutSeconds != nil {
		timeout = *req.TimeoutSeconds
	}
	childEnv := (&proc.Command{Inherited: env.Environ(), Env: req.Env}).Environ()
	secrets, warnings := redact.Secrets(childEnv, req.Secrets, append(append([]string(nil), req.SecretEnv...), run.Policy.SecretEnv...))
	sb := run.Policy.Sandbox
	spec := proc.ExecSpec{
		Argv:           req.Argv,
		Cwd:            cwd,
		Env:            childEnv,
		Secrets:        secrets,
		DeadlineMs:     run.WorkDeadline(admitted, &timeout),
		MaxOutputBytes: sb.MaxOutputBytes,
		WindowBytes:    defaultLogBytes,
		GraceMs:        proc.DefaultDrainGraceMs,
		State:          dir,
	}
	if req.MaxBytes != nil {
		spec.WindowBytes = *req.MaxBytes
	}
	// The slot is taken before anything is spawned and never refunded, as
	// a start's is; an exec that fails to spawn has used it. What comes
	// before the spawn is done while the slot is made durable.
	type prepared struct {
		p   *proc.PreparedExec
		err error
	}
	ready := make(chan prepared, 1)
	go func() {
		p, err := proc.PrepareExec(spec)
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
		return nil, protocol.AsError(pr.err).With("command_ordinal", ordinal)
	}
	res, err := pr.p.Run(ctx)
	if err != nil {
		return nil, protocol.AsError(err).With("command_ordinal", ordinal)
	}
	resp := &execResponse{
		RunID:          run.RunID,
		CommandOrdinal: ordinal,
		Argv:           res.Argv,
		PID:            res.PID,
		PGID:           res.PID,
		StartedAtMs:    res.StartedAtMs,
		DurationMs:     res.Receipt.FinishedAtMs - res.StartedAtMs,
		WorkDeadlineMs: spec.DeadlineMs,
		Receipt:        *res.Receipt,
		Text:           res.Text,
		OutputBytes:    res.OutputBytes,
		OutputSHA256:   res.OutputSHA256,
		CapturedBytes:  res.CapturedBytes,
		StreamBytes:    res.StreamBytes,
		Truncation:     []string{},
		Warnings:       warnings,
	}
	if res.CaptureLimit {
		resp.Truncation = append(resp.Truncation, state.TruncCaptureLimit)
	}
	if res.Window {
		resp.Truncation = append(resp.Truncation, state.TruncWindow)
	}
	resp.OutputTruncated = len(resp.Truncation) > 0
	if res.Receipt.Reason == proc.ExecInterrupted {
		return nil, protocol.Errorf(protocol.CodeWaitInterrupted, "exec of %s was interrupted: its group was drained (details.result has what it did)", resp.Argv[0]).
			With("command_ordinal", ordinal).With("result", resp)
	}
	return resp, nil
}

// checkExecRequest refuses, before a slot is taken, what could never run.
func checkExecRequest(req *execRequest) error {
	if len(req.Argv) == 0 {
		return protocol.Errorf(protocol.CodeInvalidRequest, `field "argv" is required and must not be empty: procmon exec -- COMMAND [ARGS...]`).With("field", "argv")
	}
	if req.Argv[0] == "" {
		return protocol.Errorf(protocol.CodeInvalidRequest, `field "argv": argv[0] is empty`).With("field", "argv")
	}
	for i, a := range req.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return protocol.Errorf(protocol.CodeInvalidRequest, `field "argv": argv[%d] holds a NUL byte, which no program can be passed`, i).With("field", "argv")
		}
	}
	if strings.IndexByte(req.Cwd, 0) >= 0 {
		return protocol.Errorf(protocol.CodeInvalidRequest, `field "cwd" holds a NUL byte`).With("field", "cwd")
	}
	for k, v := range req.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return protocol.Errorf(protocol.CodeInvalidRequest, `field "env": %q=... is not a variable a program can be given (an empty name, or "=" or a NUL byte in it)`, k).With("field", "env")
		}
	}
	for i, s := range req.Secrets {
		if len(s) < redact.MinSecretLen {
			return protocol.Errorf(protocol.CodeInvalidRequest, "secrets[%d] is shorter than %d bytes; so short a secret would shred ordinary output", i, redact.MinSecretLen).With("field", "secrets")
		}
	}
	if err := protocol.SecondsOrNull("timeout_seconds", req.TimeoutSeconds); err != nil {
		return err
	}
	if req.TimeoutSeconds != nil && *req.TimeoutSeconds > maxWaitSeconds {
		return protocol.Errorf(protocol.CodeInvalidRequest, `field "timeout_seconds" must be at most %d`, int64(maxWaitSeconds)).With("field", "timeout_seconds")
	}
	if req.MaxBytes != nil && *req.MaxBytes < 4 {
		return protocol.Errorf(protocol.CodeInvalidRequest, `field "max_bytes" must be at least 4, room for one UTF-8 character`).With("field", "max_bytes")
	}
	for _, id := range req.DependsOn {
		if err := state.ValidMonitorID(id); err != nil {
			return protocol.AsError(err).With("field", "depends_on")
		}
	}
	return nil
}
