package proc

import (
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// childInfo is siginfo_t as waitid fills it for SIGCHLD: x/sys/unix keeps
// the pid and status private, so the layout is spelled out here.
type childInfo struct {
	Signo  int32
	Errno  int32
	Code   int32
	_      int32
	Pid    int32
	UID    uint32
	Status int32
	_      [100]byte
}

var _ [128 - unsafe.Sizeof(childInfo{})]byte // siginfo_t is 128 bytes

// waitid calls waitid(2) with the full siginfo result.
func waitid(idtype, id, options int, info *childInfo) error {
	for {
		_, _, errno := unix.Syscall6(unix.SYS_WAITID, uintptr(idtype), uintptr(id),
			uintptr(unsafe.Pointer(info)), uintptr(options), 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return errno
		}
		return nil
	}
}

// probeNonReaping checks that waitid accepts WNOWAIT, which custody depends
// on: the guardian must see its child's exit without reaping it, so the
// pid (and so the group id) cannot be reused while it signals the group.
func probeNonReaping() error {
	var info childInfo
	err := waitid(unix.P_ALL, 0, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, &info)
	if err == nil || err == unix.ECHILD {
		return nil
	}
	return err
}

// noChildren reports whether the calling process has no child at all,
// running or zombie: the one answer a subreaper can trust that nothing it
// started is left.
func noChildren() bool {
	var info childInfo
	return waitid(unix.P_ALL, 0, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, &info) == unix.ECHILD
}

// reapAll reaps every exited child. It is used only once the service's
// own child is reaped, so it can take any child the kernel offers.
func reapAll() {
	for {
		var info childInfo
		if err := waitid(unix.P_ALL, 0, unix.WEXITED|unix.WNOHANG, &info); err != nil || info.Pid == 0 {
			return
		}
	}
}

// si_code values of a SIGCHLD siginfo (asm-generic/siginfo.h).
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// exitStatus is how the child ended, as waitid reported it.
type exitStatus struct {
	exitCode *int
	signal   *string
	atMs     int64
}

func decodeExit(info *childInfo, atMs int64) exitStatus {
	st := int(info.Status)
	switch info.Code {
	case cldExited:
		return exitStatus{exitCode: &st, atMs: atMs}
	default: // CLD_KILLED, CLD_DUMPED
		name := unix.SignalName(unix.Signal(st))
		if name == "" {
			name = "signal " + strconv.Itoa(st)
		}
		return exitStatus{signal: &name, atMs: atMs}
	}
}
