package proc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"procmon/internal/state"
)

func TestParseStat(t *testing.T) {
	// The command name may hold spaces and parentheses: fields are counted
	// after the last ')'.
	rest := []string{"S", "1", "4242", "4000"}
	for i := len(rest); i < 19; i++ {
		rest = append(rest, "0")
	}
	rest[17] = "3" // threads
	rest = append(rest, "987654", "0", "0")
	line := "4242 (a) b (c)) " + strings.Join(rest, " ") + "\n"
	got, err := parseStat(4242, []byte(line))
	if err != nil {
		t.Fatal(err)
	}
	// On the initial time namespace's clock, whatever namespace the test
	// runs in.
	want := procStat{pid: 4242, state: 'S', ppid: 1, pgrp: 4242, session: 4000, threads: 3, startTicks: uint64(987654 - state.TicksOffset())}
	if got != want {
		t.Fatalf("parseStat = %+v, want %+v", got, want)
	}
	// A zombie is dead, unless only its main thread has exited.
	for _, c := range []struct {
		s     procStat
		alive bool
	}{
		{procStat{state: 'S', threads: 1}, true},
		{procStat{state: 'Z', threads: 1}, false},
		{procStat{state: 'Z', threads: 2}, true},
		{procStat{state: 'X', threads: 2}, false},
	} {
		if c.s.alive() != c.alive {
			t.Errorf("%c with %d threads: alive %v", c.s.state, c.s.threads, !c.alive)
		}
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

// TestLostMembersStayInTheirSession: what is left of a lost guardian is
// found only in the guardian's session, never the guardian itself, and
// only among processes no older than the guardian.
func TestLostMembersStayInTheirSession(t *testing.T) {
	// The shell stands for a guardian: it leads a session of its own, and
	// its sleep child lives in that session.
	c, leader, leaderTicks, member, memberTicks := startSession(t, "sleep 60 & echo $!; wait")
	t.Cleanup(func() {
		syscall.Kill(-leader, syscall.SIGKILL)
		c.Wait()
		if left := waitGone([]Member{{member, memberTicks}}, time.Now().Add(patience)); len(left) > 0 {
			t.Errorf("sleep %d is still running", member)
		}
	})
	other, otherTicks := startSleeper(t, &syscall.SysProcAttr{Setsid: true})

	if got, want := LostMembers(leader, leaderTicks), []Member{{member, memberTicks}}; !reflect.DeepEqual(got, want) {
		t.Errorf("LostMembers(%d) = %v, want %v: its session's member, not itself", leader, got, want)
	}
	if got := LostMembers(other, otherTicks); len(got) != 0 {
		t.Errorf("LostMembers(%d) = %v: that session has no member but its leader", other, got)
	}
	if got := LostMembers(leader, memberTicks+1); len(got) != 0 {
		t.Errorf("LostMembers(%d, from %d) = %v: its member is older than that", leader, memberTicks+1, got)
	}
	// Asked for a guardian that started at tick 0, the shell now holding
	// the pid is another process, which may have made the session: its
	// member, younger than it, is not the lost guardian's.
	if got := LostMembers(leader, 0); len(got) != 0 {
		t.Errorf("LostMembers(%d, from 0) = %v: the pid's holder is not that guardian, and its member is younger than it", leader, got)
	}
	for _, id := range []int{0, 1} {
		if got := LostMembers(id, 0); len(got) != 0 {
			t.Errorf("LostMembers(%d) = %v, want none: pids 0 and 1 are never a guardian", id, got)
		}
	}
}

// startSession runs script in a shell that leads a session of its own;
// the script prints the pid of a child it leaves in the session. It
// returns the shell, its pid and start, and the child's.
func startSession(t *testing.T, script string) (c *exec.Cmd, leader int, leaderTicks uint64, member int, memberTicks uint64) {
	t.Helper()
	c = exec.Command("sh", "-c", script)
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	leader = c.Process.Pid
	if _, err := fmt.Fscan(out, &member); err != nil {
		t.Fatal(err)
	}
	if leaderTicks, err = StartTicks(leader); err != nil {
		t.Fatal(err)
	}
	if memberTicks, err = StartTicks(member); err != nil {
		t.Fatal(err)
	}
	return c, leader, leaderTicks, member, memberTicks
}

// printTicksEnv makes the test binary print, for the pid it names, the
// start time StartTicks gives and the one /proc/PID/stat shows, then exit.
const printTicksEnv = "PROCMON_TEST_PRINT_TICKS"

func printTicks(arg string) int {
	pid, err := strconv.Atoi(arg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ticks, err := StartTicks(pid)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b, err := os.ReadFile("/proc/" + arg + "/stat")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	fmt.Println(ticks, f[19])
	return 0
}

// TestStartTicksAcrossTimeNamespaces reads one process's start time from a
// time namespace whose boot-time clock runs 1000 s ahead: /proc shows it
// 1000 s later there, and StartTicks must give the same time as outside,
// or a reader there takes every owner for exited and every guardian for
// gone.
func TestStartTicksAcrossTimeNamespaces(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare(1) from util-linux to enter a time namespace")
	}
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sleep.Process.Kill()
		sleep.Wait()
	}()
	want, err := StartTicks(sleep.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(unshare, "--time", "--boottime", "1000", self)
	cmd.Env = append(os.Environ(), printTicksEnv+"="+strconv.Itoa(sleep.Process.Pid))
	out, err := cmd.CombinedOutput()
	if err != nil {
		if os.Geteuid() != 0 || bytes.Contains(out, []byte("unshare failed")) {
			t.Skipf("cannot enter a time namespace here (needs root and a kernel with CONFIG_TIME_NS): %v: %s", err, out)
		}
		t.Fatalf("%v: %s", err, out)
	}
	var got, shown uint64
	if _, err := fmt.Sscan(string(out), &got, &shown); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if shown != want+1000*state.UserHZ {
		t.Fatalf("/proc showed %d in the namespace, %d outside: the namespace's offset did not apply", shown, want)
	}
	if got != want {
		t.Fatalf("StartTicks in the namespace = %d, outside %d", got, want)
	}
}
