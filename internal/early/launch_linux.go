package early

import (
	"os"
	"strconv"
	"sync/atomic"
	"syscall"

	"procmon/internal/fault"
	"procmon/internal/ids"
)

// init starts, in a guardian, the catching of its signals, and for
// "procmon start ..." launches its guardian.
func init() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case GuardianArg:
		CatchSignals()
	case "start":
		launchForStart(os.Args[2:])
	}
}

// launched is the guardian init launched for this start, until taken.
var launched atomic.Pointer[Guardian]

// TakeLaunched returns the guardian launched before main for this
// "procmon start", or nil if none was. Only the first call returns it:
// its taker owns it.
func TakeLaunched() *Guardian {
	return launched.Swap(nil)
}

// AbandonLaunched abandons the guardian launched before main, unless it
// was taken (see Guardian.Abandon).
func AbandonLaunched() {
	if g := TakeLaunched(); g != nil {
		g.Abandon()
	}
}

// launchForStart launches the guardian of "procmon start ARGS..." unless
// the command line asks for help, or the state directory is not made yet
// (making one is the command's to do, with its checks).
func launchForStart(args []string) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" {
			return
		}
	}
	dir, err := StateDir(os.Getenv)
	if err != nil {
		return
	}
	if fi, err := os.Lstat(dir + "/monitors"); err != nil || !fi.IsDir() { // state.Open makes it
		return
	}
	if g, err := LaunchGuardian(dir, ids.NewID("m_")); err == nil {
		launched.Store(g)
	}
}

// Guardian is a guardian process launched before its spec is known: it
// boots and waits for the spec on Spec. The launcher reads the guardian's
// handoff on Handoff.
type Guardian struct {
	PID       int
	StateDir  string
	MonitorID string
	Spec      *os.File // write end of the guardian's stdin
	Handoff   *os.File // read end of the guardian's stdout
}

// LaunchGuardian starts "procmon __guardian STATE_DIR MONITOR_ID" from
// this process's own executable, detached: in its own session, in /, with
// nothing of the caller's environment (see guardianEnv). Until its
// handoff the guardian's
// stderr is the caller's, so whatever stops a start is shown where the
// caller looks.
func LaunchGuardian(stateDir, monitorID string) (*Guardian, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, &opError{"find own executable", err}
	}
	var spec, handoff [2]int
	if err := syscall.Pipe2(spec[:], syscall.O_CLOEXEC); err != nil {
		return nil, &opError{"create spec pipe", err}
	}
	if err := syscall.Pipe2(handoff[:], syscall.O_CLOEXEC); err != nil {
		syscall.Close(spec[0])
		syscall.Close(spec[1])
		return nil, &opError{"create handoff pipe", err}
	}
	closeStraysOnExec()
	// syscall.ForkExec rather than os.StartProcess: the launcher only ever
	// waits for its own unreaped child, whose pid cannot be reused, and it
	// skips the pidfd self-test os runs before its first spawn.
	pid, err := syscall.ForkExec(exe, []string{"procmon", GuardianArg, stateDir, monitorID}, &syscall.ProcAttr{
		Dir:   "/",
		Env:   guardianEnv(),
		Files: []uintptr{uintptr(spec[0]), uintptr(handoff[1]), 2},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	syscall.Close(spec[0])
	syscall.Close(handoff[1])
	if err != nil {
		syscall.Close(spec[1])
		syscall.Close(handoff[0])
		return nil, &opError{"start guardian", err}
	}
	// Plain blocking files, outside the runtime's poller: the launcher only
	// ever blocks on them, and registering them would cost every start
	// (0.2 to 0.3 ms, measured in rotated A/B runs).
	return &Guardian{
		PID:       pid,
		StateDir:  stateDir,
		MonitorID: monitorID,
		Spec:      os.NewFile(uintptr(spec[1]), "|spec"),
		Handoff:   os.NewFile(uintptr(handoff[0]), "|handoff"),
	}, nil
}

// guardianEnv is the guardian's whole environment: nothing of the
// caller's but GORACE, which only a race-built procmon reads (the tests
// run one), and what the fault tests need (see package fault).
func guardianEnv() []string {
	// Two Ps until the guardian settles (then one), so that the
	// monitor's files are opened (and any secrets compiled into the
	// redactor) while the child is spawned: one P measured 0.3 ms
	// slower a start, three no faster, and a guardian keeps almost
	// every thread it starts for its life.
	env := []string{"GOMAXPROCS=2"}
	if v, ok := os.LookupEnv("GORACE"); ok {
		env = append(env, "GORACE="+v)
	}
	return append(env, fault.Env()...)
}

// Wait reaps the guardian once it has exited.
func (g *Guardian) Wait() syscall.WaitStatus {
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(g.PID, &ws, 0, nil); err != syscall.EINTR {
			return ws
		}
	}
}

// Abandon closes the pipes before any spec is sent, so that the guardian
// exits, and waits for it.
func (g *Guardian) Abandon() {
	g.Spec.Close()
	g.Handoff.Close()
	g.Wait()
}

// closeRangeCloexec is CLOSE_RANGE_CLOEXEC of linux/close_range.h, and
// sysCloseRange close_range(2)'s number, the same on every architecture.
const (
	closeRangeCloexec = 1 << 2
	sysCloseRange     = 436
)

// closeStraysOnExec marks every descriptor above stderr close-on-exec.
// Go opens its own that way, but a caller may hand procmon others (a
// shell's 3>&1, make's jobserver pipe): a guardian or service holding one
// would keep a caller's pipeline waiting for as long as the service runs.
func closeStraysOnExec() {
	if _, _, errno := syscall.Syscall(sysCloseRange, 3, ^uintptr(0), closeRangeCloexec); errno == 0 {
		return
	}
	// Before Linux 5.11: one by one.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_SETFD, syscall.FD_CLOEXEC)
		}
	}
}

// opError says what launching was doing when err stopped it. (fmt would
// pull in reflection, and with it a later init: see the package comment.)
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }
