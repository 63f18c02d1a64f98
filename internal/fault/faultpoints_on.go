//go:build faultpoints

package fault

import (
	"os"
	"syscall"
)

const envName = "PROCMON_FAULT_AT"

var at = os.Getenv(envName)

// Point stops this process with SIGSTOP when it is the point named by
// $PROCMON_FAULT_AT; it goes on once the test sends SIGCONT, if it ever
// does.
func Point(name string) {
	if name == at {
		// Sent to this thread, which so stops before it returns to run
		// another instruction; sent to the process, it might be taken by
		// another thread while this one runs on past the point.
		syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
	}
}

// Env passes $PROCMON_FAULT_AT on to a guardian, whose environment is
// otherwise made from nothing.
func Env() []string {
	if at == "" {
		return nil
	}
	return []string{envName + "=" + at}
}
