//go:build faultpoints

package fault

import (
	"os"
	"strconv"
	"strings"
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

// clockEnv names a file holding how many milliseconds the wall clock is
// stepped by, which a test rewrites to step it for the processes that read
// it (a guardian and the commands beside it) as NTP or date -s would.
const clockEnv = "PROCMON_FAULT_CLOCK"

var clockFile = os.Getenv(clockEnv)

// WallStepMs is how far the test has stepped the wall clock: the number in
// $PROCMON_FAULT_CLOCK's file, read at each call, or 0.
func WallStepMs() int64 {
	if clockFile == "" {
		return 0
	}
	b, err := os.ReadFile(clockFile)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// Env passes $PROCMON_FAULT_AT and $PROCMON_FAULT_CLOCK on to a guardian,
// whose environment is otherwise made from nothing.
func Env() []string {
	var env []string
	if at != "" {
		env = append(env, envName+"="+at)
	}
	if clockFile != "" {
		env = append(env, clockEnv+"="+clockFile)
	}
	return env
}
