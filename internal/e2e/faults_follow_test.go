//go:build faultpoints

package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFaultsFollowSaysCustodyLapsed: logs --follow of a monitor whose
// guardian is stopped says once, on stderr, that custody lapsed and how
// to settle it, where it used to wait without a word for as long as the
// guardian stayed stopped; resumed, the guardian drains, and the follow
// ends with the monitor.
func TestFaultsFollowSaysCustodyLapsed(t *testing.T) {
	l := newFaultLab(t, 2, 20)
	id, m := l.startMonitor("", "start", "--", "sleeper")
	var stderr lockedBuffer
	follow := l.command("", "logs", "-f", id)
	follow.Stderr = &stderr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- follow.Wait() }()
	l.stopGuardian(id, m)
	l.awaitLapse(id)
	awaitLapseSaid(t, id, follow, ended, &stderr, patience, "of the lapse")
	resumeAndAwaitEnd(t, m, follow, ended, &stderr)
	l.settle()
}

// TestFaultsFollowGuardianStoppedBeforeWatch: a guardian stopped after
// logs --follow showed the tail, and before it subscribed to the
// guardian's notices, holds the follow no longer than its custody holds:
// the follow says that custody lapsed while the guardian is still
// stopped, where a subscription without a bound waited 10 s for the
// stopped guardian's answer. Resumed, the guardian drains, and the follow
// ends with the monitor.
func TestFaultsFollowGuardianStoppedBeforeWatch(t *testing.T) {
	// A window of 3 s is still current when the follow goes on: it asks
	// the stopped guardian.
	l := newFaultLab(t, 3, 20)
	id, m := l.startMonitor("", "start", "--", "sleeper")
	awaitLogBytes(t, l.state, id, int64(len("sleeper ready\n")))
	var stdout, stderr lockedBuffer
	follow := l.command("logs:before_watch", "logs", "-f", id)
	follow.Stdout, follow.Stderr = &stdout, &stderr
	ended := startFollow(t, follow)
	if err := awaitStopped(follow.Process.Pid); err != nil {
		follow.Process.Kill()
		<-ended
		t.Fatalf("logs -f at logs:before_watch: %v", err)
	}
	// The tail was written before the follow stopped itself, but the copy
	// of its pipe into stdout may lag behind: under load (a soak) it had
	// not reached the buffer when the stop was seen.
	for deadline := time.Now().Add(patience); len(stdout.String()) < len("sleeper ready\n") && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if got := stdout.String(); got != "sleeper ready\n" {
		unix.Kill(follow.Process.Pid, unix.SIGCONT)
		follow.Process.Kill()
		<-ended
		t.Fatalf("logs -f showed %q before it watched; want the tail, %q", got, "sleeper ready\n")
	}
	l.stopGuardian(id, m)
	unix.Kill(follow.Process.Pid, unix.SIGCONT)
	awaitLapseSaid(t, id, follow, ended, &stderr, followBeforeSocketDeadline, "of subscribing to a stopped guardian whose window is 3s")
	resumeAndAwaitEnd(t, m, follow, ended, &stderr)
	l.settle()
}

// awaitLapseSaid waits, at most within, for the follow of monitor id,
// whose guardian is stopped, to say on stderr that custody lapsed; since
// is what within counts from, for the failure's message. The follow must
// not end meanwhile.
func awaitLapseSaid(t *testing.T, id string, follow *exec.Cmd, ended <-chan error, stderr *lockedBuffer, within time.Duration, since string) {
	t.Helper()
	for deadline := time.Now().Add(within); !strings.Contains(stderr.String(), "procmon reconcile "+id); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-ended:
			t.Fatalf("logs -f ended (%v) while the guardian was stopped; stderr %q", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			follow.Process.Kill()
			<-ended
			t.Fatalf("logs -f said %q within %v %s; want the lapse", stderr.String(), within, since)
		}
	}
}
