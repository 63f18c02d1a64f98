package state

import (
	"strconv"
	"unicode/utf8"
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
	b = appendJSONString(b, m.MonitorID)
	b = append(b, `,"run_id":`...)
	b = appendJSONString(b, m.RunID)
	if m.Name != "" {
		b = append(b, `,"name":`...)
		b = appendJSONString(b, m.Name)
	}
	b = append(b, `,"argv":`...)
	b = appendJSONStrings(b, m.Argv)
	b = append(b, `,"cwd":`...)
	b = appendJSONString(b, m.Cwd)
	b = append(b, `,"command_ordinal":`...)
	b = strconv.AppendInt(b, m.CommandOrdinal, 10)
	b = append(b, `,"boot_id":`...)
	b = appendJSONString(b, m.BootID)
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
	b = appendJSONOptional(b, m.WorkDeadlineMs)
	b = append(b, `,"max_output_bytes":`...)
	b = appendJSONOptional(b, m.MaxOutputBytes)
	b = append(b, `,"phase":`...)
	b = appendJSONString(b, m.Phase)
	b = append(b, `,"captured_bytes":`...)
	b = strconv.AppendInt(b, m.CapturedBytes, 10)
	b = append(b, `,"log_bytes":`...)
	b = strconv.AppendInt(b, m.LogBytes, 10)
	if m.LogError != "" {
		b = append(b, `,"log_error":`...)
		b = appendJSONString(b, m.LogError)
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
	b = appendJSONString(b, r.Status)
	b = append(b, `,"reason":`...)
	b = appendJSONString(b, r.Reason)
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
		b = appendJSONString(b, *r.Signal)
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
			b = appendJSONString(b, s.Signal)
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
	b = appendJSONString(b, r.Containment)
	if len(r.Escaped) > 0 {
		b = append(b, `,"escaped":`...)
		b = appendJSONInts(b, r.Escaped)
	}
	if len(r.KillUnconfirmed) > 0 {
		b = append(b, `,"kill_unconfirmed":`...)
		b = appendJSONInts(b, r.KillUnconfirmed)
	}
	b = append(b, `,"custody":`...)
	b = appendJSONString(b, r.Custody)
	if r.ExitedAtMs != nil {
		b = append(b, `,"exited_at_ms":`...)
		b = strconv.AppendInt(b, *r.ExitedAtMs, 10)
	}
	b = append(b, `,"finished_at_ms":`...)
	b = strconv.AppendInt(b, r.FinishedAtMs, 10)
	return append(b, '}')
}

func appendJSONOptional(b []byte, v *int64) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *v, 10)
}

func appendJSONStrings(b []byte, vs []string) []byte {
	if vs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, v)
	}
	return append(b, ']')
}

func appendJSONInts(b []byte, vs []int) []byte {
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(v), 10)
	}
	return append(b, ']')
}

// appendJSONString appends s quoted with encoding/json's escaping: the
// short escapes it knows, \u00XX for other control bytes and for the
// HTML-sensitive '<', '>' and '&', \ufffd for each byte of invalid UTF-8,
// and \u2028 and \u2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	from := 0 // s[from:i] is still to be copied as it is
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[from:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, `\b`...)
			case '\f':
				b = append(b, `\f`...)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			case '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			from = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[from:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[from:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		from = i
	}
	b = append(b, s[from:]...)
	return append(b, '"')
}
