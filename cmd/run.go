//go:build linux

package cmd

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"procmon/internal/proc"
	"procmon/internal/protocol"
	"procmon/internal/state"
)

type runView struct {
	*state.Run
	BudgetUsed int64 `json:"budget_used"`
}

type runNewRequest struct {
	OwnerPID          *int     `json:"owner_pid,omitempty"`
	NativeCheckpoints bool     `json:"native_checkpoints,omitempty"`
	Tools             []string `json:"tools,omitempty"`
}

// runRequest names the run that run end and run show act on; left out,
// the selected one.
type runRequest struct {
	RunID string `json:"run_id,omitempty"`
}

// requestedRun is the run a command that acts on one names: the argument,
// else the request's run_id, else the selected run. The request is read
// from stdin when no argument is given; an empty stdin is an empty
// request.
func requestedRun(env *Env, g *globals, c *cobra.Command, args []string) (string, error) {
	if len(args) == 1 {
		return args[0], state.ValidRunID(args[0])
	}
	var req runRequest
	if err := readOptionalRequest(env, c, &req); err != nil {
		return "", err
	}
	if req.RunID != "" {
		return req.RunID, state.ValidRunID(req.RunID)
	}
	return selectedRun(env, g)
}

func newRunCmd(env *Env, g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "run",
		Short: "Create, inspect and end runs (agent invocations)",
		Long: `A run is one agent invocation. It freezes the settings of the moment it is
created (a later configure never reaches it), keeps its own command budget,
grants and owner, and when it ends every monitor it owns is drained.
Commands act in $PROCMON_RUN or --run, else the run "default".`,
	}
	c.AddCommand(newRunNewCmd(env, g), newRunEndCmd(env, g), newRunListCmd(env, g), newRunShowCmd(env, g))
	return c
}

func newRunNewCmd(env *Env, g *globals) *cobra.Command {
	var req runNewRequest
	var tools string
	var ownerPID int
	c := &cobra.Command{
		Use:   "new [--owner-pid N] [--native-checkpoints] [--tools LIST]",
		Short: "Create a run and print its id",
		Long: `Create a run with the current settings frozen into it and print its id.

  export PROCMON_RUN=$(procmon run new --owner-pid $$ | jq -r .run_id)

--owner-pid binds the run to a process: when it exits, every monitor of the
run is drained (reason owner_exited). --tools limits the monitor tools the
run allows (comma-separated; default all of them: ` + strings.Join(state.Tools, ", ") + `).
A run with --native-checkpoints refuses monitors.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if !flagsUsed(c) {
				if err := readOptionalRequest(env, c, &req); err != nil {
					return err
				}
			}
			if c.Flags().Changed("owner-pid") {
				req.OwnerPID = &ownerPID
			}
			if c.Flags().Changed("tools") {
				// An empty list grants no tool, as "tools": [] does: a
				// script's list that came out empty is not every tool.
				req.Tools = []string{}
				if tools != "" {
					req.Tools = strings.Split(tools, ",")
				}
			}
			run, err := runNew(env, req)
			if err != nil {
				return err
			}
			return respond(env, g, runView{Run: run})
		},
	}
	c.Flags().IntVar(&ownerPID, "owner-pid", 0, "drain the run's monitors when this process exits")
	c.Flags().BoolVar(&req.NativeCheckpoints, "native-checkpoints", false, "the invocation uses native checkpoints (monitors are refused)")
	c.Flags().StringVar(&tools, "tools", "", "comma-separated monitor tools the run allows")
	return c
}

func runNew(env *Env, req runNewRequest) (*state.Run, error) {
	dir, err := openState(env)
	if err != nil {
		return nil, err
	}
	n := state.NewRun{Tools: req.Tools, NativeCheckpoints: req.NativeCheckpoints}
	if req.OwnerPID != nil {
		pid := *req.OwnerPID
		if pid <= 1 {
			// No process to bind: init never exits, and 0 or less names
			// none (proc.Matches never takes them); 0 is what getppid()
			// gives in a container, so --owner-pid $PPID there.
			return nil, protocol.Errorf(protocol.CodeInvalidRequest, "owner pid %d cannot own a run: give the pid of the process whose exit ends the invocation (an agent's, or $$ of a shell)", pid).With("field", "owner_pid")
		}
		ticks, err := proc.StartTicks(pid)
		if err != nil || !proc.Matches(pid, ticks) {
			return nil, protocol.Errorf(protocol.CodeInvalidRequest, "owner pid %d is not a running process", pid).With("field", "owner_pid")
		}
		n.Owner = &state.Owner{PID: pid, StartTicks: ticks}
	}
	return dir.CreateNewRun(n, env.Now().UnixMilli())
}

type runEndResponse struct {
	RunID     string        `json:"run_id"`
	EndedAtMs int64         `json:"ended_at_ms"`
	Monitors  []receiptView `json:"monitors"`
	Errors    []listRow     `json:"errors,omitempty"`
	// drained marks the monitors this end drained. A person is shown
	// their receipts and only a count of the rest, which had ended
	// before; the JSON lists every receipt alike.
	drained map[string]bool
}

func newRunEndCmd(env *Env, g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "end [RUN_ID]",
		Short: "End the run: drain all its monitors and refuse further starts",
		Long: `End a run (RUN_ID, else the selected one): it refuses further starts
(run_ended) and every monitor it owns is drained (status cancelled, reason
run_ended). Prints the receipts of all its monitors; on a terminal, those
of the monitors it drained and a count of those that had ended before.
Monitors whose custody is unverified are listed under errors: settle
them with procmon reconcile. Ending is final, for the run "default" too:
commands without --run or PROCMON_RUN are then refused until a run made
with procmon run new is selected. At a terminal, run end with no run
selected (no RUN_ID, --run or PROCMON_RUN) is refused: name the run,
default too, to end it. Ctrl-C (or Ctrl-\), SIGTERM or SIGHUP
ends the waiting with the error wait_interrupted and exit status 130;
each guardian finishes a drain it has begun.`,
		Args:              atMostOne("run_id", "run id"),
		ValidArgsFunction: completeRunIDs(env),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 && env.StdinIsTerminal && g.run == "" && env.Getenv("PROCMON_RUN") == "" {
				// A person who typed run end to see what it does would
				// end "default" for good, and every later command of
				// theirs would need a run selected.
				return protocol.Errorf(protocol.CodeInvalidRequest, "run end with no run selected would end the run %q for good: every later command would then need --run or PROCMON_RUN; to mean it, name it: procmon run end %s", state.DefaultRun, state.DefaultRun).With("field", "run_id")
			}
			id, err := requestedRun(env, g, c, args)
			if err != nil {
				return err
			}
			resp, err := untilInterrupted(env, "run end of "+id, "procmon run show "+id+" and procmon list --run "+id, func() (*runEndResponse, error) {
				return runEnd(env, id)
			})
			if err != nil {
				return err
			}
			return respond(env, g, resp)
		},
	}
}

func runEnd(env *Env, id string) (*runEndResponse, error) {
	dir, err := lookState(env)
	if err != nil {
		return nil, err
	}
	ended, err := proc.EndRun(dir, id, env.Now().UnixMilli())
	if err != nil {
		return nil, err
	}
	resp := &runEndResponse{RunID: id, EndedAtMs: *ended.Run.EndedAtMs, Monitors: []receiptView{}, drained: map[string]bool{}}
	for _, m := range ended.Monitors {
		resp.Monitors = append(resp.Monitors, receiptOf(m.Observation))
		if m.Drained {
			resp.drained[m.Monitor.MonitorID] = true
		}
	}
	for _, f := range ended.Failed {
		resp.Errors = append(resp.Errors, errorRow(f.MonitorID, f.Err))
	}
	return resp, nil
}

func newRunListCmd(env *Env, g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the runs",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := readOptionalRequest(env, c, &runListRequest{}); err != nil {
				return err
			}
			dir, err := lookState(env)
			if err != nil {
				return err
			}
			ids, err := dir.RunIDs()
			if err != nil {
				return err
			}
			out := runListResponse{Runs: []runView{}}
			for _, id := range ids {
				v, err := showRun(env, dir, id)
				if err != nil {
					// Left out, a damaged run looked like none at all.
					row := errorRow(id, err)
					out.Errors = append(out.Errors, runErrorRow{RunID: id, Error: row.Error})
					continue
				}
				out.Runs = append(out.Runs, *v)
			}
			return respond(env, g, out)
		},
	}
}

func newRunShowCmd(env *Env, g *globals) *cobra.Command {
	return &cobra.Command{
		Use:               "show [RUN_ID]",
		Short:             "Show a run: frozen policy, grants, owner, budget used",
		Args:              atMostOne("run_id", "run id"),
		ValidArgsFunction: completeRunIDs(env),
		RunE: func(c *cobra.Command, args []string) error {
			id, err := requestedRun(env, g, c, args)
			if err != nil {
				return err
			}
			dir, err := lookState(env)
			if err != nil {
				return err
			}
			v, err := showRun(env, dir, id)
			if err != nil {
				return err
			}
			return respond(env, g, v)
		},
	}
}

func showRun(env *Env, dir *state.Dir, id string) (*runView, error) {
	r, err := dir.LoadRun(id)
	if err != nil {
		return nil, err
	}
	// An end that cannot be recorded (a full disk) leaves the run shown as
	// it is stored, rather than out of run list.
	if ended, err := dir.EndOwnerless(r, env.Now().UnixMilli(), proc.OwnerAlive); err == nil {
		r = ended
	}
	used, err := dir.BudgetUsed(id)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return &runView{Run: r, BudgetUsed: used}, nil
}
