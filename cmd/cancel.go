//go:build linux

package cmd

import (
	"github.com/spf13/cobra"

	"procmon/internal/proc"
	"procmon/internal/protocol"
)

// drainRequest is the request of cancel and reconcile: a monitor and the
// grace between SIGTERM and SIGKILL.
type drainRequest struct {
	MonitorID    string `json:"monitor_id"`
	GraceSeconds *int64 `json:"grace_seconds,omitempty"`
}

// readDrainRequest builds a drainRequest from the arguments and --grace,
// or from stdin when there are none, and checks it.
func readDrainRequest(env *Env, c *cobra.Command, args []string, grace int64) (id string, graceMs int64, err error) {
	var req drainRequest
	if len(args) == 1 {
		req.MonitorID = args[0]
		if c.Flags().Changed("grace") {
			req.GraceSeconds = &grace
		}
	} else if err := readRequest(env, c, &req); err != nil {
		return "", 0, err
	}
	if req.MonitorID == "" {
		return "", 0, protocol.Errorf(protocol.CodeInvalidRequest, `field "monitor_id" is required`).With("field", "monitor_id")
	}
	graceMs, err = graceMillis(req.GraceSeconds)
	return req.MonitorID, graceMs, err
}

// addGraceFlag adds --grace to a draining command.
func addGraceFlag(c *cobra.Command, grace *int64) {
	c.Flags().Int64Var(grace, "grace", proc.DefaultDrainGraceMs/1000, "seconds between SIGTERM and SIGKILL")
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
			id, graceMs, err := readDrainRequest(env, c, args, grace)
			if err != nil {
				return err
			}
			v, err := runCancel(env, id, graceMs)
			if err != nil {
				return err
			}
			return respond(env, g, v)
		},
	}
	addGraceFlag(c, &grace)
	return c
}

func runCancel(env *Env, id string, graceMs int64) (*receiptView, error) {
	dir, err := openState(env)
	if err != nil {
		return nil, err
	}
	m, err := dir.LoadMonitor(id)
	if err != nil {
		return nil, err
	}
	if err := admitMonitor(env, dir, m, "cancel_process"); err != nil {
		return nil, err
	}
	o, err := proc.Cancel(dir, id, graceMs, "cancel")
	if err != nil {
		return nil, err
	}
	v := receiptOf(o)
	return &v, nil
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
