//go:build linux

package cmd

import (
	"github.com/spf13/cobra"

	"procmon/internal/proc"
	"procmon/internal/protocol"
)

// reconcileRequest is the request of reconcile: the monitor alone. What is
// left is killed without a grace (see proc.Reconcile), so there is none to
// give.
type reconcileRequest struct {
	MonitorID string `json:"monitor_id"`
}

func newReconcileCmd(env *Env, g *globals) *cobra.Command {
	var name string
	c := &cobra.Command{
		Use:   "reconcile [MONITOR_ID | NAME | --name NAME]",
		Short: "Settle a monitor whose guardian was lost",
		Long: `For a needs_reconciliation monitor only: if the recorded group can still be
proven to be the one procmon started (this boot, and no other process holds
the recorded pid), kill what is left of it and write a receipt with custody
"reconciled". What is left of it is every process of the lost guardian's
session (which holds the service's group, and which no process outside
can join) started no earlier than the guardian, every process of the
sessions the guardian recorded that the service's descendants made (while
a process it recorded in one is still there), the guardian itself when it
is alive past its ownership window, and every descendant of those:
nothing else is ever signalled. If the group cannot be proven,
kill nothing and write custody "unverified". Never shows an exit code it
did not see; never restarts or adopts the service.

There is no grace, as cancel gives: each of those processes is stopped
(SIGSTOP) before any is killed (SIGKILL). The service's custodian is
gone, so a process let run (a SIGTERM handler) could fork a child that
leaves its session, and end, leaving a process that nothing names.`,
		Args:              atMostOne("monitor_id", "monitor id or name"),
		ValidArgsFunction: completeMonitorIDs(env),
		RunE: func(c *cobra.Command, args []string) error {
			if c.Flags().Changed("grace") {
				return errNoGrace()
			}
			var req reconcileRequest
			if len(args) == 1 || name != "" {
				id, err := oneMonitorArg(env, g, args, name)
				if err != nil {
					return err
				}
				req.MonitorID = id
			} else if err := readRequest(env, c, &req); err != nil {
				if protocol.AsError(err).Details["field"] == "grace_seconds" {
					return errNoGrace()
				}
				return err
			}
			if req.MonitorID == "" {
				return protocol.Errorf(protocol.CodeInvalidRequest, `field "monitor_id" is required`).With("field", "monitor_id")
			}
			dir, err := lookState(env)
			if err != nil {
				return err
			}
			m, err := proc.Reconcile(dir, req.MonitorID)
			if err != nil {
				return err
			}
			return respond(env, g, receiptView{MonitorID: m.MonitorID, Receipt: m.Receipt, name: m.Name})
		},
	}
	addNameFlag(c, env, &name)
	// Refused with why, for a caller written when reconcile had a grace.
	c.Flags().String("grace", "", "")
	c.Flags().MarkHidden("grace")
	return c
}

// errNoGrace refuses the grace reconcile once took.
func errNoGrace() error {
	return protocol.Errorf(protocol.CodeInvalidRequest, "reconcile takes no grace: with the guardian gone, what is left is stopped, then killed, so that no signal handler runs (see procmon reconcile --help)").With("field", "grace_seconds")
}
