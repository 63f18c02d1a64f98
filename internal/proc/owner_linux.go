package proc

import (
	"os"

	"golang.org/x/sys/unix"

	"procmon/internal/state"
)

// watchOwner returns a channel closed when the run's owner exits. The
// pidfd is opened once and checked against the recorded start time, so a
// reused pid can never stand in for the owner.
func watchOwner(o state.Owner) <-chan struct{} {
	gone := make(chan struct{})
	fd, err := unix.PidfdOpen(o.PID, unix.PIDFD_NONBLOCK)
	if err != nil {
		close(gone)
		return gone
	}
	if s, err := readStat(o.PID); err != nil || s.startTicks != o.StartTicks || !s.alive() {
		unix.Close(fd)
		close(gone)
		return gone
	}
	// The pidfd goes to the runtime poller, which wakes when the owner
	// exits: no thread is parked for it. The poller takes only
	// non-blocking descriptors, hence PIDFD_NONBLOCK: with a blocking one
	// the wait returns at once and the owner looks gone.
	f := os.NewFile(uintptr(fd), "owner-pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		close(gone)
		return gone
	}
	go func() {
		defer f.Close()
		defer close(gone)
		rc.Read(PidfdReadable)
	}()
	return gone
}

// PidfdReadable reports whether the process of pidfd fd has exited, or
// its pidfd can no longer be polled. A poll interrupted by a signal
// (EINTR: the runtime preempts with SIGURG) says nothing, and is made
// again: taken for an exit, it drained a run's monitors as owner_exited
// while the owner lived (under the race detector on a busy machine).
func PidfdReadable(fd uintptr) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err != nil || n > 0
	}
}
