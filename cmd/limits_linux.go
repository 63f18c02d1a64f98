//go:build linux

package cmd

import (
	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
)

// minDescriptors is the fewest file descriptors procmon needs: the Go
// runtime's poller takes two before the first pipe or socket, a start
// holds a dozen at its peak (its guardian's pipes, the state directory
// walked one descriptor at a time, the slot and the record), and a wait a
// few more. Below it a command could die in the runtime's own code, with
// a stack trace and no answer, so it is refused at once instead.
const minDescriptors = 32

// checkLimits refuses to run under a file descriptor limit too low for
// procmon to answer at all. (Go has already raised the soft limit to the
// hard one.)
func checkLimits() *protocol.Error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur >= minDescriptors {
		return nil
	}
	return protocol.Errorf(protocol.CodeInternal, "procmon needs at least %d file descriptors and this process may open %d; raise the limit (ulimit -n %d)", minDescriptors, lim.Cur, minDescriptors).
		With("limit", lim.Cur).With("needed", minDescriptors)
}
