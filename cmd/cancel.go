//go:build linux

package cmd

import (
	"fmt"
	"sort"
	"sync"

	"github.com/spf13/cobra"

	"procmon/internal/proc"
	"procmon/internal/protocol"
	"procmon/internal/state"
)

// drainRequest is the request of cancel: a monitor and the grace between
// SIGTERM and SIGKILL. (reconcile gives no grace: see reconcileRequest.)
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
	} else if err := flagForStdin(c, "grace", "grace_seconds"); err != nil {
		return "", 0, err
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
	secondsVar(c, grace, "grace", proc.DefaultDrainGraceMs/1000, "time between SIGTERM and SIGKILL (30s, 2m; a plain number is seconds)")
}

func newCancelCmd(env *Env, g *globals) *cobra.Command {
	var grace int64
	var name string
	var all bool
	c := &cobra.Command{
		Use:   "cancel [MONITOR_ID | NAME... | --name NAME | --all] [--grace DURATION]",
		Short: "Stop a service and return its terminal receipt",
		Long: `Drain the service's process group: SIGTERM (with SIGCONT), the grace
period (default 5 s), SIGKILL to whatever remains, reaping, verification
that nothing of the group or its escaped descendants is left, and the
output read to its end. Returns the receipt. On a monitor that has already
ended it returns the existing receipt; other monitors keep running. A
guardian that does not answer (stopped, wedged) is waited for only while
its ownership window holds; then the monitor needs reconciliation, and
cancel says so without signalling anything. Ctrl-C (or Ctrl-\), SIGTERM
or SIGHUP ends the waiting with the error wait_interrupted and exit
status 130; a guardian finishes a drain it has begun.

  procmon cancel m_3kq9x2ab           # an id, or any unique start of one
  procmon cancel web --grace 30s      # the run's live monitor named web
  procmon cancel m_3kq9 m_7hd2 api    # several at once, in parallel
  procmon cancel --all                # every live monitor of the run

An argument that starts with m_ is an id, any other a name (as --name
takes it). Several monitors (or --all) answer {"monitors": [receipts...], "errors":
[{"monitor_id", "error"}...]}; the exit status is then that of the first
error, or 0. Every one given is found first: if one names no monitor,
none is cancelled, and the error says so.`,
		ValidArgsFunction: completeLiveMonitorIDs(env),
		RunE: func(c *cobra.Command, args []string) error {
			if all || len(args) > 1 || (name != "" && len(args) > 0) {
				return cancelMany(env, g, c, args, name, all, grace)
			}
			args, err := monitorArgs(env, g, args, name)
			if err != nil {
				return err
			}
			id, graceMs, err := readDrainRequest(env, c, args, grace)
			if err != nil {
				return err
			}
			v, err := untilInterrupted(env, "cancel of "+id, "procmon status "+id, func() (*receiptView, error) {
				return runCancel(env, id, graceMs)
			})
			if err != nil {
				return err
			}
			return respond(env, g, v)
		},
	}
	addGraceFlag(c, &grace)
	addNameFlag(c, env, &name)
	c.Flags().BoolVar(&all, "all", false, "cancel every live monitor of the run")
	return c
}

// cancelManyResponse answers a cancel of several monitors.
type cancelManyResponse struct {
	Monitors []receiptView `json:"monitors"`
	Errors   []listRow     `json:"errors,omitempty"`
}

// cancelMany cancels several monitors at once (each drain takes its
// grace, so they run in parallel): those named, or with --all every
// monitor of the run without a receipt.
func cancelMany(env *Env, g *globals, c *cobra.Command, args []string, name string, all bool, grace int64) error {
	if all && (len(args) > 0 || name != "") {
		return protocol.Errorf(protocol.CodeInvalidRequest, "--all cancels every live monitor of the run: give it no monitors and no --name").With("field", "all")
	}
	var graceSeconds *int64
	if c.Flags().Changed("grace") {
		graceSeconds = &grace
	}
	graceMs, err := graceMillis(graceSeconds)
	if err != nil {
		return err
	}
	ids, err := monitorArgs(env, g, args, name)
	if err == nil && len(ids) > 0 {
		// An exact id is taken as it is written: it must name a monitor.
		err = monitorsExist(env, ids)
	}
	if err != nil {
		// Each is found before any is cancelled: say so, or a person who
		// sees the same exit status as for one monitor that failed to
		// drain may take the others for stopped.
		pe := protocol.AsError(err)
		return &protocol.Error{Code: pe.Code, Details: pe.Details,
			Message: fmt.Sprintf("%s; none of the %d monitors given was cancelled", pe.Message, len(args)+min(len(name), 1))}
	}
	if all {
		if ids, err = liveMonitorsOfRun(env, g); err != nil {
			return err
		}
	}
	resp, err := untilInterrupted(env, fmt.Sprintf("cancel of %d monitors", len(ids)), "procmon list", func() (*cancelManyResponse, error) {
		resp := &cancelManyResponse{Monitors: []receiptView{}}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := runCancel(env, id, graceMs)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					resp.Errors = append(resp.Errors, errorRow(id, err))
					return
				}
				resp.Monitors = append(resp.Monitors, *v)
			}()
		}
		wg.Wait()
		return resp, nil
	})
	if err != nil {
		return err
	}
	order := map[string]int{}
	for i, id := range ids {
		order[id] = i
	}
	sort.Slice(resp.Monitors, func(i, j int) bool { return order[resp.Monitors[i].MonitorID] < order[resp.Monitors[j].MonitorID] })
	sort.Slice(resp.Errors, func(i, j int) bool { return order[resp.Errors[i].MonitorID] < order[resp.Errors[j].MonitorID] })
	if len(resp.Errors) > 0 {
		g.exitStatus = resp.Errors[0].Error.Code.ExitStatus()
	}
	return respond(env, g, resp)
}

// monitorsExist refuses the first of ids that names no monitor
// (unknown_monitor); a monitor whose record cannot be read is left to
// its cancel, which says why.
func monitorsExist(env *Env, ids []string) error {
	dir, err := lookState(env)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := dir.LoadMonitor(id); protocol.HasCode(err, protocol.CodeUnknownMonitor) || protocol.HasCode(err, protocol.CodeInvalidRequest) {
			return err
		}
	}
	return nil
}

// liveMonitorsOfRun lists the selected run's monitors that have no
// receipt, in the order they started.
func liveMonitorsOfRun(env *Env, g *globals) ([]string, error) {
	runID, err := selectedRun(env, g)
	if err != nil {
		return nil, err
	}
	dir, err := lookState(env)
	if err != nil {
		return nil, err
	}
	ids, err := dir.MonitorIDs()
	if err != nil {
		return nil, err
	}
	var live []*state.Monitor
	for _, id := range ids {
		m, err := dir.LoadMonitor(id)
		if err == nil && m.RunID == runID && m.Receipt == nil {
			live = append(live, m)
		}
	}
	sort.Slice(live, func(i, j int) bool { return live[i].StartedAtMs < live[j].StartedAtMs })
	out := make([]string, len(live))
	for i, m := range live {
		out[i] = m.MonitorID
	}
	return out, nil
}

func runCancel(env *Env, id string, graceMs int64) (*receiptView, error) {
	dir, err := lookState(env)
	if err != nil {
		return nil, err
	}
	o, err := proc.Observe(dir, id)
	if err != nil {
		return nil, err
	}
	if err := dir.AdmitFor(o.Monitor, state.CancelTool, env.Now().UnixMilli()); err != nil {
		return nil, err
	}
	endedBefore := o.Terminal()
	o, err = proc.CancelObserved(dir, o, graceMs, "cancel")
	if err != nil {
		return nil, err
	}
	v := receiptOf(o)
	v.endedBefore = endedBefore
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
