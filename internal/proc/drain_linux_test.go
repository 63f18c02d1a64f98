package proc

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestReleasedGroupIdIsNeverSignalled: once the child may be reaped, its
// pid may become another process group's id; the drain then signals only
// the processes a look found, each checked by its start time, and never
// the group id. Staged with a group of the test's own under the id.
func TestReleasedGroupIdIsNeverSignalled(t *testing.T) {
	other := exec.Command("sleep", "1000")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Process.Kill() // reaped by the waiter below
	g := &guardian{child: other.Process.Pid, groupReleased: true}
	exited := make(chan error, 1)
	go func() { exited <- other.Wait() }()
	if n := g.signalCustody(syscall.SIGKILL, custody{}); n != 0 {
		t.Errorf("signalled %d processes, want none", n)
	}
	select {
	case err := <-exited:
		t.Fatalf("the group under the released id was killed: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	// Before release, the id is the unreaped child's, and the group is
	// signalled.
	g.groupReleased = false
	if n := g.signalCustody(syscall.SIGKILL, custody{}); n != 1 {
		t.Errorf("signalled %d, want the group", n)
	}
	select {
	case <-exited:
	case <-time.After(patience):
		t.Fatal("the group was not signalled before release")
	}
}

// TestGroupTargets: a signal to the group counts the members of the look
// before it, at least the leader; a member that the look after it finds
// an escapee (it left the group about the time of the signal) is counted
// once, as the escapee it is signalled as, and a pid reused by another
// process is not that member.
func TestGroupTargets(t *testing.T) {
	m := func(pid int, ticks uint64) procStat { return procStat{pid: pid, startTicks: ticks} }
	before := custody{members: []procStat{m(10, 1), m(11, 1), m(12, 1)}}
	after := custody{members: []procStat{m(10, 1)}, escapees: []procStat{m(11, 1), m(12, 2), m(40, 1)}}
	for _, c := range []struct {
		signalled     bool
		before, after custody
		want          int
	}{
		{true, before, after, 2},
		{true, before, custody{}, 3},
		{false, before, after, 0},
		{true, custody{}, custody{}, 1},
		{true, after, after, 1},
	} {
		if got := groupTargets(c.signalled, c.before, c.after); got != c.want {
			t.Errorf("groupTargets(%v, %v, %v) = %d, want %d", c.signalled, c.before, c.after, got, c.want)
		}
	}
}
