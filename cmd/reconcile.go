//go:build linux

package cmd

import (
	"github.com/spf13/cobra"

	"procmon/internal/proc"
	"procmon/internal/protocol"
)

type reconcileRequest struct {
	MonitorID    string `json:"monitor_id"`
	GraceSeconds *int64 `json:"grace_seconds,omitempty"`
}

func newReconcileCmd(env *Env, g *globals) *cobra.Command {
	var grace int64
	c := &cobra.Command{
		Use:   "reconcile MONITOR_ID [--grace SECONDS]",
		Short: "Settle a monitor whose guardian was lost",
		Long: `For a needs_reconciliation monitor only: if the recorded group can still be
proven to be the one procmon started (this boot, and no other process holds
the recorded pid), drain what is left of it (SIGTERM, grace, SIGKILL) and
write a receipt with custody "reconciled"; if it cannot be proven, kill
nothing and write custody "unverified". Never shows an exit code it did not
see; never restarts or adopts the service.`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeMonitorIDs(env),
		RunE: func(c *cobra.Command, args []string) error {
			var req reconcileRequest
			if len(args) == 1 {
				req.MonitorID = args[0]
				if c.Flags().Changed("grace") {
					req.GraceSeconds = &grace
				}
			} else if err := readRequest(env, c, &req); err != nil {
				return err
			}
			graceMs, err := graceMillis(req.GraceSeconds)
			if err != nil {
				return err
			}
			if req.MonitorID == "" {
				return protocol.Errorf(protocol.CodeInvalidRequest, `field "monitor_id" is required`).With("field", "monitor_id")
			}
			dir, err := openState(env)
			if err != nil {
				return err
			}
			m, err := proc.Reconcile(dir, req.MonitorID, graceMs)
			if err != nil {
				return err
			}
			return respond(env, g, receiptView{MonitorID: m.MonitorID, Receipt: m.Receipt})
		},
	}
	c.Flags().Int64Var(&grace, "grace", proc.DefaultDrainGraceMs/1000, "seconds between SIGTERM and SIGKILL")
	return c
}

// graceMillis validates a grace period in seconds (default 5).
func graceMillis(seconds *int64) (int64, error) {
	if seconds == nil {
		return proc.DefaultDrainGraceMs, nil
	}
	if *seconds < 0 || *seconds > 3600 {
		return 0, protocol.Errorf(protocol.CodeInvalidRequest, `field "grace_seconds" must be between 0 and 3600`).With("field", "grace_seconds")
	}
	return *seconds * 1000, nil
}
