//go:build linux

package cmd

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"procmon/internal/proc"
	"procmon/internal/protocol"
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

func newExecCmd(env *Env, g *globals) *cobra.Command {
	var req execRequest
	var envPairs []string
	var timeout, maxBytes int64
	var check bool
	c := &cobra.Command{
		Use:   "exec [flags] [--] COMMAND [ARGS...]",
		Short: "Run a foreground command in the run (execute_command) and return its result",
		Long: `Run one command in the foreground, for test clients, and return its actual
result: exit_code or signal, and the end of its redacted output with
output_bytes, output_sha256 and truncation. Takes one command slot of the
run's budget (starts and execs share it and its ordinals; never refunded).

  procmon exec curl -fsS http://127.0.0.1:8000/
  procmon exec --depends-on m_... --timeout 2m pytest -x tests/e2e
  echo '{"request":{"argv":["make","check"],"depends_on":["m_..."]}}' | procmon exec

procmon's own flags go before the command: everything from the command on
is the command's, flags included (pytest --timeout 30 keeps its flag; "--"
before the command is allowed). The command's stdin is /dev/null.

The command runs in a process group (and session) of its own with the same redaction, output
cap (max_output_bytes) and deadline rules as a monitor; when it ends (or is
drained) its group and any escaped descendant are drained and verified
gone. Its deadline is the smallest of the run's work duration, the
monitor timeout and --timeout, which defaults to 600 seconds: a foreground
command always has one. Output past max_output_bytes drains it (status
output_limit, also when it ended by itself first); a deadline drains it
as timed_out. A drain sends SIGTERM, then SIGKILL to what is left 5
seconds later: a command that ignores SIGTERM ends that much after its
deadline.

--depends-on names monitors the command needs: unless each is running with
a current ownership window the command is refused (needs_reconciliation)
before any slot is taken.

Ctrl-C, Ctrl-\, SIGTERM or SIGHUP drains the command's group and ends with the
error wait_interrupted (exit status 130) whose details.result is the
result so far (status cancelled, reason interrupted). On a terminal the
result so far is shown as a finished command's is, then the error.

procmon exec exits 0 once it has written the result, whatever the command
did, unless --check is given: then it exits 6 unless the command exited
0, with the result printed all the same, so a shell script can write:
procmon exec --check -- make test && deploy.`,
		RunE: func(c *cobra.Command, args []string) error {
			// Installed first: an interrupt at any point drains the command
			// rather than killing procmon with its custody.
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			if len(args) > 0 || flagsUsed(c, "check") {
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
				// By hand, a dependency may be named by the start of its
				// id or by its name, as every monitor argument may.
				for i, d := range req.DependsOn {
					if req.DependsOn[i], err = resolveArg(env, g, d); err != nil {
						return err
					}
				}
			} else if err := readRequest(env, c, &req); err != nil {
				return err
			}
			resp, err := runExec(ctx, env, g, req)
			if err != nil {
				return err
			}
			if resp.Reason == proc.ExecInterrupted {
				return interruptedExec(env, g, resp)
			}
			if check && (resp.Status != state.StatusExited || resp.ExitCode == nil || *resp.ExitCode != 0) {
				g.exitStatus = exitNotSatisfied
			}
			return respond(env, g, resp)
		},
	}
	c.Flags().BoolVar(&check, "check", false, "exit 6 unless the command exited 0 (for shell scripts)")
	c.Flags().StringVar(&req.Cwd, "cwd", "", "working directory (default: the current directory)")
	c.Flags().StringArrayVar(&envPairs, "env", nil, "NAME=VALUE added to the inherited environment (repeatable)")
	c.Flags().StringArrayVar(&req.SecretEnv, "secret-env", nil, "name of an env variable whose value is a secret (repeatable)")
	secondsVar(c, &timeout, "timeout", proc.DefaultExecTimeoutSeconds, "deadline from admission (30s, 10m, 2h; a plain number is seconds)")
	c.Flags().Int64Var(&maxBytes, "max-bytes", defaultLogBytes, "return at most this many bytes of the end of the output (at least 4)")
	c.Flags().StringArrayVar(&req.DependsOn, "depends-on", nil, "a monitor the command needs running: its id, the id's unique start, or its name (repeatable)")
	// Flags after the command are the command's, as for start: read as
	// procmon's, "procmon exec pytest --timeout 30" lost its flag and ran
	// under a 30 s deadline.
	c.Flags().SetInterspersed(false)
	return c
}

// runExec runs the command (see proc.Execute) and shapes its result.
// Interrupted (ctx done), it returns what the drained command did, with
// reason proc.ExecInterrupted: see interruptedExec.
func runExec(ctx context.Context, env *Env, g *globals, req execRequest) (*execResponse, error) {
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
	window := int64(defaultLogBytes)
	if req.MaxBytes != nil {
		window = *req.MaxBytes
	}
	x, err := proc.Execute(ctx, dir, proc.ExecRequest{
		RunID:       runID,
		DependsOn:   req.DependsOn,
		WindowBytes: window,
		Command: proc.Command{
			Argv:           req.Argv,
			Cwd:            cwd,
			Env:            req.Env,
			Inherited:      env.Environ(),
			Secrets:        req.Secrets,
			SecretEnv:      req.SecretEnv,
			TimeoutSeconds: req.TimeoutSeconds,
		},
	})
	if err != nil {
		return nil, err
	}
	res, ordinal := x.ExecResult, x.CommandOrdinal
	resp := &execResponse{
		RunID:          x.RunID,
		CommandOrdinal: ordinal,
		Argv:           res.Argv,
		PID:            res.PID,
		PGID:           res.PID,
		StartedAtMs:    res.StartedAtMs,
		DurationMs:     res.Receipt.FinishedAtMs - res.StartedAtMs,
		WorkDeadlineMs: x.DeadlineMs,
		Receipt:        *res.Receipt,
		Text:           res.Text,
		OutputBytes:    res.OutputBytes,
		OutputSHA256:   res.OutputSHA256,
		CapturedBytes:  res.CapturedBytes,
		StreamBytes:    res.StreamBytes,
		Truncation:     []string{},
		Warnings:       x.Warnings,
	}
	if res.CaptureLimit {
		resp.Truncation = append(resp.Truncation, state.TruncCaptureLimit)
	}
	if res.Window {
		resp.Truncation = append(resp.Truncation, state.TruncWindow)
	}
	if res.Undrained {
		resp.Truncation = append(resp.Truncation, state.TruncOutputUndrained)
	}
	resp.OutputTruncated = len(resp.Truncation) > 0
	return resp, nil
}

// interruptedExec answers an exec whose caller was interrupted: the error
// wait_interrupted, whose details.result is what the drained command did.
// A person cannot see details: they are shown the result as a finished
// exec's (its output so far, how it ended, the receipt), and then the
// error, whose message says nothing of details.
func interruptedExec(env *Env, g *globals, resp *execResponse) error {
	what := " (details.result has what it did)"
	if g.human {
		// Shown or not (a closed stdout), the error says what became
		// of the command.
		render(env, g, resp)
		what = ""
	}
	return protocol.Errorf(protocol.CodeWaitInterrupted, "exec of %s was interrupted: its group was drained%s", resp.Argv[0], what).
		With("command_ordinal", resp.CommandOrdinal).With("result", resp)
}

// checkExecRequest refuses, before a slot is taken, what the request's
// own limits do not allow (proc.Execute checks the command itself).
func checkExecRequest(req *execRequest) error {
	if len(req.Argv) == 0 {
		return errNoArgv()
	}
	if err := protocol.SecondsOrNull("timeout_seconds", req.TimeoutSeconds); err != nil {
		return err
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
