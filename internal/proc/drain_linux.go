package proc

import (
	"slices"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/fault"
	"procmon/internal/state"
)

const (
	// killBoundMs bounds the wait after SIGKILL: a member still there (in
	// uninterruptible sleep) is reported as kill_unconfirmed, not waited on.
	killBoundMs = 2000
	// pipeBoundMs bounds the wait for the output pipe's EOF once the group
	// is gone; only a member that survived SIGKILL can hold it open longer.
	pipeBoundMs = 2000
	// drainBoundMs is the most a drain takes beyond its grace.
	drainBoundMs = killBoundMs + pipeBoundMs + 1000
)

// custody is one look at what the guardian is responsible for: every live
// descendant, split into members of the child's group and escapees (a
// setsid grandchild, reparented to the guardian as subreaper).
type custody struct {
	members  []procStat
	escapees []procStat
}

func (c custody) empty() bool { return len(c.members) == 0 && len(c.escapees) == 0 }

func (c custody) pids() []int {
	var out []int
	for _, s := range append(append([]procStat(nil), c.members...), c.escapees...) {
		out = append(out, s.pid)
	}
	sort.Ints(out)
	return out
}

func (g *guardian) look() custody {
	var c custody
	for _, s := range scanDescendants(g.self) {
		if !s.alive() {
			continue
		}
		if s.pgrp == g.child {
			c.members = append(c.members, s)
		} else {
			c.escapees = append(c.escapees, s)
		}
	}
	return c
}

// drain ends custody: SIGTERM with SIGCONT to the group and every escapee,
// the grace, SIGKILL to whatever remains, reaping, verification that
// nothing is left, and the output pipe read to EOF. Every wait is bounded.
func (g *guardian) drain(cause drainCause) *state.Receipt {
	r := &state.Receipt{
		Status:  cause.status,
		Reason:  cause.reason,
		Custody: state.CustodyGuardian,
		Signals: []state.SignalEvent{},
	}
	escaped := map[int]bool{}
	note := func(sig unix.Signal, at int64, n int, c custody) {
		r.Signals = append(r.Signals, state.SignalEvent{Signal: unix.SignalName(sig), AtMs: at, Targets: n})
		for _, s := range c.escapees {
			escaped[s.pid] = true
		}
	}
	send := func(sig unix.Signal, c custody) {
		at := nowMs()
		note(sig, at, g.signalCustody(sig, c), c)
	}

	// The group is signalled before the look for escapees, so that a
	// member that leaves it (setsid) at that moment has one signal or the
	// other. It is counted by a look before the signal, which also says
	// whether anything is left once the service has exited: counted
	// after, once SIGTERM had ended most of it, a shell and its three
	// children gave targets 1 as often as 4. (That look costs a cancel of
	// sleep about 0.2 ms.) The group is not released yet (verifyEmpty
	// releases it), so its id names it still.
	c := g.look()
	stopping := g.exit == nil || !c.empty()
	if stopping {
		before := c
		at := nowMs()
		term, cont := g.signalGroup(unix.SIGTERM), g.signalGroup(unix.SIGCONT)
		c = g.look()
		note(unix.SIGTERM, at, groupTargets(term, before, c)+g.signalEscapees(unix.SIGTERM, c), c)
		note(unix.SIGCONT, at, groupTargets(cont, before, c)+g.signalEscapees(unix.SIGCONT, c), c)
	}
	if stopping {
		fault.Point("guardian:mid_drain")
		c = g.waitQuiet(time.Now().Add(time.Duration(cause.graceMs) * time.Millisecond))
		if g.exit == nil || !c.empty() {
			send(unix.SIGKILL, c)
			c = g.waitQuiet(time.Now().Add(killBoundMs * time.Millisecond))
		}
	}
	if g.exit != nil {
		// Signalling the group is over: only now may the child's pid, and
		// so the group id, be released.
		var info childInfo
		waitid(unix.P_PID, g.child, unix.WEXITED, &info)
		r.ExitCode, r.Signal, r.ExitedAtMs = g.exit.exitCode, g.exit.signal, &g.exit.atMs
		r.GroupEmptyVerified = g.verifyEmpty(time.Now().Add(killBoundMs*time.Millisecond), send)
	}
	for pid := range escaped {
		r.Escaped = append(r.Escaped, pid)
	}
	sort.Ints(r.Escaped)
	r.Containment = state.ContainmentComplete
	if !r.GroupEmptyVerified {
		r.Containment = state.ContainmentIncomplete
		r.KillUnconfirmed = g.look().pids()
		if g.exit == nil && !slices.Contains(r.KillUnconfirmed, g.child) {
			// Not seen exiting, so still there, whatever the scan saw.
			r.KillUnconfirmed = append(r.KillUnconfirmed, g.child)
			sort.Ints(r.KillUnconfirmed)
		}
	}

	bound := time.Duration(pipeBoundMs) * time.Millisecond
	if !r.GroupEmptyVerified {
		bound /= 4
	}
	select {
	case <-g.out.done:
		r.OutputDrained = true
	case <-time.After(bound):
	}
	capOverridesExit(r, g.out)
	g.out.finish(r.OutputDrained)
	r.FinishedAtMs = nowMs()
	return r
}

// capOverridesExit makes r output_limit where it says that the command
// ended by itself (exited) but its output passed the capture cap, so that
// exited always means an output the cap did not cut. The output passed
// the cap as the command wrote it, before it exited; the copier reads it
// only later, and which of the cap and the exit the custodian's loop
// takes first is the scheduler's choice (a select takes either when both
// are ready): decided there, the same command would be exited one time
// and output_limit the next, as a monitor and as an exec alike. Called
// once the drain has read the pipe to its end, when the capture is whole,
// it rests on the capture alone; what a descendant writes after the
// child's exit, until the drain stops it, counts too. A drain for another
// reason (cancel, deadline, run end, owner exit, ...) keeps its status:
// custody ended for it, whatever the output did meanwhile. Where the pipe
// was not read to its end (a process outside the command holds it), what
// was read decides.
func capOverridesExit(r *state.Receipt, o *outputCopier) {
	if r.Status != state.StatusExited {
		return
	}
	select {
	case <-o.capHit:
		r.Status, r.Reason = state.StatusOutputLimit, "output_limit"
	default:
	}
}

// verifyEmpty reaps every child left and proves that nothing is: no
// process has the group id, and the guardian, subreaper of everything it
// started, has no child at all. The verdict rests on the kernel (kill and
// waitid), not on a walk of /proc, which can miss a process while it is
// being reparented; a straggler found meanwhile is killed outright.
func (g *guardian) verifyEmpty(deadline time.Time, send func(unix.Signal, custody)) bool {
	// The child is reaped here (if it was not before): from now on its
	// pid, and so the group id, may be a new process's once the group is
	// empty, and only what a look finds is signalled.
	g.groupReleased = true
	interval := 500 * time.Microsecond
	for {
		reapAll()
		if unix.Kill(-g.child, 0) == unix.ESRCH && noChildren() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		if c := g.look(); !c.empty() {
			send(unix.SIGKILL, c)
		}
		time.Sleep(interval)
		interval = min(interval*2, 50*time.Millisecond)
	}
}

// signalCustody sends sig to the child's group and to each escapee.
func (g *guardian) signalCustody(sig unix.Signal, c custody) int {
	if g.groupReleased {
		return g.signalExactly(sig, c.members) + g.signalEscapees(sig, c)
	}
	return groupTargets(g.signalGroup(sig), c, c) + g.signalEscapees(sig, c)
}

// signalGroup sends sig to the child's group while its id is the unreaped
// child's pid, which then cannot name anyone else. Once the child may be
// reaped (groupReleased), the group id may be another's: the members a
// look found are signalled one by one (signalCustody).
func (g *guardian) signalGroup(sig unix.Signal) bool {
	return !g.groupReleased && g.child > 1 && unix.Kill(-g.child, sig) == nil
}

// groupTargets is how many processes a signal to the group reached, as
// far as the look before it tells: at least the leader when the signal
// went. A member that the look after finds an escapee (it left the group
// about the time of the signal) is left out: it is counted once, as the
// escapee it is signalled as.
func groupTargets(signalled bool, before, after custody) int {
	if !signalled {
		return 0
	}
	return max(len(before.members), 1) - left(before, after)
}

// left is how many members of the group in before are escapees in
// after: each left it about the time of the signal to the group, and is
// counted once, as the escapee it is signalled as.
func left(before, after custody) int {
	n := 0
	for _, e := range after.escapees {
		if slices.ContainsFunc(before.members, func(m procStat) bool { return m.pid == e.pid && m.startTicks == e.startTicks }) {
			n++
		}
	}
	return n
}

// signalEscapees sends sig to each escapee of c.
func (g *guardian) signalEscapees(sig unix.Signal, c custody) int {
	return g.signalExactly(sig, c.escapees)
}

// signalExactly sends sig to each process of ps through a pidfd opened
// and then re-checked against the start time seen in the look, so a
// reused pid is never hit.
func (g *guardian) signalExactly(sig unix.Signal, ps []procStat) int {
	n := 0
	for _, s := range ps {
		if signalExact(s, sig) {
			n++
		}
	}
	return n
}

func signalExact(s procStat, sig unix.Signal) bool {
	fd, err := unix.PidfdOpen(s.pid, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	now, err := readStat(s.pid)
	if err != nil || now.startTicks != s.startTicks {
		return false
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0) == nil
}

// waitQuiet waits until the child has exited and no descendant is alive,
// or until the deadline; it returns what is still alive. While the child
// lives, custody cannot be quiet, so it only waits for the child's exit,
// looking at nothing. Then it looks again on SIGCHLD and on a short,
// growing interval, since a grandchild's death sends the guardian nothing.
// At the deadline it looks once more, for what is left to kill.
func (g *guardian) waitQuiet(deadline time.Time) custody {
	interval := 500 * time.Microsecond
	for {
		wait := time.Until(deadline)
		if g.exit != nil || wait <= 0 {
			if c := g.look(); wait <= 0 || c.empty() {
				return c
			}
		}
		if g.exit != nil {
			wait = min(wait, interval)
			interval = min(interval*2, 50*time.Millisecond)
		}
		t := time.NewTimer(wait)
		select {
		case ex := <-g.exited:
			g.exit = &ex
		case <-g.sig.Child:
		case <-t.C:
		}
		t.Stop()
	}
}

// reapOrphans reaps every exited child but the service's own, whose pid
// stays held until the drain is done signalling.
func (g *guardian) reapOrphans() {
	// Most calls find nothing to reap: one peek says so, without the scan.
	var peek childInfo
	if err := waitid(unix.P_ALL, 0, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, &peek); err != nil || peek.Pid == 0 {
		return
	}
	for _, pid := range ownChildren() {
		if pid == g.child {
			continue
		}
		var info childInfo
		waitid(unix.P_PID, pid, unix.WEXITED|unix.WNOHANG, &info)
	}
}
