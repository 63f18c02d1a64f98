package state

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestRecordsOfAnEarlierProcmonComeToTheInitialClock: a record without a
// ticks_clock was written by an earlier procmon (a guardian from before
// an upgrade goes on writing so) with start times as /proc showed them in
// its namespace; read in the same namespace, 1000 s ahead of the initial
// one, they come to the initial namespace's clock, as this procmon reads
// every process.
func TestRecordsOfAnEarlierProcmonComeToTheInitialClock(t *testing.T) {
	const off = 1000 * UserHZ
	old := &Monitor{ChildStartTicks: off + 4, GuardianStartTicks: off + 6,
		EscapedSessions: []EscapedSession{{SID: 7, Witnesses: []Witness{{PID: 8, StartTicks: off + 9}, {PID: 10, StartTicks: off + 11}}}}}
	fromWritersClock(old, off)
	if old.ChildStartTicks != 4 || old.GuardianStartTicks != 6 || old.EscapedSessions[0].Witnesses[0].StartTicks != 9 ||
		old.EscapedSessions[0].Witnesses[1].StartTicks != 11 {
		t.Errorf("an earlier procmon's monitor record came to %+v", old)
	}
	run := &Run{Owner: &Owner{PID: 3, StartTicks: off + 5}}
	fromWritersClock(run, off)
	if run.Owner.StartTicks != 5 {
		t.Errorf("an earlier procmon's run owner came to %d", run.Owner.StartTicks)
	}
	fromWritersClock(&Run{}, off) // no owner: nothing to move
	mk := &Maker{GuardianStartTicks: off + 2, Session: 12, SessionTicks: off + 13}
	fromWritersClock(mk, off)
	if mk.GuardianStartTicks != 2 || mk.SessionTicks != 13 {
		t.Errorf("an earlier procmon's maker came to %+v", mk)
	}
	// A session of none stays none.
	mk = &Maker{GuardianStartTicks: off + 2}
	fromWritersClock(mk, off)
	if mk.SessionTicks != 0 {
		t.Errorf("a maker without a session came to session ticks %d", mk.SessionTicks)
	}
	e := &TraceEscapes{EscapedSessions: []EscapedSession{{SID: 1, Witnesses: []Witness{{PID: 2, StartTicks: off + 3}}}}}
	fromWritersClock(e, off)
	if e.EscapedSessions[0].Witnesses[0].StartTicks != 3 {
		t.Errorf("an earlier procmon's trace came to %+v", e)
	}
}

// TestRecordsSayTheirClockInTheEnvelope: every record that names
// processes says in its envelope which clock their start times are on,
// and its body holds nothing an earlier procmon, which reads bodies
// strictly, would not know. A marked record reads back as written.
func TestRecordsSayTheirClockInTheEnvelope(t *testing.T) {
	for _, v := range []startTimes{&Monitor{GuardianStartTicks: 6}, &Run{Owner: &Owner{PID: 3, StartTicks: 6}}, &TraceEscapes{}} {
		data, err := encodeRecord("x", v)
		if err != nil {
			t.Fatal(err)
		}
		var env envelope
		if err := json.Unmarshal(data, &env); err != nil || env.TicksClock != TicksInitial || bytes.Contains(env.Body, []byte("ticks_clock")) {
			t.Errorf("%T encoded as %s (%v)", v, data, err)
		}
	}
	data, err := encodeRecord("monitor", &Monitor{GuardianStartTicks: 6})
	if err != nil {
		t.Fatal(err)
	}
	var back Monitor
	if err := decodeRecord("m", "monitor", data, &back); err != nil || back.GuardianStartTicks != 6 {
		t.Errorf("decoded %+v, %v", back, err)
	}
	if data, _ := encodeRecord("settings", &Settings{}); bytes.Contains(data, []byte("ticks_clock")) {
		t.Errorf("a record that names no process is marked: %s", data)
	}
}
