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
		return nil, protocol.Errorf(protocol.CodeInvalidRequest, "monitor %s is %s, not needs_reconciliation", id, o.Status).With("monitor_id", id).With("status", o.Status)
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
		var left []Member
		var unproven int
		r.Signals, left, unproven = stopLost(m.GuardianPID, m.GuardianStartTicks, m.EscapedSessions, graceMs)
		r.GroupEmptyVerified = len(left) == 0
		for _, p := range left {
			r.KillUnconfirmed = append(r.KillUnconfirmed, p.PID)
		}
		sort.Ints(r.KillUnconfirmed)
		// Descendants that left the guardian's session (setsid) went out
		// of sight with the guardian: the sessions it recorded are
		// stopped, but one made since its last look cannot be seen.
		r.Containment = state.ContainmentGroupOnly
		if !r.GroupEmptyVerified || unproven > 0 || m.EscapedSessionsTruncated {
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

// stopLost stops what is left of a lost guardian's session and of the
// sessions it recorded (see LostMembers and LostEscapees): SIGTERM with
// SIGCONT, the grace, SIGKILL, each wait bounded. It returns the signals
// sent, what is still there, and how many recorded sessions still have
// processes that could not be proven ours.
func stopLost(guardianPID int, guardianTicks uint64, escaped []state.EscapedSession, graceMs int64) ([]state.SignalEvent, []Member, int) {
	signals := []state.SignalEvent{}
	// The sessions are proven once, before anything is signalled: their
	// witnesses may be among what is stopped.
	proven, unproven := provenSessions(escaped)
	lost := func() []Member {
		out := LostMembers(guardianPID, guardianTicks)
		for _, e := range proven {
			out = append(out, provenMembers(e)...)
		}
		return out
	}
	members := lost()
	if len(members) > 0 {
		send := func(sig unix.Signal) {
			n := 0
			for _, p := range members {
				if signalExact(procStat{pid: p.PID, startTicks: p.StartTicks}, sig) {
					n++
				}
			}
			signals = append(signals, state.SignalEvent{Signal: unix.SignalName(sig), AtMs: nowMs(), Targets: n})
		}
		send(unix.SIGTERM)
		send(unix.SIGCONT)
		members = waitGone(members, time.Now().Add(time.Duration(graceMs)*time.Millisecond))
		if len(members) > 0 {
			send(unix.SIGKILL)
			waitGone(members, time.Now().Add(killBoundMs*time.Millisecond))
		}
	}
	return signals, lost(), unproven
}

// provable reports whether what is left of a monitor can be proven to be
// what its guardian started: in this boot, by a guardian that was
// recorded, and, once the service was spawned, with no other process now
// holding the service's pid (the record's evidence would then name
// someone else's group).
func provable(m *state.Monitor) bool {
	if m.BootID != state.BootID() || m.GuardianPID <= 1 {
		return false
	}
	if m.PGID <= 1 || m.PID != m.PGID {
		return false
	}
	s, err := readStat(m.PID)
	return err != nil || s.startTicks == m.ChildStartTicks
}

// SweepAbandoned settles the directory of monitor id when it holds no
// record and provably never will: the guardian it names (see state.Maker)
// is gone, or it was made before the machine last booted. What is left of
// that guardian's session (it may have spawned before it died), and of
// the sessions a foreground command's trace names, is stopped first; the
// directory goes once nothing is, and stays, naming the guardian, while
// something may be. It reports whether it went.
func SweepAbandoned(dir *state.Dir, id string) bool {
	if _, err := dir.LoadMonitor(id); !protocol.HasCode(err, protocol.CodeUnknownMonitor) {
		return false
	}
	if mk, err := dir.LoadMaker(id); err == nil {
		if mk.BootID == state.BootID() {
			if Matches(mk.GuardianPID, mk.GuardianStartTicks) {
				return false // a start in progress
			}
			if _, err := dir.LoadMonitor(id); !protocol.HasCode(err, protocol.CodeUnknownMonitor) {
				return false // it recorded the monitor before it died
			}
			// A foreground command's trace also names the sessions its
			// descendants made (see traceEscapes): the trace stays while
			// one of them may be left, and while that cannot be told.
			var escaped []state.EscapedSession
			if mk.Session != 0 {
				e, err := dir.LoadTraceEscapes(id)
				if err != nil {
					return false
				}
				escaped = e.EscapedSessions
			}
			sid, ticks := mk.SessionOf()
			if _, left, unproven := stopLost(sid, ticks, escaped, DefaultDrainGraceMs); len(left) > 0 || unproven > 0 {
				return false
			}
		}
	} else if !state.MadeBeforeBoot(dir.MonitorDir(id)) {
		return false // no maker to ask, and perhaps a start in progress
	}
	return dir.RemoveMonitorDir(id) == nil
}
