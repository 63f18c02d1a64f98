package state

import (
	"strconv"

	"procmon/internal/protocol"
)

// A guardian encodes its record on the way to every start's handoff and at
// every heartbeat. encoding/json builds a type's encoder by reflection the
// first time it meets the type, which costs a freshly started guardian a
// few tenths of a millisecond that the caller of start waits for. So the
// record is encoded here, by hand, into exactly the bytes encoding/json
// would produce (TestMonitorJSONMatchesEncodingJSON holds the two to that);
// it is still decoded with encoding/json.

// AppendMonitorJSON appends m encoded as json.Marshal encodes it.
func AppendMonitorJSON(b []byte, m *Monitor) []byte {
	b = append(b, `{"monitor_id":`...)
	b = protocol.AppendString(b, m.MonitorID, true)
	b = append(b, `,"run_id":`...)
	b = protocol.AppendString(b, m.RunID, true)
	if m.Name != "" {
		b = append(b, `,"name":`...)
		b = protocol.AppendString(b, m.Name, true)
	}
	b = append(b, `,"argv":`...)
	b = protocol.AppendStrings(b, m.Argv, true)
	b = append(b, `,"cwd":`...)
	b = protocol.AppendString(b, m.Cwd, true)
	b = append(b, `,"command_ordinal":`...)
	b = strconv.AppendInt(b, m.CommandOrdinal, 10)
	b = append(b, `,"boot_id":`...)
	b = protocol.AppendString(b, m.BootID, true)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(m.PID), 10)
	b = append(b, `,"pgid":`...)
	b = strconv.AppendInt(b, int64(m.PGID), 10)
	b = append(b, `,"child_start_ticks":`...)
	b = strconv.AppendUint(b, m.ChildStartTicks, 10)
	b = append(b, `,"guardian_pid":`...)
	b = strconv.AppendInt(b, int64(m.GuardianPID), 10)
	b = append(b, `,"guardian_start_ticks":`...)
	b = strconv.AppendUint(b, m.GuardianStartTicks, 10)
	b = append(b, `,"admitted_at_ms":`...)
	b = strconv.AppendInt(b, m.AdmittedAtMs, 10)
	b = append(b, `,"started_at_ms":`...)
	b = strconv.AppendInt(b, m.StartedAtMs, 10)
	b = append(b, `,"heartbeat_seq":`...)
	b = strconv.AppendInt(b, m.HeartbeatSeq, 10)
	b = append(b, `,"ownership_expires_at_ms":`...)
	b = strconv.AppendInt(b, m.OwnershipExpiresAtMs, 10)
	b = append(b, `,"owner_grace_ms":`...)
	b = strconv.AppendInt(b, m.OwnerGraceMs, 10)
	b = append(b, `,"work_deadline_ms":`...)
	b = protocol.AppendOptionalInt(b, m.WorkDeadlineMs)
	b = append(b, `,"max_output_bytes":`...)
	b = protocol.AppendOptionalInt(b, m.MaxOutputBytes)
	b = append(b, `,"phase":`...)
	b = protocol.AppendString(b, m.Phase, true)
	b = append(b, `,"captured_bytes":`...)
	b = strconv.AppendInt(b, m.CapturedBytes, 10)
	b = append(b, `,"log_bytes":`...)
	b = strconv.AppendInt(b, m.LogBytes, 10)
	if m.LogError != "" {
		b = append(b, `,"log_error":`...)
		b = protocol.AppendString(b, m.LogError, true)
	}
	if m.LogBytesLost != 0 {
		b = append(b, `,"log_bytes_lost":`...)
		b = strconv.AppendInt(b, m.LogBytesLost, 10)
	}
	if m.Receipt != nil {
		b = append(b, `,"receipt":`...)
		b = appendReceiptJSON(b, m.Receipt)
	}
	return append(b, '}')
}

func appendReceiptJSON(b []byte, r *Receipt) []byte {
	b = append(b, `{"status":`...)
	b = protocol.AppendString(b, r.Status, true)
	b = append(b, `,"reason":`...)
	b = protocol.AppendString(b, r.Reason, true)
	b = append(b, `,"exit_code":`...)
	if r.ExitCode == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(*r.ExitCode), 10)
	}
	b = append(b, `,"signal":`...)
	if r.Signal == nil {
		b = append(b, "null"...)
	} else {
		b = protocol.AppendString(b, *r.Signal, true)
	}
	b = append(b, `,"signals":`...)
	if r.Signals == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, s := range r.Signals {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"signal":`...)
			b = protocol.AppendString(b, s.Signal, true)
			b = append(b, `,"at_ms":`...)
			b = strconv.AppendInt(b, s.AtMs, 10)
			b = append(b, `,"targets":`...)
			b = strconv.AppendInt(b, int64(s.Targets), 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"group_empty_verified":`...)
	b = strconv.AppendBool(b, r.GroupEmptyVerified)
	b = append(b, `,"output_drained":`...)
	b = strconv.AppendBool(b, r.OutputDrained)
	b = append(b, `,"containment":`...)
	b = protocol.AppendString(b, r.Containment, true)
	if len(r.Escaped) > 0 {
		b = append(b, `,"escaped":`...)
		b = protocol.AppendInts(b, r.Escaped)
	}
	if len(r.KillUnconfirmed) > 0 {
		b = append(b, `,"kill_unconfirmed":`...)
		b = protocol.AppendInts(b, r.KillUnconfirmed)
	}
	b = append(b, `,"custody":`...)
	b = protocol.AppendString(b, r.Custody, true)
	if r.ExitedAtMs != nil {
		b = append(b, `,"exited_at_ms":`...)
		b = strconv.AppendInt(b, *r.ExitedAtMs, 10)
	}
	b = append(b, `,"finished_at_ms":`...)
	b = strconv.AppendInt(b, r.FinishedAtMs, 10)
	return append(b, '}')
}
