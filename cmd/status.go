//go:build linux

package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"procmon/internal/proc"
	"procmon/internal/protocol"
	"procmon/internal/state"
)

type statusRequest struct {
	MonitorID *string `json:"monitor_id,omitempty"`
}

func newStatusCmd(env *Env, g *globals) *cobra.Command {
	var all bool
	var name string
	c := &cobra.Command{
		Use:   "status [MONITOR_ID | NAME | --name NAME]",
		Short: "Show a monitor's status, or every monitor of the run",
		Long: `Show a monitor's record and status: running, settling, exited, cancelled,
timed_out, output_limit or needs_reconciliation. An exit code is shown only
with a verified receipt. Without an id, lists the run's monitors.

By hand a monitor may be named by its id or any unique start of it
(m_3kq9, as list shows it), or by its name, as the argument or with
--name: the run's live monitor started with that name, or when none is
live the one started last. Two live ones, or a live one and one started
after it that has ended, are refused as ambiguous, listing both. An
argument that starts with m_ is an id; any other is a name.

  procmon status m_3kq9
  procmon status web`,
		Args:              atMostOne("monitor_id", "monitor id or name"),
		ValidArgsFunction: completeMonitorIDs(env),
		RunE: func(c *cobra.Command, args []string) error {
			var req statusRequest
			switch {
			case (len(args) == 1 || name != "") && all:
				// Said, not dropped: one monitor is shown whatever its
				// run, and a name is looked up in the selected run.
				return protocol.Errorf(protocol.CodeInvalidRequest, "--all-runs lists the monitors of every run: give it without a monitor, or give the monitor without it").With("field", "all_runs")
			case len(args) == 1 || name != "":
				id, err := oneMonitorArg(env, g, args, name)
				if err != nil {
					return err
				}
				req.MonitorID = &id
			case all:
			default:
				// An empty stdin (cron, ssh, a CI step) is an empty
				// request, which lists, as at a terminal.
				if err := readOptionalRequest(env, c, &req); err != nil {
					return err
				}
			}
			if req.MonitorID == nil {
				return runList(env, g, listOptions{AllRuns: all})
			}
			v, err := runStatus(env, *req.MonitorID)
			if err != nil {
				return err
			}
			return respond(env, g, v)
		},
	}
	c.Flags().BoolVar(&all, "all-runs", false, "without an id: list the monitors of every run")
	addNameFlag(c, env, &name)
	return c
}

func runStatus(env *Env, id string) (*monitorView, error) {
	dir, o, err := observeFor(env, id, state.StatusTool)
	if err != nil {
		return nil, err
	}
	v := observedView(dir, o)
	return &v, nil
}

// observedView is what status and list show of an observed monitor: its
// record and status, with the guardian's live byte counters while it runs
// (the record's are as fresh as its last heartbeat only). Both commands
// make their views here, so they never disagree.
func observedView(dir *state.Dir, o *proc.Observation) monitorView {
	if e := o.LiveCounters(context.Background(), dir).StateError; e != "" {
		o.StateError = e
	}
	return viewOf(o)
}
