//go:build linux

package cmd

import (
	"procmon/internal/proc"
	"procmon/internal/state"
)

// monitorView is what status and list show of a monitor. An exit code or
// signal appears only with a verified receipt.
type monitorView struct {
	MonitorID            string         `json:"monitor_id"`
	RunID                string         `json:"run_id"`
	Name                 string         `json:"name,omitempty"`
	Status               string         `json:"status"`
	Why                  string         `json:"needs_reconciliation_because,omitempty"`
	CommandOrdinal       int64          `json:"command_ordinal"`
	PID                  int            `json:"pid"`
	PGID                 int            `json:"pgid"`
	Argv                 []string       `json:"argv"`
	Cwd                  string         `json:"cwd"`
	StartedAtMs          int64          `json:"started_at_ms"`
	HeartbeatSeq         int64          `json:"heartbeat_seq"`
	OwnershipExpiresAtMs int64          `json:"ownership_expires_at_ms"`
	WorkDeadlineMs       *int64         `json:"work_deadline_ms"`
	CapturedBytes        int64          `json:"captured_bytes"`
	LogBytes             int64          `json:"log_bytes"`
	LogError             string         `json:"log_error,omitempty"`
	LogBytesLost         int64          `json:"log_bytes_lost,omitempty"`
	StateError           string         `json:"state_error,omitempty"`
	Reason               string         `json:"reason,omitempty"`
	ExitCode             *int           `json:"exit_code,omitempty"`
	Signal               *string        `json:"signal,omitempty"`
	Receipt              *state.Receipt `json:"receipt,omitempty"`
	// guardianPID is for a person's view, debugging by hand (strace,
	// gdb, kill -STOP); the JSON leaves it out, as a pid alone names no
	// process for certain (record.json has it with its start time).
	guardianPID int
}

func viewOf(o *proc.Observation) monitorView {
	m := o.Monitor
	v := monitorView{
		MonitorID:            m.MonitorID,
		RunID:                m.RunID,
		Name:                 m.Name,
		Status:               o.Status,
		Why:                  o.Why,
		CommandOrdinal:       m.CommandOrdinal,
		PID:                  m.PID,
		PGID:                 m.PGID,
		Argv:                 m.Argv,
		Cwd:                  m.Cwd,
		StartedAtMs:          m.StartedAtMs,
		HeartbeatSeq:         m.HeartbeatSeq,
		OwnershipExpiresAtMs: m.OwnershipExpiresAtMs,
		WorkDeadlineMs:       m.WorkDeadlineMs,
		CapturedBytes:        m.CapturedBytes,
		LogBytes:             m.LogBytes,
		LogError:             m.LogError,
		LogBytesLost:         m.LogBytesLost,
		StateError:           o.StateError,
		guardianPID:          m.GuardianPID,
	}
	if r := m.Receipt; r != nil {
		v.Reason, v.ExitCode, v.Signal, v.Receipt = r.Reason, r.ExitCode, r.Signal, r
	}
	return v
}

// receiptView is the cancel response: the receipt with its monitor id.
type receiptView struct {
	MonitorID string `json:"monitor_id"`
	*state.Receipt
	StateError string `json:"state_error,omitempty"`
	// name is the monitor's, for a person's view, which names it as
	// status and list do; the receipt's JSON is the protocol's.
	name string
	// endedBefore says, to a person, that the cancel found the monitor
	// ended: the receipt is the one it had, and nothing was signalled now.
	endedBefore bool
}

func receiptOf(o *proc.Observation) receiptView {
	return receiptView{MonitorID: o.Monitor.MonitorID, Receipt: o.Monitor.Receipt, StateError: o.StateError, name: o.Monitor.Name}
}
