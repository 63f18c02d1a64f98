package proc

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

// Observation is a monitor's record with the status a reader may show.
type Observation struct {
	Monitor *state.Monitor
	Status  string
	// Why says what makes a monitor need reconciliation.
	Why string
	// StateError says why the guardian, alive and in custody, could not
	// write the record (a full disk): the record then lags behind it.
	StateError string
}

// Terminal reports whether the monitor has a receipt.
func (o *Observation) Terminal() bool { return o.Monitor.Receipt != nil }

// Observe reads a monitor and decides its status: the receipt's when there
// is one; otherwise running or settling only while the guardian provably
// lives (pid and start time) in this boot and, while running, its
// ownership window is current.
func Observe(dir *state.Dir, id string) (*Observation, error) {
	m, err := dir.LoadMonitor(id)
	if err != nil {
		return nil, err
	}
	custody := state.CustodyOpen
	if m.Receipt == nil {
		custody = dir.Custody(id)
	}
	o := classify(m, nowMs(), state.MonoNowMs(), state.BootID(), custody)
	if o.Status == state.StatusNeedsReconciliation && m.Receipt == nil {
		// The guardian may have written its receipt and exited between the
		// read and the liveness check: look once more before saying so.
		if again, err := dir.LoadMonitor(id); err == nil && again.Receipt != nil {
			o = classify(again, nowMs(), state.MonoNowMs(), state.BootID(), custody)
		}
	}
	if o.lapsed() && answering(m.GuardianPID, m.GuardianStartTicks) {
		o.askGuardian(dir, custody)
	} else if (o.Status == state.StatusRunning || o.Status == state.StatusSettling) && dir.ReadOnly() && answering(m.GuardianPID, m.GuardianStartTicks) {
		// On a read-only file system a guardian that drained could not
		// close its fence: the record said running (or settling) until
		// its window lapsed, and a cancel's receipt was not shown. A
		// statfs per look is what finding this out costs everyone else.
		o.askGuardian(dir, custody)
	}
	if o.Status == state.StatusNeedsReconciliation && o.Monitor.Receipt == nil && !o.lapsed() {
		// No guardian counts any more: what it wrote since its last save
		// is in the log, which logs shows (settleCounts). Shown from the
		// record, captured_bytes stayed below the log's stream_bytes.
		settleCounts(dir, o.Monitor)
	}
	if o.lapsed() && custody == state.CustodyOpen {
		// Shown as needing reconciliation while its guardian lives: the
		// guardian must never claim custody again, whatever it wrote or
		// answers from now on (see state.CustodyName).
		dir.GiveUpCustody(id)
	}
	return o, nil
}

// OutputEnded reports whether the monitor's output can grow no more, so
// that a character left unfinished at its end is shown (as U+FFFD) rather
// than held back: it has a receipt, or it needs reconciliation because no
// guardian is left to read the service's output (it is gone, or the
// machine rebooted). A guardian only past its ownership window lives, and
// drains once it runs again, reading what is left of the output.
func (o *Observation) OutputEnded() bool {
	return o.Terminal() || o.Status == state.StatusNeedsReconciliation && !o.lapsed()
}

// lapsed reports whether the record's ownership window has passed while
// its guardian lives, which is what it looks like both when the guardian
// has stalled and when it could not write its heartbeats, or whether its
// custody was given up while it lives (see state.CustodyName).
func (o *Observation) lapsed() bool {
	return o.Status == state.StatusNeedsReconciliation && (o.Why == whyWindowExpired || o.Why == whySettlingExpired || o.Why == whyCustodyGivenUp)
}

// askPatience is how long a reader waits for a guardian whose record's
// window has passed to answer. One that does not is shown as needing
// reconciliation, which closes its custody fence for good: on a full disk,
// where every reader asks, a guardian or reader starved for a second must
// not cost the service its custody.
const askPatience = 3 * time.Second

// askGuardian asks a guardian whose record's window has passed for the
// window it renewed last: one that answers within askPatience, with a
// current window, holds custody, and could not store it (it says why);
// one that does not answer needs reconciliation, and will never renew
// (see guardian.renew). A guardian that has drained meanwhile answers
// with its receipt, stored or not.
func (o *Observation) askGuardian(dir *state.Dir, custody state.Custody) {
	reply, err := ask(dir, o.Monitor, controlRequest{Op: "ping"}, askPatience)
	if err != nil {
		return
	}
	switch {
	case reply.Receipt != nil:
		// A receipt it could not store (a full disk): its counters could
		// not be stored either, and the record's are as old as its last
		// heartbeat that was.
		m := *o.Monitor
		m.Phase, m.Receipt = state.PhaseTerminal, reply.Receipt
		reply.counters(&m)
		o.Monitor, o.Status, o.Why = &m, reply.Receipt.Status, ""
	case o.Monitor.Phase == state.PhaseSettling || reply.Phase == state.PhaseSettling:
		// It answers, so it is still draining (a member stuck in the
		// kernel holds it up to its bounds), whether or not its record
		// could say so.
		o.Status, o.Why = state.StatusSettling, ""
	case (reply.CustodyLeftMs > 0 || reply.CustodyUntilMs >= nowMs()) && custody != state.CustodyGivenUp:
		o.Status, o.Why = state.StatusRunning, ""
	default:
		return
	}
	o.StateError = reply.StateError
}

// answering reports whether the guardian lives and is not stopped: a
// stopped one (SIGSTOP, a debugger) cannot answer, so it is not asked.
func answering(pid int, startTicks uint64) bool {
	s, err := readStat(pid)
	return err == nil && s.startTicks == startTicks && s.alive() && s.state != 'T' && s.state != 't'
}

const (
	whyWindowExpired   = "the ownership window expired without a heartbeat"
	whySettlingExpired = "the guardian stopped answering while it drained"
	whyCustodyGivenUp  = "the guardian's custody was given up: its window lapsed, it could not store its receipt, or its custody fence is not the file procmon made (replaced or changed by hand)"
)

// classify decides a monitor's status from its record, the time (now on
// the wall clock, mono on the one windows are judged by), the boot and its
// custody fence (which it reads only for a record without a receipt).
func classify(m *state.Monitor, now, mono int64, bootID string, custody state.Custody) *Observation {
	o := &Observation{Monitor: m}
	switch {
	case m.Receipt != nil:
		o.Status = m.Receipt.Status
	case m.BootID != bootID:
		o.Status, o.Why = state.StatusNeedsReconciliation, "the machine rebooted since the handoff"
	case !Matches(m.GuardianPID, m.GuardianStartTicks):
		o.Status, o.Why = state.StatusNeedsReconciliation, "the guardian is gone and left no receipt"
	case m.Phase == state.PhaseSettling && !m.WindowLapsed(now, mono):
		o.Status = state.StatusSettling
	case m.Phase == state.PhaseSettling:
		o.Status, o.Why = state.StatusNeedsReconciliation, whySettlingExpired
	case m.WindowLapsed(now, mono):
		o.Status, o.Why = state.StatusNeedsReconciliation, whyWindowExpired
	case custody == state.CustodyGivenUp:
		// A current window written after a reader showed the lapse, or by
		// a guardian that could not store its receipt: never running.
		o.Status, o.Why = state.StatusNeedsReconciliation, whyCustodyGivenUp
	default:
		o.Status = state.StatusRunning
	}
	return o
}

// NeedsReconciliation is the refusal for commands that depend on a live
// handoff of a monitor whose custody is unverified.
func NeedsReconciliation(o *Observation) error {
	return protocol.Errorf(protocol.CodeNeedsReconciliation, "monitor %s needs reconciliation (%s)", o.Monitor.MonitorID, o.Why).
		With("monitor_id", o.Monitor.MonitorID).With("why", o.Why)
}

// Cancel drains a monitor and returns its observation with the receipt.
// It is idempotent: a terminal monitor returns its existing receipt. A
// guardian that drained but could not store its receipt yet (a full
// disk) answers with it all the same, and StateError says so.
func Cancel(dir *state.Dir, id string, graceMs int64, reason string) (*Observation, error) {
	o, err := Observe(dir, id)
	if err != nil {
		return nil, err
	}
	return CancelObserved(dir, o, graceMs, reason)
}

// CancelObserved is Cancel of a monitor the caller has just observed.
func CancelObserved(dir *state.Dir, o *Observation, graceMs int64, reason string) (*Observation, error) {
	id := o.Monitor.MonitorID
	if o.Terminal() {
		return o, nil
	}
	if o.Status == state.StatusNeedsReconciliation {
		return nil, NeedsReconciliation(o)
	}
	reply, seen, err := awaitDrain(dir, o, graceMs, reason)
	if seen != nil {
		if seen.Terminal() {
			return seen, nil
		}
		return nil, NeedsReconciliation(seen)
	}
	if errors.Is(err, errNotTheGuardian) && Matches(o.Monitor.GuardianPID, o.Monitor.GuardianStartTicks) {
		// The guardian lives, but what answers on its socket is not it.
		path := filepath.Join(dir.MonitorDir(id), state.ControlName)
		return nil, protocol.Errorf(protocol.CodeStateUnsafe, "%s is not served by the guardian of %s (pid %d), so nothing it says is trusted; inspect it by hand", path, id, o.Monitor.GuardianPID).With("path", path).With("monitor_id", id)
	}
	if err != nil && !IsNoGuardian(err) {
		var pe *protocol.Error
		// A guardian killed while it answers closes its sockets before the
		// last of its threads has exited: for that moment it still looks
		// alive, so it is given a second to finish.
		g := []Member{{PID: o.Monitor.GuardianPID, StartTicks: o.Monitor.GuardianStartTicks}}
		if errors.As(err, &pe) || len(waitGone(g, time.Now().Add(time.Second))) > 0 {
			return nil, err
		}
		// The guardian died while it drained: the record says what is left.
	}
	o, err = Observe(dir, id)
	if err != nil {
		return nil, err
	}
	if !o.Terminal() && reply != nil && reply.Receipt != nil {
		m := *o.Monitor
		m.Phase, m.Receipt = state.PhaseTerminal, reply.Receipt
		reply.counters(&m)
		o = &Observation{Monitor: &m, Status: reply.Receipt.Status, StateError: reply.StateError}
	}
	if !o.Terminal() {
		if o.Why == "" {
			o.Why = "its guardian did not answer the cancel"
		}
		return nil, NeedsReconciliation(o)
	}
	return o, nil
}

// AwaitStart waits, until deadline, for the start in progress in monitor
// directory id (no record yet) to become a monitor or come to nothing, and
// returns the monitor's observation, or nil once there is no monitor and
// will be none. A foreground command's trace is none, at once; it is
// swept on the way when its custodian is gone (see SweepAbandoned).
func AwaitStart(dir *state.Dir, id string, deadline time.Time) (*Observation, error) {
	interval := time.Millisecond
	for {
		o, err := Observe(dir, id)
		if !protocol.HasCode(err, protocol.CodeUnknownMonitor) {
			return o, err
		}
		if mk, err := dir.LoadMaker(id); err == nil && mk.Session != 0 {
			// A foreground command's trace, not a start: one whose
			// custodian is gone is swept now, as list sweeps it, so
			// that what it left (it names no run) stops with the first
			// command that looks; a live custodian drains its own.
			SweepAbandoned(dir, id)
			return nil, nil
		}
		if SweepAbandoned(dir, id) {
			return nil, nil
		}
		if _, statErr := os.Lstat(dir.MonitorDir(id)); errors.Is(statErr, fs.ErrNotExist) {
			return nil, nil // refused, and removed by its launcher
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(interval)
		interval = min(2*interval, 50*time.Millisecond)
	}
}
