//go:build linux

package cmd

import (
	"github.com/spf13/cobra"

	"procmon/internal/proc"
	"procmon/internal/protocol"
)

type cancelRequest struct {
	MonitorID    string `json:"monitor_id"`
	GraceSeconds *int64 `json:"grace_seconds,omitempty"`
}

func newCancelCmd(env *Env, g *globals) *cobra.Command {
	var grace int64
	c := &cobra.Command{
		Use:   "cancel MONITOR_ID [--grace SECONDS]",
		Short: "Stop a service and return its terminal receipt",
		Long: `Drain the service's process group: SIGTERM (with SIGCONT), the grace
period (default 5 s), SIGKILL to whatever remains, reaping, verification
that nothing of the group or its escaped descendants is left, and the
output read to its end. Returns the receipt. On a monitor that has already
ended it returns the existing receipt; other monitors keep running.`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeMonitorIDs(env),
		RunE: func(c *cobra.Command, args []string) error {
			var req cancelRequest
			if len(args) == 1 {
				req.MonitorID = args[0]
				if c.Flags().Changed("grace") {
					req.GraceSeconds = &grace
				}
			} else if err := readRequest(env, c, &req); err != nil {
				return err
			}
			v, err := runCancel(env, req)
			if err != nil {
				return err
			}
			return respond(env, g, v)
		},
	}
	c.Flags().Int64Var(&grace, "grace", proc.DefaultDrainGraceMs/1000, "seconds between SIGTERM and SIGKILL")
	return c
}

func runCancel(env *Env, req cancelRequest) (*receiptView, error) {
	if req.MonitorID == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidRequest, `field "monitor_id" is required`).With("field", "monitor_id")
	}
	graceMs, err := graceMillis(req.GraceSeconds)
	if err != nil {
		return nil, err
	}
	dir, err := openState(env)
	if err != nil {
		return nil, err
	}
	m, err := dir.LoadMonitor(req.MonitorID)
	if err != nil {
		return nil, err
	}
	if err := admitMonitor(env, dir, m, "cancel_process"); err != nil {
		return nil, err
	}
	m, err = proc.Cancel(dir, req.MonitorID, graceMs, "cancel")
	if err != nil {
		return nil, err
	}
	return &receiptView{MonitorID: m.MonitorID, Receipt: m.Receipt}, nil
}
