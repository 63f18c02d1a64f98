package proc

import (
	"golang.org/x/sys/unix"

	"procmon/internal/state"
)

// watchOwner returns a channel closed when the run's owner exits. The
// pidfd is opened once and checked against the recorded start time, so a
// reused pid can never stand in for the owner.
func watchOwner(o state.Owner) <-chan struct{} {
	gone := make(chan struct{})
	fd, err := unix.PidfdOpen(o.PID, 0)
	if err != nil {
		close(gone)
		return gone
	}
	if s, err := readStat(o.PID); err != nil || s.startTicks != o.StartTicks || !s.alive() {
		unix.Close(fd)
		close(gone)
		return gone
	}
	go func() {
		defer unix.Close(fd)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, -1)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n > 0 {
				close(gone)
				return
			}
		}
	}()
	return gone
}
