//go:build linux

package cmd

import (
	"sort"
	"sync"

	"github.com/spf13/cobra"

	"procmon/internal/proc"
	"procmon/internal/protocol"
	"procmon/internal/state"
)

// listOptions is the request of list: by flag, or on stdin.
type listOptions struct {
	AllRuns bool `json:"all_runs,omitempty"`
}

// listRow is one monitor in a listing; a monitor whose record cannot be
// read or trusted (state_corrupt, state_unsafe) is listed with its error,
// naming the path, instead of breaking the listing. Such a row is listed
// whatever run is selected: the run it belongs to is in the record that
// could not be read.
type listRow struct {
	*monitorView
	MonitorID string              `json:"monitor_id,omitempty"`
	Error     *protocol.ErrorBody `json:"error,omitempty"`
}

type listResponse struct {
	RunID    string    `json:"run_id,omitempty"`
	Monitors []listRow `json:"monitors"`
	// startRefused says, for a person's view of an empty list, why a
	// start in the selected run would be refused, and what to do about
	// it; empty when it would not be. The JSON has no field for it: a
	// program is told by the start itself.
	startRefused string
}

func newListCmd(env *Env, g *globals) *cobra.Command {
	var opts listOptions
	c := &cobra.Command{
		Use:   "list [--all-runs]",
		Short: "List the monitors of the run, oldest first",
		Long: `List one row per monitor of the selected run (or of every run with
--all-runs), in the order they started: status, name, argv and age. A
table when stdout is a terminal or with -o text (or --format table), JSON
otherwise. The table shows each id as its shortest unique start, which
every command takes back in place of the id.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if !flagsUsed(c) {
				if err := readOptionalRequest(env, c, &opts); err != nil {
					return err
				}
			}
			return runList(env, g, opts)
		},
	}
	c.Flags().BoolVar(&opts.AllRuns, "all-runs", false, "list the monitors of every run")
	return c
}

func runList(env *Env, g *globals, opts listOptions) error {
	dir, err := lookState(env)
	if err != nil {
		return err
	}
	resp := listResponse{Monitors: []listRow{}}
	if !opts.AllRuns {
		if resp.RunID, err = selectedRun(env, g); err != nil {
			return err
		}
		// A run id mistyped in PROCMON_RUN lists no monitors, as if none
		// ran: say that there is no such run, as every other command does.
		// The default run is made by the first start. A run.json that
		// cannot be trusted does not hide the monitors, whose ids a person
		// needs to settle them.
		if resp.RunID != state.DefaultRun {
			if _, err := dir.LoadRun(resp.RunID); protocol.HasCode(err, protocol.CodeUnknownRun) {
				return err
			}
		}
	}
	ids, err := dir.MonitorIDs()
	if err != nil {
		return err
	}
	// A row shows a status only where the monitor's run grants
	// process_status, as status of that monitor would: a run whose record
	// cannot be read does not hide its monitors, whose ids a person needs
	// to settle them.
	runs := map[string]*state.Run{}
	showsStatus := func(runID string) error {
		run, seen := runs[runID]
		if !seen {
			run, _ = dir.LoadRun(runID)
			runs[runID] = run
		}
		if run == nil {
			return nil
		}
		return run.GrantsTool(state.StatusTool) // an error of its own for each row
	}
	type observedRow struct {
		view *monitorView
		o    *proc.Observation
	}
	var observed []observedRow
	for _, id := range ids {
		o, err := proc.Observe(dir, id)
		if protocol.HasCode(err, protocol.CodeUnknownMonitor) {
			// A start in progress, or one abandoned before it spawned
			// anything, whose directory goes now.
			proc.SweepAbandoned(dir, id)
			continue
		}
		if err != nil {
			resp.Monitors = append(resp.Monitors, errorRow(id, err))
			continue
		}
		if !opts.AllRuns && o.Monitor.RunID != resp.RunID {
			continue
		}
		if err := showsStatus(o.Monitor.RunID); err != nil {
			resp.Monitors = append(resp.Monitors, errorRow(id, protocol.AsError(err).With("monitor_id", id)))
			continue
		}
		row := listRow{MonitorID: id, monitorView: &monitorView{}}
		resp.Monitors = append(resp.Monitors, row)
		observed = append(observed, observedRow{row.monitorView, o})
	}
	// The views are made all at once: each running monitor's guardian is
	// asked for its live counters, and one that does not answer costs its
	// timeout once, not once per row.
	var wg sync.WaitGroup
	for _, r := range observed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			*r.view = observedView(dir, r.o)
		}()
	}
	wg.Wait()
	// Oldest first, as people read a listing; a row that could not be
	// read has no start time and comes last.
	sort.SliceStable(resp.Monitors, func(i, j int) bool {
		a, b := resp.Monitors[i], resp.Monitors[j]
		if (a.Error == nil) != (b.Error == nil) {
			return a.Error == nil
		}
		return a.Error == nil && a.StartedAtMs < b.StartedAtMs
	})
	if g.human && len(resp.Monitors) == 0 {
		// A run named in PROCMON_RUN that is no run (under --all-runs)
		// has nothing to say here.
		if runID, err := selectedRun(env, g); err == nil {
			resp.startRefused = startRefused(env, dir, runID)
		}
	}
	return respond(env, g, resp)
}

// startRefused is why a start in run runID would be refused before it
// ran anything (monitors disabled, a run that does not grant start, has
// ended, or has used its slots), advised as that refusal is (see
// advise); "" when it would not be, or when the run cannot be read, which
// a start would say. The default run is made by the first start, while
// monitors are on.
func startRefused(env *Env, dir *state.Dir, runID string) string {
	run, err := dir.LoadRun(runID)
	switch {
	case err == nil:
		// As a start is admitted: an owner found gone ends the run, as
		// its watchers would.
		if _, err = dir.Admit(runID, state.StartTool, env.Now().UnixMilli(), proc.OwnerAlive); err == nil {
			if limit := run.Policy.Sandbox.CommandLimit; limit != nil {
				if used, uerr := dir.BudgetUsed(runID); uerr == nil && used >= *limit {
					err = state.BudgetExhausted(runID, used, *limit)
				}
			}
		}
	case runID == state.DefaultRun && protocol.HasCode(err, protocol.CodeUnknownRun):
		_, err = dir.EnabledSettings()
	default:
		return ""
	}
	if err == nil {
		return ""
	}
	refused := protocol.AsError(err)
	refused = &protocol.Error{Code: refused.Code, Message: refused.Message, Details: refused.Details}
	advise(refused)
	return refused.Message
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
