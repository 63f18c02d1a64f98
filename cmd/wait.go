//go:build linux

package cmd

import (
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"procmon/internal/proc"
	"procmon/internal/protocol"
	"procmon/internal/state"
	"procmon/internal/wait"
)

type waitRequest struct {
	MonitorID      string          `json:"monitor_id"`
	Condition      json.RawMessage `json:"condition"`
	TimeoutSeconds *int64          `json:"timeout_seconds,omitempty"`
}

// waitResponse is the evidence of one wait; every outcome is a response.
type waitResponse struct {
	MonitorID string         `json:"monitor_id"`
	Condition wait.Condition `json:"condition"`
	wait.Evidence
}

// exitNotSatisfied is the exit status of wait --check when the outcome is
// not satisfied, and of exec --check when the command did not exit 0:
// distinct from every error's status, so a script can tell "not ready" or
// "failed" from "could not ask".
const exitNotSatisfied = 6

func newWaitCmd(env *Env, g *globals) *cobra.Command {
	var output, file, digest, name string
	var exit, check bool
	var timeout int64
	c := &cobra.Command{
		Use:   "wait [MONITOR_ID | NAME | --name NAME] (--output TEXT | --exit | --file PATH [--sha256 HEX]) [--timeout DURATION] [--check]",
		Short: "Block until a service shows output, exits, or writes a file",
		Long: `Block once until there is evidence about a service, then print it.

  procmon wait m_... --output "Listening on 8000" --timeout 60s
  procmon wait web --output "Serving HTTP" --timeout 2m --check
  procmon wait m_... --exit
  procmon wait m_... --file build/ready.json --sha256 HEX --timeout 120
  echo '{"request":{"monitor_id":"m_...","condition":{"kind":"output","text":"Serving HTTP"},"timeout_seconds":30}}' | procmon wait

The outcome is satisfied; timeout (the service keeps running); process_ended
(the service ended first: its exit code or signal and the last lines of its
output are in the observation); or unavailable (its custody is unverified:
see procmon status). Each outcome exits 0, unless --check is given: then
only satisfied exits 0, and any other outcome exits 6 after printing its
evidence, so a shell script can write: procmon wait ... --check || exit.
On a terminal a progress line (time waited, output seen, status) shows
while it waits, and is cleared when the answer comes.

--output matches a literal in the redacted output that procmon logs shows,
from its very start, so a line printed before the wait began counts. A
credential shows there only as [REDACTED], so a text holding one never
matches: the wait times out like any text not printed (it is not refused:
an answer that told such a text from another would let anyone guess a
credential a character at a time). Bytes that begin no UTF-8 character
read as U+FFFD, one for each byte, as logs shows them; match_offset is
the byte of the stream where the text begins, as logs --offset takes it.
--exit holds once the service has ended with a verified receipt, whatever
its exit code. --file needs a regular file at a clean path relative to the
service's working directory, read whole while it did not change; symlinks,
hardlinks, "..", absolute paths, the state directory and private paths
(.git, .ssh, .env) are refused. Any such file counts, even one just
created and still empty: have the service write it elsewhere and rename it
into place, or give --sha256. URLs, ports and pids are not wait targets:
wait for the line the service prints when it listens.

The working directory is held by the service's guardian from the start,
and files are read beneath that directory, never found again by its path:
if it was renamed, deleted or replaced since (refusal component_moved,
component_deleted or component_replaced) the outcome is unavailable. Only
the live guardian can hand the directory over, so a file wait that begins
after the service ended reads nothing and answers process_ended with the
refusal component_unproven; one that began before still checks the file
once more at the end.

--timeout takes 30s, 2m, 1h or a plain number of seconds. Without
--timeout the wait has no end of its own. Ctrl-C (or Ctrl-\), SIGTERM or
SIGHUP ends it with the error wait_interrupted and exit status 130; the
service keeps running.`,
		Args:              atMostOne("monitor_id", "monitor id or name"),
		ValidArgsFunction: completeMonitorIDs(env),
		RunE: func(c *cobra.Command, args []string) error {
			// Installed first, so an interrupt at any point is answered
			// with the typed error rather than the default death.
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()

			var id string
			var cond wait.Condition
			var timeoutSeconds *int64
			if len(args) == 1 || flagsUsed(c, "check") {
				var err error
				if len(args) == 1 || name != "" {
					if id, err = oneMonitorArg(env, g, args, name); err != nil {
						return err
					}
				} else {
					// The request's own message ("field monitor_id is
					// required") speaks of JSON to a person at flags.
					return protocol.Errorf(protocol.CodeInvalidRequest, "name the monitor to wait on: %s ID|NAME, or --name NAME (see %s --help)", c.CommandPath(), c.CommandPath()).With("field", "monitor_id")
				}
				if cond, err = conditionFromFlags(c, output, exit, file, digest); err != nil {
					return err
				}
				if c.Flags().Changed("timeout") {
					timeoutSeconds = &timeout
				}
			} else {
				var req waitRequest
				if err := readRequest(env, c, &req); err != nil {
					return err
				}
				if len(req.Condition) == 0 {
					return protocol.Errorf(protocol.CodeInvalidRequest, `field "condition" is required: {"kind": "output", "text": ...}, {"kind": "exit"} or {"kind": "file", "path": ...}`).With("field", "condition")
				}
				var err error
				if cond, err = wait.ParseCondition(req.Condition); err != nil {
					return err
				}
				id, timeoutSeconds = req.MonitorID, req.TimeoutSeconds
			}
			stopProgress := func() {}
			var began func()
			// A terminal that says TERM=dumb cannot erase a line.
			if g.human && env.StdoutIsTerminal && env.Getenv("TERM") != "dumb" {
				began = func() { stopProgress = showProgress(env, id, cond) }
			}
			resp, err := runWait(ctx, env, id, cond, timeoutSeconds, began)
			if ctx.Err() != nil {
				// A second interrupt must not cut the answer short. Here
				// only: procmon mcp runs runWait too, and ends its wait
				// when its client cancels, while the server goes on.
				signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			}
			stopProgress()
			if err != nil {
				return err
			}
			if check && resp.Outcome != wait.OutcomeSatisfied {
				g.exitStatus = exitNotSatisfied
			}
			return respond(env, g, resp)
		},
	}
	c.Flags().StringVar(&output, "output", "", "wait for this literal in the redacted output")
	c.Flags().BoolVar(&exit, "exit", false, "wait until the service has ended with a verified receipt")
	c.Flags().StringVar(&file, "file", "", "wait for a regular file at this path relative to the service's working directory")
	c.Flags().StringVar(&digest, "sha256", "", "with --file: only a file with this digest (64 lowercase hex digits) counts")
	secondsVar(c, &timeout, "timeout", 0, "give up after this long with outcome timeout (30s, 2m; a plain number is seconds)")
	c.Flags().BoolVar(&check, "check", false, "exit 6 unless the outcome is satisfied (for shell scripts)")
	addNameFlag(c, env, &name)
	return c
}

// conditionFromFlags builds the condition that exactly one of --output,
// --exit and --file asks for.
func conditionFromFlags(c *cobra.Command, output string, exit bool, file, digest string) (wait.Condition, error) {
	var cond wait.Condition
	kinds := 0
	if c.Flags().Changed("output") {
		cond, kinds = wait.Condition{Kind: wait.KindOutput, Text: output}, kinds+1
	}
	if exit {
		cond, kinds = wait.Condition{Kind: wait.KindExit}, kinds+1
	}
	if c.Flags().Changed("file") {
		cond, kinds = wait.Condition{Kind: wait.KindFile, Path: file}, kinds+1
	}
	if kinds != 1 {
		return cond, protocol.Errorf(protocol.CodeInvalidRequest, "give exactly one of --output TEXT, --exit or --file PATH (see procmon wait --help)").With("field", "condition")
	}
	if c.Flags().Changed("sha256") {
		if cond.Kind != wait.KindFile {
			return cond, protocol.Errorf(protocol.CodeInvalidRequest, "--sha256 goes with --file only").With("field", "sha256")
		}
		if digest == "" {
			return cond, protocol.Errorf(protocol.CodeInvalidCondition, "--sha256 is empty; give 64 lowercase hex digits or leave it out").With("field", "sha256")
		}
		cond.SHA256 = digest
	}
	return cond, cond.CheckShape()
}

// serviceRunsOn is what an interrupted wait says of its service, which
// procmon mcp says otherwise when its own stop drains it.
const serviceRunsOn = "the service keeps running"

// runWait waits on monitor id for cond. began, if any, is called once
// the request has been checked and the wait begins: a progress line drawn
// before would be left half drawn above a refusal.
func runWait(ctx context.Context, env *Env, id string, cond wait.Condition, timeoutSeconds *int64, began func()) (*waitResponse, error) {
	start := env.Now()
	if id == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidRequest, `field "monitor_id" is required`).With("field", "monitor_id")
	}
	if err := protocol.SecondsOrNull("timeout_seconds", timeoutSeconds); err != nil {
		return nil, err
	}
	var timeout time.Duration
	if timeoutSeconds != nil {
		timeout = time.Duration(*timeoutSeconds) * time.Second
	}
	dir, o, err := observeFor(env, id, state.WaitTool)
	if err != nil {
		return nil, err
	}
	target := proc.WaitTarget(dir, o.Monitor, env.Now)
	if cond.Kind == wait.KindFile {
		if err := proc.HoldFiles(&target, dir, o.Monitor, cond); err != nil {
			return nil, err
		}
	}
	interrupted := func() error {
		elapsed := env.Now().Sub(start).Milliseconds()
		return protocol.Errorf(protocol.CodeWaitInterrupted, "wait on %s was interrupted after %d ms; "+serviceRunsOn, id, elapsed).
			With("monitor_id", id).With("elapsed_ms", elapsed)
	}
	if began != nil {
		began()
	}
	ev, err := wait.Evaluate(ctx, cond, target, wait.Options{Timeout: timeout, Now: env.Now, Start: start})
	if err == nil && cond.Kind == wait.KindOutput && ev.Outcome != wait.OutcomeSatisfied {
		noteLostOutput(ctx, dir, id, &ev.Observation)
	}
	if ctx.Err() != nil {
		// Interrupted, even if the evidence was decided meanwhile: an
		// interrupt before the answer is written always exits 130.
		return nil, interrupted()
	}
	if err != nil {
		return nil, err
	}
	return &waitResponse{MonitorID: id, Condition: cond, Evidence: ev}, nil
}

// noteLostOutput adds to the evidence of a wait for output that did not
// succeed what the log could not store, as status shows it, and what the
// redactor holds back: the text may have been printed and lost (a full
// disk), or printed and not yet stored (its last bytes may begin a
// credential, as the port of "http://localhost:8000" may begin a
// password), which only the guardian's counters can tell. A live
// guardian is asked for them for no longer than lostOutputAsk, and not
// once ctx ends: the evidence is decided, and a stopped guardian must
// not hold it back, nor an interrupt.
func noteLostOutput(ctx context.Context, dir *state.Dir, id string, ob *wait.Observation) {
	o, err := proc.Observe(dir, id)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, lostOutputAsk)
	live := o.LiveCounters(ctx, dir)
	cancel()
	ob.LogBytesLost, ob.LogError, ob.HeldBytes = o.Monitor.LogBytesLost, o.Monitor.LogError, live.Held
}

// lostOutputAsk bounds how long a wait asks a live guardian for its
// output counters: one that answers does so in milliseconds.
const lostOutputAsk = 500 * time.Millisecond
