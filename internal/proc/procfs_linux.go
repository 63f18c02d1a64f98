package proc

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"procmon/internal/state"
)

// procStat is what procmon reads of /proc/PID/stat.
type procStat struct {
	pid        int
	state      byte
	ppid       int
	pgrp       int
	session    int
	threads    int
	startTicks uint64
}

// alive reports whether the process still runs: not a zombie, or one
// whose main thread alone has exited (pthread_exit) while its other
// threads run. /proc shows such a process as a zombie, and its threads
// count the dead leader too: taken for dead, it was never sent SIGKILL
// and outlived cancel, run end and a deadline.
func (s procStat) alive() bool {
	return s.state != 'X' && (s.state != 'Z' || s.threads > 1)
}

// readStat parses /proc/PID/stat. The command name may hold spaces and
// parentheses, so fields are counted after the last ')'.
func readStat(pid int) (procStat, error) {
	var arr [512]byte
	buf, err := readProc("/proc/"+strconv.Itoa(pid)+"/stat", arr[:0])
	if err != nil {
		return procStat{}, err
	}
	return parseStat(pid, buf)
}

// readProc appends the whole of a /proc file to buf, with the system calls
// alone: os.ReadFile also stats the file and offers it to the runtime's
// poller, five calls more than open, read and close, which the scans of a
// drain (one file per thread of the guardian and per descendant, several
// times over) paid for each file. A walk of the children lists of a
// process of about ten threads takes 95 µs instead of 175, a stat 17
// instead of 23 (go test -bench, load 2).
func readProc(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

func parseStat(pid int, buf []byte) (procStat, error) {
	end := bytes.LastIndexByte(buf, ')')
	if end < 0 || end+2 >= len(buf) {
		return procStat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	// Fields after the name: state(3) ppid(4) pgrp(5) session(6) tty(7)
	// tpgid(8) flags(9) minflt cminflt majflt cmajflt utime stime cutime
	// cstime priority nice threads itrealvalue starttime(22).
	fields := bytes.Fields(buf[end+2:])
	if len(fields) < 20 {
		return procStat{}, fmt.Errorf("short /proc/%d/stat", pid)
	}
	s := procStat{pid: pid, state: fields[0][0]}
	var errs [5]error
	s.ppid, errs[0] = strconv.Atoi(string(fields[1]))
	s.pgrp, errs[1] = strconv.Atoi(string(fields[2]))
	s.session, errs[2] = strconv.Atoi(string(fields[3]))
	s.threads, errs[3] = strconv.Atoi(string(fields[17]))
	s.startTicks, errs[4] = strconv.ParseUint(string(fields[19]), 10, 64)
	for _, e := range errs {
		if e != nil {
			return procStat{}, fmt.Errorf("parse /proc/%d/stat: %w", pid, e)
		}
	}
	// On the initial time namespace's clock, as every record holds it.
	s.startTicks = uint64(int64(s.startTicks) - state.TicksOffset())
	return s, nil
}

// StartTicks returns a process's start time in clock ticks since boot:
// with the pid, it names one process for the life of the boot.
func StartTicks(pid int) (uint64, error) {
	s, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	return s.startTicks, nil
}

// Matches reports whether pid is alive and is still the process that
// started at startTicks (not a reuse of its pid).
func Matches(pid int, startTicks uint64) bool {
	if pid <= 1 {
		return false
	}
	s, err := readStat(pid)
	return err == nil && s.startTicks == startTicks && s.alive()
}

// scanDescendants returns every process below root, walking the
// children lists of each task down from root: its cost follows the size of
// the tree, not of the machine. The lists can miss a process that is being
// reparented at that instant, so callers look again until quiet, and the
// final verdict rests on waitid and kill, not on this walk.
//
// A pid read from a children list may have ended and been handed to
// another process before its stat is read: a process counts only if its
// parent is the one it was listed under, or root, to which the subreaper
// rules reparent it should that parent have ended meanwhile.
func scanDescendants(root int) []procStat {
	type listed struct{ pid, parent int }
	var out []procStat
	var queue []listed
	add := func(parent int) {
		for _, pid := range childrenOf(parent) {
			queue = append(queue, listed{pid, parent})
		}
	}
	add(root)
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		s, err := readStat(c.pid)
		if err != nil || s.ppid != c.parent && s.ppid != root {
			continue
		}
		out = append(out, s)
		add(c.pid)
	}
	return out
}

// childrenOf lists the children of every thread of pid (a child belongs to
// the thread that forked it, a reparented orphan to whichever thread the
// kernel picked).
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := readDirNames(dir)
	if err != nil {
		return nil
	}
	var out []int
	var arr [256]byte
	for _, t := range tasks {
		buf, err := readProc(dir+"/"+t+"/children", arr[:0])
		if err != nil {
			continue
		}
		for _, f := range bytes.Fields(buf) {
			if c, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// readDirNames lists a /proc directory with getdents alone (see readProc).
func readDirNames(dir string) ([]string, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	var names []string
	buf := make([]byte, 4096)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "getdents", Path: dir, Err: err}
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

// ownChildren lists the guardian's direct children.
func ownChildren() []int { return childrenOf(os.Getpid()) }

// Member is a live process of a recorded group.
type Member struct {
	PID        int
	StartTicks uint64
}

// LostMembers lists what is left of a monitor whose guardian is gone: the
// live processes of the guardian's session that started no earlier than
// the guardian. A session cannot be joined from outside (setpgid works
// only within a session, and setsid makes a new one), so every process in
// it descends from the guardian: the service's group, and any member that
// moved to another group of the session. Once the guardian's pid is held
// by another process, that one may have made a session of the same
// number: only processes older than it count.
//
// What it cannot tell apart is a session left by such a process that has
// itself exited since: that takes the kernel handing the guardian's pid
// out again, to a process that makes a session and dies, while the lost
// monitor waits for reconcile, which pid_max makes a matter of a pid
// counter that wrapped meanwhile.
func LostMembers(guardianPID int, guardianTicks uint64) []Member {
	if guardianPID <= 1 {
		return nil
	}
	var before uint64 // 0: no bound
	if s, err := readStat(guardianPID); err == nil && s.startTicks != guardianTicks {
		before = s.startTicks
	}
	return scanSession(guardianPID, guardianTicks, before, guardianPID)
}

// LostEscapees lists what is left of the sessions that a lost guardian
// recorded its service's descendants had made (state.EscapedSession): the
// members, leaders included, of each session one of whose witnesses is
// still in it, started no earlier than the first witness. A session whose
// witnesses are all gone cannot be told from another that took its number
// once it ended (a double-forked daemon's, whose leader has exited too):
// its processes are left alone, and unproven counts the sessions that
// still have some.
func LostEscapees(sessions []state.EscapedSession) (members []Member, unproven int) {
	proven, unproven := provenSessions(sessions)
	for _, e := range proven {
		members = append(members, provenMembers(e)...)
	}
	return members, unproven
}

// provenSessions returns the sessions one of whose witnesses is still in
// them, alive or a zombie (whose pids are released only once it is
// reaped), and how many of the others still have live processes.
func provenSessions(sessions []state.EscapedSession) (proven []state.EscapedSession, unproven int) {
	for _, e := range sessions {
		witnessed := slices.ContainsFunc(e.Witnesses, func(w state.Witness) bool {
			s, err := readStat(w.PID)
			return err == nil && s.startTicks == w.StartTicks && s.state != 'X' && s.session == e.SID
		})
		switch {
		case witnessed:
			proven = append(proven, e)
		case len(scanSession(e.SID, 0, 0, 0)) > 0:
			unproven++
		}
	}
	return proven, unproven
}

// provenMembers lists the live members of a proven session started no
// earlier than its first witness. While the session has a member its
// number is pinned, so whatever holds the pid of that number is its
// leader, alive or a zombie: no bound on it applies.
func provenMembers(e state.EscapedSession) []Member {
	return scanSession(e.SID, e.Witnesses[0].StartTicks, 0, 0)
}

// scanSession lists the live processes of session sid that started no
// earlier than since and, with before set, before it; skip, if not 0, is
// a pid left out.
func scanSession(sid int, since, before uint64, skip int) []Member {
	if sid <= 1 {
		return nil
	}
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var out []Member
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == skip {
			continue
		}
		s, err := readStat(pid)
		if err == nil && s.session == sid && s.alive() && s.startTicks >= since && (before == 0 || s.startTicks < before) {
			out = append(out, Member{PID: pid, StartTicks: s.startTicks})
		}
	}
	return out
}
