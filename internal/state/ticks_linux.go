package state

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// TicksInitial is the ticks_clock of a record whose processes' start
// times are on the clock of the machine's initial time namespace (see
// TicksOffset). A record without it holds them as /proc showed them to
// its writer, an earlier procmon, in its own namespace.
const TicksInitial = "initial"

// TicksOffset is how far this process's boot-time clock runs ahead of the
// initial time namespace's, in clock ticks. The kernel gives a start time
// in /proc/PID/stat on the reader's clock: a reader in a time namespace
// (unshare --time, a container restored by CRIU) saw every process start
// that much later, and took an owner for exited and a live guardian for
// gone. procmon takes it off every start time it reads, so that every
// record speaks of the same clock.
//
// /proc/self/timens_offsets shows the namespace this process's children
// are made in, which is its own unless it called unshare without an exec
// since (procmon does not). An offset that is not a whole tick (10 ms;
// unshare takes whole seconds, CRIU does not) leaves start times taken
// in different namespaces one tick apart for some processes: the kernel
// rounds the sum. So does a negative offset for a process that started
// before the namespace's clock began: the kernel shows its start time
// wrapped past 2^64 ns, which no subtraction brings back. 0 where the
// kernel has no time namespaces.
var TicksOffset = sync.OnceValue(func() int64 {
	b, err := os.ReadFile("/proc/self/timens_offsets")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "boottime" {
			continue
		}
		sec, err1 := strconv.ParseInt(f[1], 10, 64)
		nsec, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return 0
		}
		// USER_HZ, the unit of /proc/PID/stat's times, is 100 on every
		// architecture procmon builds for.
		return sec*UserHZ + nsec/(1e9/UserHZ)
	}
	return 0
})

// UserHZ is the unit of the start times in /proc/PID/stat, per second.
const UserHZ = 100

// startTimes is a record that names processes by pid and start time.
// encodeRecord marks its envelope TicksInitial (a maker, which has no
// envelope, carries the mark itself); decodeRecord takes the start times
// of one without the mark, written by an earlier procmon in this
// process's namespace (a guardian from before an upgrade writes so until
// it ends), to the initial namespace's clock.
type startTimes interface {
	ticks() []*uint64
}

// fromWritersClock brings the start times of r, a record of an earlier
// procmon, to the initial namespace's clock, taking its writer to have
// run in this process's namespace, whose clock runs off ticks ahead
// (TicksOffset).
func fromWritersClock(r startTimes, off int64) {
	if off == 0 {
		return
	}
	for _, t := range r.ticks() {
		if *t != 0 {
			*t = uint64(int64(*t) - off)
		}
	}
}

func (m *Monitor) ticks() []*uint64 {
	t := []*uint64{&m.ChildStartTicks, &m.GuardianStartTicks}
	return append(t, witnessTicks(m.EscapedSessions)...)
}

func (r *Run) ticks() []*uint64 {
	if r.Owner == nil {
		return nil
	}
	return []*uint64{&r.Owner.StartTicks}
}

func (mk *Maker) ticks() []*uint64 { return []*uint64{&mk.GuardianStartTicks, &mk.SessionTicks} }

func (e *TraceEscapes) ticks() []*uint64 { return witnessTicks(e.EscapedSessions) }

func witnessTicks(sessions []EscapedSession) []*uint64 {
	var t []*uint64
	for i := range sessions {
		for j := range sessions[i].Witnesses {
			t = append(t, &sessions[i].Witnesses[j].StartTicks)
		}
	}
	return t
}
