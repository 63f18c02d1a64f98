//go:build linux

package cmd

import (
	"github.com/spf13/cobra"

	"procmon/internal/proc"
)

func newReconcileCmd(env *Env, g *globals) *cobra.Command {
	var grace int64
	var name string
	c := &cobra.Command{
		Use:   "reconcile [MONITOR_ID | NAME | --name NAME] [--grace DURATION]",
		Short: "Settle a monitor whose guardian was lost",
		Long: `For a needs_reconciliation monitor only: if the recorded group can still be
proven to be the one procmon started (this boot, and no other process holds
the recorded pid), drain what is left of it (SIGTERM, grace, SIGKILL) and
write a receipt with custody "reconciled". What is left of it is every
process with the recorded group id, in the lost guardian's session,
started no earlier than the service: nothing else is ever signalled. If
the group cannot be proven, kill nothing and write custody "unverified".
Never shows an exit code it did not see; never restarts or adopts the
service.`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeMonitorIDs(env),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 || name != "" {
				id, err := oneMonitorArg(env, g, args, name)
				if err != nil {
					return err
				}
				args = []string{id}
			}
			id, graceMs, err := readDrainRequest(env, c, args, grace)
			if err != nil {
				return err
			}
			dir, err := openState(env)
			if err != nil {
				return err
			}
			m, err := proc.Reconcile(dir, id, graceMs)
			if err != nil {
				return err
			}
			return respond(env, g, receiptView{MonitorID: m.MonitorID, Receipt: m.Receipt})
		},
	}
	addGraceFlag(c, &grace)
	addNameFlag(c, env, &name)
	return c
}
