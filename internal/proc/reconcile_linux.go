package proc

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

// Reconcile settles a monitor that needs reconciliation: when custody of
// what is left of its group can still be proven, it kills what is left
// (see stopLost) and writes a receipt with custody "reconciled"; when it
// cannot, it kills nothing and writes custody "unverified". It never
// restarts or adopts a service, and never shows an exit code it did not
// see.
func Reconcile(dir *state.Dir, id string) (*state.Monitor, error) {
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
	r := &state.Receipt{
		Status:  state.StatusCancelled,
		Signals: []state.SignalEvent{},
	}
	// A process alive at the guardian's pid and start time is that
	// process for certain, but the numbers are the record's: one that
	// does not run as this monitor's guardian was named by a record
	// written by hand, and neither it nor its session is ours to signal.
	impostor := m.BootID == state.BootID() && Matches(m.GuardianPID, m.GuardianStartTicks) && !runsGuardianOf(m.GuardianPID, m.MonitorID)
	if !impostor && provable(m) {
		// A guardian that is alive but stopped renewing has lost custody;
		// stopLost stops it with the rest.
		r.Reason, r.Custody = "reconciled", state.CustodyReconciled
		end := stopLost(m.GuardianPID, m.GuardianStartTicks, m.EscapedSessions)
		r.Signals = end.signals
		r.GroupEmptyVerified = end.clean()
		for _, p := range end.left {
			r.KillUnconfirmed = append(r.KillUnconfirmed, p.PID)
		}
		sort.Ints(r.KillUnconfirmed)
		// Descendants that left the guardian's session (setsid) went out
		// of sight with the guardian: the sessions it recorded are
		// stopped, and what is still below a process that is, but a
		// session made since its last look by a process whose parent has
		// ended since cannot be seen.
		r.Containment = state.ContainmentGroupOnly
		if !r.GroupEmptyVerified || end.unproven > 0 || m.EscapedSessionsTruncated {
			r.Containment = state.ContainmentIncomplete
		}
	} else {
		// A guardian alive past its window is still ours (pid and start
		// time, in this boot: across a reboot the numbers name nobody),
		// whatever its group has become.
		if !impostor && m.BootID == state.BootID() && Matches(m.GuardianPID, m.GuardianStartTicks) {
			signalExact(procStat{pid: m.GuardianPID, startTicks: m.GuardianStartTicks}, unix.SIGKILL)
			waitGone([]Member{{m.GuardianPID, m.GuardianStartTicks}}, time.Now().Add(killBoundMs*time.Millisecond))
		}
		r.Reason, r.Custody = "reconcile_unverified", state.CustodyUnverified
		r.Containment = state.ContainmentIncomplete
	}
	r.FinishedAtMs = nowMs()
	stored, err := dir.UpdateMonitor(id, func(stored *state.Monitor) error {
		if stored.Receipt != nil {
			return nil // a receipt that arrived meanwhile stands
		}
		stored.Phase = state.PhaseTerminal
		stored.Receipt = r
		settleCounts(dir, stored)
		return nil
	})
	if err != nil {
		// What was found and signalled is told here or nowhere: a later
		// reconcile finds nothing left, and its receipt says that.
		return nil, protocol.Wrapf(err, "reconcile of %s %s, but could not store its receipt (details.receipt holds it): %w", id, reconciled(r), err).
			With("monitor_id", id).With("receipt", r)
	}
	return stored, nil
}

// reconciled says what a reconcile's receipt r records having done, for
// a person who will not read the receipt itself.
func reconciled(r *state.Receipt) string {
	if r.Custody == state.CustodyUnverified {
		return "could not prove what is left of it procmon's, and signalled none of it"
	}
	var sent []string
	for _, s := range r.Signals {
		sent = append(sent, fmt.Sprintf("%s to %d", s.Signal, s.Targets))
	}
	did := "found nothing left to signal"
	if len(sent) > 0 {
		did = "sent " + strings.Join(sent, ", then ")
	}
	if !r.GroupEmptyVerified {
		return did + "; what is left was not verified gone"
	}
	return did + "; nothing is left"
}

// settleCounts brings the output counts of a monitor whose guardian is
// gone up to its log: the record has the counts of the guardian's last
// save, and what it wrote since is in the log, which logs shows. Without
// this, status said "0 B captured" of a monitor whose logs showed its
// output. What the guardian captured past the log since (past the cap)
// is not known.
func settleCounts(dir *state.Dir, m *state.Monitor) {
	f, err := dir.OpenLog(m)
	if err != nil {
		return // logs refuses it too, and says why
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil {
		m.LogBytes = max(m.LogBytes, fi.Size())
		m.CapturedBytes = max(m.CapturedBytes, m.LogBytes+m.LogBytesLost)
	}
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

// lostEnd is what stopLost did to what a lost guardian left, and what it
// could not do.
type lostEnd struct {
	signals []state.SignalEvent
	// left is what is still there after SIGKILL.
	left []Member
	// unproven counts the recorded sessions that still have processes
	// which could not be proven ours (left alone).
	unproven int
	// outOfSight is set when the freeze reached its bound before it was
	// done: a process it had not stopped may have started others, which
	// nothing names.
	outOfSight bool
}

// clean reports whether nothing is left of what stopLost could prove
// ours, as far as anything can tell.
func (e lostEnd) clean() bool { return len(e.left) == 0 && !e.outOfSight }

// stopLost ends what is left of a lost guardian's session and of the
// sessions it recorded (see LostMembers and LostEscapees), and every
// descendant of theirs. No guardian holds the orphans as subreaper any
// more, so a signal handler let run could leave a process that nothing
// names (it forks, the child calls setsid, the handler exits): nothing
// left is let run again. Each is frozen (see freeze), then all are
// killed, with no grace, and the wait for them is bounded.
//
// leaderPID and leaderTicks name the session's leader: a monitor's
// guardian, or the command an exec trace names (which leads a session of
// its own).
func stopLost(leaderPID int, leaderTicks uint64, escaped []state.EscapedSession) lostEnd {
	end := lostEnd{signals: []state.SignalEvent{}}
	// The sessions are proven once, before anything is signalled: their
	// witnesses may be among what is stopped.
	var proven []state.EscapedSession
	proven, end.unproven = provenSessions(escaped)
	lost := func() []Member {
		out := LostMembers(leaderPID, leaderTicks)
		// A leader still alive is frozen with the rest. A guardian alive
		// past its window is the subreaper of what was orphaned since its
		// last look, which may have left the session: it is found below
		// it (killed first, the guardian handed it to init, out of
		// sight). An exec trace's command leader, left by its custodian,
		// is the command itself.
		if Matches(leaderPID, leaderTicks) {
			out = append(out, Member{leaderPID, leaderTicks})
		}
		for _, e := range proven {
			out = append(out, provenMembers(e)...)
		}
		return out
	}
	f := freeze(lost, freezeRounds, time.Now().Add(freezeBoundMs*time.Millisecond))
	end.outOfSight = f.bounded
	if found := slices.Concat(f.stopped, f.running); len(found) > 0 {
		if len(f.stopped) > 0 {
			end.signals = append(end.signals, state.SignalEvent{Signal: unix.SignalName(unix.SIGSTOP), AtMs: f.atMs, Targets: len(f.stopped)})
		}
		killedAt, n := nowMs(), 0
		for _, p := range found {
			if signalExact(procStat{pid: p.PID, startTicks: p.StartTicks}, unix.SIGKILL) {
				n++
			}
		}
		end.signals = append(end.signals, state.SignalEvent{Signal: unix.SignalName(unix.SIGKILL), AtMs: killedAt, Targets: n})
		end.left = waitGone(found, time.Now().Add(killBoundMs*time.Millisecond))
	}
	for _, p := range lost() {
		if !slices.Contains(end.left, p) {
			end.left = append(end.left, p)
		}
	}
	return end
}

const (
	// freezeBoundMs and freezeRounds bound a freeze, generously: a
	// round stops all that the last look found, so it takes another only
	// for what a process forked before its stop, and each takes a scan of
	// /proc.
	freezeBoundMs = killBoundMs
	freezeRounds  = 1000
)

// frozenSet is what a freeze found.
type frozenSet struct {
	stopped []Member // stopped by SIGSTOP, from atMs on
	atMs    int64
	// running were found but not stopped: the signal was refused, or the
	// freeze reached its bound (bounded) before it came to them.
	running []Member
	bounded bool
}

// freeze stops (SIGSTOP, exactly: pid and start time) every process lost
// lists, then looks again, at what lost lists and at the descendants of
// each process it stopped, and stops what is new, until a look finds
// nothing new. A stopped process forks no more (a fork under way when the
// signal comes is restarted by the kernel), and a child it forked before
// is on its children list even if it left the session, so the closure is
// finite; it is bounded all the same. What a child running until its own
// stop forks and leaves (it exits, its child reparented away) is out of
// sight. It looks at most rounds times, and not after the deadline.
func freeze(lost func() []Member, rounds int, deadline time.Time) frozenSet {
	var f frozenSet
	tried := map[Member]bool{}
	f.atMs = nowMs()
	look := lost()
	for round := 0; ; round++ {
		var fresh []Member
		for _, p := range look {
			if !tried[p] {
				tried[p] = true
				fresh = append(fresh, p)
			}
		}
		if len(fresh) == 0 {
			return f
		}
		if round == rounds || time.Now().After(deadline) {
			f.running, f.bounded = append(f.running, fresh...), true
			return f
		}
		var stopped []Member
		for _, p := range fresh {
			if signalExact(procStat{pid: p.PID, startTicks: p.StartTicks}, unix.SIGSTOP) {
				stopped = append(stopped, p)
			} else if Matches(p.PID, p.StartTicks) {
				f.running = append(f.running, p)
			}
		}
		f.stopped = append(f.stopped, stopped...)
		// Below every process stopped so far, not only this round's: a
		// process not stopped yet may have left a child and exited since
		// the last look, and the child went to the nearest subreaper, a
		// guardian stopped in an earlier round.
		look = lost()
		for _, p := range f.stopped {
			for _, s := range scanDescendants(p.PID) {
				if s.alive() {
					look = append(look, Member{PID: s.pid, StartTicks: s.startTicks})
				}
			}
		}
	}
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

// runsGuardianOf reports whether process pid runs as the guardian of
// monitor id: the command line procmon gives it ("procmon __guardian
// STATE_DIR ID"). One with none to show is taken for what its record
// says, as one gone would be: it has ended since it was found alive, is
// exiting (its memory, which holds the command line, goes before it
// does), or is a zombie. (A kernel thread has none either, and is no
// guardian, but no signal reaches it and no process is of its session.)
func runsGuardianOf(pid int, id string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return true
	}
	args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	return len(args) == 4 && args[1] == GuardianArg && args[3] == id
}

// SweepTracesOf sweeps the traces that procmon exec process pid, started
// at ticks and now gone, left (see traceExec): what their commands left
// is stopped, as the next list would stop it. It returns how many traces
// it found and how many of them are left, their processes perhaps too.
// The caller that saw the exec die unanswered calls it, so that what
// the exec's command started does not run on until someone lists.
func SweepTracesOf(dir *state.Dir, pid int, ticks uint64) (found, left int) {
	ids, _ := dir.MonitorIDs()
	for _, id := range ids {
		mk, err := dir.LoadMaker(id)
		if err != nil || mk.Session == 0 || mk.GuardianPID != pid || mk.GuardianStartTicks != ticks {
			continue
		}
		found++
		if !SweepAbandoned(dir, id) {
			left++
		}
	}
	return found, left
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
			if end := stopLost(sid, ticks, escaped); !end.clean() || end.unproven > 0 {
				return false
			}
		}
	} else if !state.MadeBeforeBoot(dir.MonitorDir(id)) {
		return false // no maker to ask, and perhaps a start in progress
	}
	return dir.RemoveMonitorDir(id) == nil
}
