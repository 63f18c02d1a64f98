package proc

import (
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

// Reconcile settles a monitor that needs reconciliation: when custody of
// what is left of its group can still be proven, it drains those members
// and writes a receipt with custody "reconciled"; when it cannot, it kills
// nothing and writes custody "unverified". It never restarts or adopts a
// service, and never shows an exit code it did not see.
func Reconcile(dir *state.Dir, id string, graceMs int64) (*state.Monitor, error) {
	o, err := Observe(dir, id)
	if err != nil {
		return nil, err
	}
	if o.Terminal() {
		return o.Monitor, nil
	}
	if o.Status != state.StatusNeedsReconciliation {
		return nil, protocol.Errorf(protocol.CodeInvalidRequest, "monitor %s is %s, not needs_reconciliation; stop it with: procmon cancel %s", id, o.Status, id).With("monitor_id", id).With("status", o.Status)
	}
	m := o.Monitor
	// A guardian that is alive but stopped renewing has lost custody; it is
	// ours (pid and start time, in this boot: across a reboot the numbers
	// name nobody), so it is stopped before anything else.
	if m.BootID == state.BootID() && Matches(m.GuardianPID, m.GuardianStartTicks) {
		signalExact(procStat{pid: m.GuardianPID, startTicks: m.GuardianStartTicks}, unix.SIGKILL)
		waitGone([]Member{{m.GuardianPID, m.GuardianStartTicks}}, time.Now().Add(killBoundMs*time.Millisecond))
	}
	r := &state.Receipt{
		Status:  state.StatusCancelled,
		Signals: []state.SignalEvent{},
	}
	if provable(m) {
		r.Reason, r.Custody = "reconciled", state.CustodyReconciled
		members := GroupMembers(m.PGID, m.GuardianPID, m.ChildStartTicks)
		if len(members) > 0 {
			send := func(sig unix.Signal) {
				n := 0
				for _, p := range members {
					if signalExact(procStat{pid: p.PID, startTicks: p.StartTicks}, sig) {
						n++
					}
				}
				r.Signals = append(r.Signals, state.SignalEvent{Signal: unix.SignalName(sig), AtMs: nowMs(), Targets: n})
			}
			send(unix.SIGTERM)
			send(unix.SIGCONT)
			members = waitGone(members, time.Now().Add(time.Duration(graceMs)*time.Millisecond))
			if len(members) > 0 {
				send(unix.SIGKILL)
				members = waitGone(members, time.Now().Add(killBoundMs*time.Millisecond))
			}
		}
		left := GroupMembers(m.PGID, m.GuardianPID, m.ChildStartTicks)
		r.GroupEmptyVerified = len(left) == 0
		for _, p := range left {
			r.KillUnconfirmed = append(r.KillUnconfirmed, p.PID)
		}
		sort.Ints(r.KillUnconfirmed)
		// Descendants that left the group went out of sight with the
		// guardian: only the group can be verified.
		r.Containment = state.ContainmentGroupOnly
		if !r.GroupEmptyVerified {
			r.Containment = state.ContainmentIncomplete
		}
	} else {
		r.Reason, r.Custody = "reconcile_unverified", state.CustodyUnverified
		r.Containment = state.ContainmentIncomplete
	}
	r.FinishedAtMs = nowMs()
	return dir.UpdateMonitor(id, func(stored *state.Monitor) error {
		if stored.Receipt != nil {
			return nil // a receipt that arrived meanwhile stands
		}
		stored.Phase = state.PhaseTerminal
		stored.Receipt = r
		return nil
	})
}

// provable reports whether the recorded group can still be proven to be
// the one the guardian started: in this boot, and with no other process
// now holding the recorded pid.
func provable(m *state.Monitor) bool {
	if m.BootID != state.BootID() || m.PGID <= 1 || m.PID != m.PGID {
		return false
	}
	s, err := readStat(m.PID)
	if err != nil {
		return true // the leader is gone and its pid not reused
	}
	return s.startTicks == m.ChildStartTicks
}

// waitGone waits until none of the members is alive or the deadline
// passes, and returns those still alive.
func waitGone(members []Member, deadline time.Time) []Member {
	interval := time.Millisecond
	for {
		var alive []Member
		for _, p := range members {
			if Matches(p.PID, p.StartTicks) {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 || time.Now().After(deadline) {
			return alive
		}
		time.Sleep(min(interval, time.Until(deadline)))
		interval = min(interval*2, 50*time.Millisecond)
		members = alive
	}
}
