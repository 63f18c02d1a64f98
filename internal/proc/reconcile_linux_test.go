package proc

import (
	"os/exec"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/state"
)

// startTree starts a shell that starts a shell that starts sleep, and
// returns the three, top first, once all run. They end with the test,
// proven gone.
func startTree(t *testing.T) []Member {
	t.Helper()
	c := exec.Command("sh", "-c", `sh -c "sleep 1000 & wait" & wait`)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	top, err := StartTicks(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	tree := []Member{{c.Process.Pid, top}}
	for deadline := time.Now().Add(patience); ; time.Sleep(time.Millisecond) {
		below := scanDescendants(c.Process.Pid)
		if len(below) == 2 && below[1].ppid == below[0].pid {
			for _, s := range below {
				tree = append(tree, Member{s.pid, s.startTicks})
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shells started %d processes in %v, want 2", len(below), patience)
		}
	}
	t.Cleanup(func() {
		for _, p := range tree {
			signalExact(procStat{pid: p.PID, startTicks: p.StartTicks}, unix.SIGKILL)
		}
		c.Wait()
		if left := waitGone(tree, time.Now().Add(patience)); len(left) > 0 {
			t.Errorf("%v are still running", left)
		}
	})
	return tree
}

// stoppedOnes lists which of ps are stopped (state T).
func stoppedOnes(ps []Member) []Member {
	var out []Member
	for _, p := range ps {
		if s, err := readStat(p.PID); err == nil && s.startTicks == p.StartTicks && s.state == 'T' {
			out = append(out, p)
		}
	}
	return out
}

// TestFreezeStopsEveryDescendant: given only the top of a tree, a freeze
// stops every process below it, found on the children lists, and says it
// is done.
func TestFreezeStopsEveryDescendant(t *testing.T) {
	tree := startTree(t)
	top := func() []Member { return []Member{tree[0]} }
	f := freeze(top, freezeRounds, time.Now().Add(patience))
	if f.bounded || len(f.running) > 0 || !slices.Equal(f.stopped, tree) {
		t.Fatalf("freeze of %v = %+v: want all of it stopped, top first, and nothing running", tree, f)
	}
	// SIGSTOP is only queued: each stops once it is scheduled.
	for deadline := time.Now().Add(patience); len(stoppedOnes(tree)) < len(tree); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("of %v, only %v stopped in %v", tree, stoppedOnes(tree), patience)
		}
	}
}

// TestFreezeSaysWhenItIsBounded: a freeze that reaches its bound before
// it is done says so, and names what it found but did not stop: a caller
// must not take the tree for ended.
func TestFreezeSaysWhenItIsBounded(t *testing.T) {
	tree := startTree(t)
	top := func() []Member { return []Member{tree[0]} }
	f := freeze(top, 1, time.Now().Add(patience))
	if !f.bounded || !slices.Equal(f.stopped, tree[:1]) || !slices.Equal(f.running, tree[1:]) {
		t.Fatalf("freeze of %v in one round = %+v: want its top stopped, the rest running, and bounded", tree, f)
	}
	f = freeze(top, freezeRounds, time.Now().Add(-time.Second))
	if !f.bounded || len(f.stopped) > 0 || !slices.Equal(f.running, tree[:1]) {
		t.Fatalf("freeze of %v past its deadline = %+v: want nothing stopped, its top running, and bounded", tree, f)
	}
}

// TestReconciledSaysWhatWasDone: the words a reconcile that could not
// store its receipt gives a person, who does not read details.receipt.
func TestReconciledSaysWhatWasDone(t *testing.T) {
	for _, c := range []struct {
		r    state.Receipt
		want string
	}{
		{state.Receipt{Custody: state.CustodyReconciled, GroupEmptyVerified: true,
			Signals: []state.SignalEvent{{Signal: "SIGSTOP", Targets: 2}, {Signal: "SIGKILL", Targets: 2}}}, "sent SIGSTOP to 2, then SIGKILL to 2; nothing is left"},
		{state.Receipt{Custody: state.CustodyReconciled, GroupEmptyVerified: true}, "found nothing left to signal; nothing is left"},
		{state.Receipt{Custody: state.CustodyReconciled, Signals: []state.SignalEvent{{Signal: "SIGKILL", Targets: 1}}}, "sent SIGKILL to 1; what is left was not verified gone"},
		{state.Receipt{Custody: state.CustodyUnverified}, "could not prove what is left of it procmon's, and signalled none of it"},
	} {
		if got := reconciled(&c.r); got != c.want {
			t.Errorf("reconciled(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}
