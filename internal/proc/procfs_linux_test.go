package proc

import (
	"os/exec"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestParseStat(t *testing.T) {
	// The command name may hold spaces and parentheses: fields are counted
	// after the last ')'.
	rest := []string{"S", "1", "4242", "4000"}
	for i := len(rest); i < 19; i++ {
		rest = append(rest, "0")
	}
	rest = append(rest, "987654", "0", "0")
	line := "4242 (a) b (c)) " + strings.Join(rest, " ") + "\n"
	got, err := parseStat(4242, []byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := procStat{pid: 4242, state: 'S', ppid: 1, pgrp: 4242, session: 4000, startTicks: 987654}
	if got != want {
		t.Fatalf("parseStat = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"4242 (x) S 1", "4242 x S 1 2 3", "4242 (x) S 1 pg " + strings.Repeat("0 ", 20)} {
		if _, err := parseStat(4242, []byte(bad)); err == nil {
			t.Errorf("parseStat(%q) accepted it", bad)
		}
	}
}

// startSleeper starts sleep in a group (or session) of its own, and ends
// it with the test, proving it gone.
func startSleeper(t *testing.T, attr *syscall.SysProcAttr) (int, uint64) {
	t.Helper()
	c := exec.Command("sleep", "1000")
	c.SysProcAttr = attr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	ticks, err := StartTicks(pid)
	t.Cleanup(func() {
		c.Process.Kill()
		c.Wait()
		if Matches(pid, ticks) {
			t.Errorf("sleep %d is still running", pid)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return pid, ticks
}

// TestGroupMembersStayInTheirSession: a group is found by its id only in
// the session given and from the start time given. Once a group's leader
// is gone its id can name another group; that group lives in another
// session (or started later than asked), and is never taken for it.
func TestGroupMembersStayInTheirSession(t *testing.T) {
	// Each sleeper leads a session and a group of its own (ids = its pid).
	pid, ticks := startSleeper(t, &syscall.SysProcAttr{Setsid: true})
	other, _ := startSleeper(t, &syscall.SysProcAttr{Setsid: true})

	if got, want := GroupMembers(pid, pid, ticks), []Member{{pid, ticks}}; !reflect.DeepEqual(got, want) {
		t.Errorf("GroupMembers(%d, its session) = %v, want %v", pid, got, want)
	}
	if got := GroupMembers(pid, other, ticks); len(got) != 0 {
		t.Errorf("GroupMembers(%d, session %d) = %v: the group is not in that session", pid, other, got)
	}
	if got := GroupMembers(pid, pid, ticks+1); len(got) != 0 {
		t.Errorf("GroupMembers(%d, not before %d) = %v: its only member is older", pid, ticks+1, got)
	}
	for _, id := range []int{0, 1} {
		if got := GroupMembers(id, pid, 0); len(got) != 0 {
			t.Errorf("GroupMembers(%d, ...) = %v, want none: group ids 0 and 1 are never taken", id, got)
		}
		if got := GroupMembers(pid, id, 0); len(got) != 0 {
			t.Errorf("GroupMembers(%d, session %d) = %v, want none", pid, id, got)
		}
	}
}
