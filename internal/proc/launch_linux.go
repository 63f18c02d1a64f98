package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

// GuardianArg is the hidden subcommand that runs a guardian.
const GuardianArg = "__guardian"

// PendingGuardian is a guardian process started before its spec is known.
// A Go process takes milliseconds to boot, so the guardian is launched
// first; while it boots, the caller does admission, takes the command
// slot and makes the monitor's directory.
//
// The guardian's stdin carries the spec (Send), then two bytes (Handoff):
// slotDurable once the command slot is durable, and dirDurable once the
// monitor's directory is. The guardian prepares the start from the spec,
// spawns the child only after the first byte and writes the first record
// only after the second. A pipe closed before them stops the start.
type PendingGuardian struct {
	pid        int
	dir        *state.Dir
	monitorID  string
	specW      *os.File
	handR      *os.File
	created    chan struct{} // closed once the directory and the first record's temp file exist
	createdErr error         // why they do not; read after created is closed
	made       chan struct{} // closed once the log is made too and all is durable, or cannot be
	madeErr    error         // why not; read after made is closed
	sent       bool          // Send has written the spec
	done       bool
}

// The bytes that follow the spec on the guardian's stdin.
const (
	slotDurable = 'g' // the command slot is durable: the child may be spawned
	dirDurable  = 'd' // the directory is durable: the record may be written
)

// StartGuardian starts a detached guardian for monitorID in dir and makes
// the monitor's directory in the background. The guardian waits for its
// spec. It runs in its own session and lets go of the caller's stdio at
// the handoff, so the caller may exit or be killed without touching the
// service.
func StartGuardian(dir *state.Dir, monitorID string) (*PendingGuardian, error) {
	if err := state.ValidMonitorID(monitorID); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	specR, specW, err := blockingPipe()
	if err != nil {
		return nil, fmt.Errorf("create spec pipe: %w", err)
	}
	defer specR.Close()
	handR, handW, err := blockingPipe()
	if err != nil {
		specW.Close()
		return nil, fmt.Errorf("create handoff pipe: %w", err)
	}
	defer handW.Close()
	closeStraysOnExec()
	// syscall.ForkExec rather than os.StartProcess: the caller only ever
	// waits for its own unreaped child, whose pid cannot be reused, and it
	// skips the pidfd self-test os runs before its first spawn.
	pid, err := syscall.ForkExec(exe, []string{"procmon", GuardianArg, dir.Path, monitorID}, &syscall.ProcAttr{
		Dir: "/",
		// Two Ps until the guardian settles (then one), so that the
		// monitor's files are opened and the redactor compiled while the
		// child is spawned. (Three measured no faster, and every thread a
		// guardian starts stays with it for its life.)
		Env: []string{"GOMAXPROCS=2"},
		// Until the handoff the guardian's stderr is the caller's, so
		// whatever stops a start is shown where the caller looks.
		Files: []uintptr{specR.Fd(), handW.Fd(), os.Stderr.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		specW.Close()
		handR.Close()
		return nil, fmt.Errorf("start guardian: %w", err)
	}
	pg := &PendingGuardian{pid: pid, dir: dir, monitorID: monitorID, specW: specW, handR: handR,
		created: make(chan struct{}), made: make(chan struct{})}
	go func() {
		defer close(pg.made)
		pg.createdErr = dir.CreateMonitorDir(monitorID)
		close(pg.created)
		if pg.createdErr != nil {
			pg.madeErr = pg.createdErr
			return
		}
		if pg.madeErr = makeLog(dir, monitorID); pg.madeErr == nil {
			pg.madeErr = dir.SyncMonitorDir(monitorID)
		}
	}()
	return pg, nil
}

// blockingPipe is os.Pipe without the runtime's poller: the launcher
// only ever blocks on its ends (and hands the others to the guardian),
// and os.Pipe would set up the poller and register both ends with it, at
// a cost to every start measured in rotated A/B runs (0.2 to 0.3 ms).
func blockingPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}

// closeRangeCloexec is CLOSE_RANGE_CLOEXEC of linux/close_range.h.
const closeRangeCloexec = 1 << 2

// closeStraysOnExec marks every descriptor above stderr close-on-exec.
// Go opens its own that way, but a caller may hand procmon others (a
// shell's 3>&1, make's jobserver pipe): a guardian or service holding one
// would keep a caller's pipeline waiting for as long as the service runs.
func closeStraysOnExec() {
	if unix.CloseRange(3, ^uint(0), closeRangeCloexec) == nil {
		return
	}
	// Before Linux 5.11: one by one.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
}

// makeLog makes the monitor's empty output log, which the guardian opens
// once it is told the directory is durable. (The guardian makes its own
// log after the handoff: nothing is written to it before.)
func makeLog(dir *state.Dir, monitorID string) error {
	f, err := os.OpenFile(filepath.Join(dir.MonitorDir(monitorID), state.LogName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", state.LogName, err)
	}
	return f.Close()
}

// wait reaps the guardian once it has exited.
func (pg *PendingGuardian) wait() {
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(pg.pid, &ws, 0, nil); err != unix.EINTR {
			return
		}
	}
}

// Abandon sends no spec: the guardian exits, Abandon waits for it and
// removes the monitor's directory, so a refused start leaves no guardian
// and no directory behind. After Handoff it does nothing.
func (pg *PendingGuardian) Abandon() {
	if pg.done {
		return
	}
	pg.done = true
	<-pg.made
	pg.specW.Close()
	pg.handR.Close()
	pg.wait()
	pg.dir.RemoveMonitorDir(pg.monitorID)
}

// Send sends the spec once the monitor's directory exists; the guardian
// prepares the start from it but spawns nothing before Handoff. It may be
// called before the command slot in the spec is durable. After an error,
// Abandon cleans up.
func (pg *PendingGuardian) Send(spec Spec) error {
	if <-pg.created; pg.createdErr != nil {
		return pg.createdErr
	}
	data, err := spec.MarshalBinary()
	if err == nil {
		_, err = pg.specW.Write(data)
	}
	if err != nil {
		return fmt.Errorf("send spec to guardian: %w", err)
	}
	pg.sent = true
	return nil
}

// Handoff tells the guardian sent its spec that the command slot is
// durable, then that the directory is, and returns once the guardian has
// durably recorded the running handoff, or with the error that stopped it
// (exec_failed, nonreaping_unavailable, ...).
func (pg *PendingGuardian) Handoff() (*state.Monitor, error) {
	if !pg.sent {
		return nil, errors.New("handoff before the spec was sent")
	}
	pg.done = true
	defer pg.handR.Close()
	_, tellErr := pg.specW.Write([]byte{slotDurable})
	if <-pg.made; pg.madeErr == nil && tellErr == nil {
		_, tellErr = pg.specW.Write([]byte{dirDurable})
	}
	pg.specW.Close()
	// Read as soon as it is written (the guardian lets go of the pipe only
	// after it), by a blocking read: the kernel wakes this thread itself.
	h, err := readHandoff(bufio.NewReader(pg.handR))
	if err != nil {
		h.Error = &protocol.ErrorBody{Code: protocol.CodeInternal, Message: "read guardian handoff: " + err.Error()}
	}
	if h.Monitor == nil {
		// No running handoff: the guardian is exiting. Wait for it, so a
		// failed start provably leaves no guardian behind; it has removed
		// what it made, and this removes the rest.
		pg.wait()
		pg.dir.RemoveMonitorDir(pg.monitorID)
		switch {
		case h.Error != nil && (pg.madeErr == nil || h.Error.Message != errNotDurable.Error()):
			// What stopped the guardian. (A guardian that failed on its
			// own removed the directory, which may have failed the
			// launcher's making of it too.)
			return nil, &protocol.Error{Code: h.Error.Code, Message: h.Error.Message, Details: h.Error.Details}
		case pg.madeErr != nil: // the guardian stopped because of it
			return nil, pg.madeErr
		case tellErr != nil:
			return nil, fmt.Errorf("hand off to the guardian: %w", tellErr)
		}
		return nil, protocol.Errorf(protocol.CodeInternal, "guardian of %s exited before the running handoff; its stderr (above) says why", pg.monitorID)
	}
	// The guardian outlives this process; it is never waited for.
	return h.Monitor, nil
}
