package proc

import (
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPidfdReadableNotOnASignal: a poll of a live process's pidfd that a
// signal interrupts (EINTR) is no exit. The guardian took it for one and
// drained a run's monitors as owner_exited while the owner lived. The
// test signals itself while it polls a child that sleeps.
func TestPidfdReadableNotOnASignal(t *testing.T) {
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { c.Process.Kill(); c.Wait() }()
	fd, err := unix.PidfdOpen(c.Process.Pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			syscall.Kill(os.Getpid(), syscall.SIGURG) // the runtime's own preemption signal: harmless
		}
	}()
	for i := 0; i < 200000; i++ {
		if PidfdReadable(uintptr(fd)) {
			stop.Store(true)
			<-done
			t.Fatalf("poll %d: a live child's pidfd read as exited", i)
		}
	}
	stop.Store(true)
	<-done
	c.Process.Kill()
	c.Wait()
	if !PidfdReadable(uintptr(fd)) {
		t.Fatal("an exited child's pidfd did not read as exited")
	}
}
