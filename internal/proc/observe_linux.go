package proc

import (
	"errors"
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
	o := classify(m, nowMs(), state.BootID())
	if o.Status == state.StatusNeedsReconciliation && m.Receipt == nil {
		// The guardian may have written its receipt and exited between the
		// read and the liveness check: look once more before saying so.
		if again, err := dir.LoadMonitor(id); err == nil && again.Receipt != nil {
			o = classify(again, nowMs(), state.BootID())
		}
	}
	return o, nil
}

func classify(m *state.Monitor, now int64, bootID string) *Observation {
	o := &Observation{Monitor: m}
	switch {
	case m.Receipt != nil:
		o.Status = m.Receipt.Status
	case m.BootID != bootID:
		o.Status, o.Why = state.StatusNeedsReconciliation, "the machine rebooted since the handoff"
	case !Matches(m.GuardianPID, m.GuardianStartTicks):
		o.Status, o.Why = state.StatusNeedsReconciliation, "the guardian is gone and left no receipt"
	case m.Phase == state.PhaseSettling:
		o.Status = state.StatusSettling
	case now > m.OwnershipExpiresAtMs:
		o.Status, o.Why = state.StatusNeedsReconciliation, "the ownership window expired without a heartbeat"
	default:
		o.Status = state.StatusRunning
	}
	return o
}

// NeedsReconciliation is the refusal for commands that depend on a live
// handoff of a monitor whose custody is unverified.
func NeedsReconciliation(o *Observation) error {
	return protocol.Errorf(protocol.CodeNeedsReconciliation, "monitor %s needs reconciliation (%s); inspect it with procmon status %s, then run: procmon reconcile %s", o.Monitor.MonitorID, o.Why, o.Monitor.MonitorID, o.Monitor.MonitorID).
		With("monitor_id", o.Monitor.MonitorID).With("why", o.Why)
}

// Cancel drains a monitor and returns its record with the receipt. It is
// idempotent: a terminal monitor returns its existing receipt.
func Cancel(dir *state.Dir, id string, graceMs int64, reason string) (*state.Monitor, error) {
	o, err := Observe(dir, id)
	if err != nil {
		return nil, err
	}
	if o.Terminal() {
		return o.Monitor, nil
	}
	if o.Status == state.StatusNeedsReconciliation {
		return nil, NeedsReconciliation(o)
	}
	if _, err := RequestDrain(dir, id, graceMs, reason); err != nil && !IsNoGuardian(err) {
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
	if !o.Terminal() {
		return nil, NeedsReconciliation(o)
	}
	return o.Monitor, nil
}
