package proc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

// The component root is the directory a service was started in (its
// cwd); file waits read files beneath it. A path found again at wait time
// could lead anywhere (the directory renamed and a symlink or another
// directory put in its place), so the guardian opens the root just before
// it spawns the child and holds the descriptor for as long as it keeps
// custody; a waiter gets a copy of it over the control socket, and
// resolves every file beneath that (see wait.CheckFile).
//
// Both sides of control op "root" live in this file:
//
//	waiter                                      guardian
//	  |  connect to control.sock                   |
//	  |  check the peer is the record's guardian   |  check the peer is its user (peerAllowed)
//	  |  {"op":"root"}\n  ----------------------->  |
//	  |  <-----------  {}\n + SCM_RIGHTS(root fd)   |  the held O_PATH descriptor
//	  |  <-----------  {"error":{...}}\n            |  (or why none is held)
//	  |  check: exactly one descriptor, a directory |
//	  |  close                                      |
//
// Once the guardian is gone (the monitor ended, or was lost) nothing can
// hand the root over: a waiter that has no copy by then reads no file.
//
// The guardian opens the root by the path the start resolved, and the
// child changes into that same path a moment later: a directory swapped
// in between would be where the service runs, while waits look beneath
// the directory that was named at the start, never elsewhere.

// componentRoot is the component root held by the guardian.
type componentRoot struct {
	fd  int   // O_PATH|O_DIRECTORY, or -1
	err error // why fd is -1
}

// holdComponentRoot opens the component root at path for the guardian.
// The descriptor is close-on-exec: the child has no use for it.
func holdComponentRoot(path string) *componentRoot {
	for {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &componentRoot{fd: -1, err: fmt.Errorf("open component root %s: %w", path, err)}
		}
		return &componentRoot{fd: fd}
	}
}

// serveRoot answers control op "root" with a copy of the held root.
func (g *guardian) serveRoot(conn *net.UnixConn) {
	var reply controlReply
	var rights []byte
	switch r := g.root; {
	case r == nil:
		reply.Error = &protocol.ErrorBody{Code: protocol.CodeInternal, Message: "the guardian holds no component root"}
	case r.fd < 0:
		reply.Error = &protocol.ErrorBody{Code: protocol.CodeInternal, Message: r.err.Error()}
	default:
		rights = unix.UnixRights(r.fd)
	}
	data, _ := json.Marshal(reply)
	conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	conn.WriteMsgUnix(append(data, '\n'), rights, nil)
}

// errNotTheGuardian means the control socket is not served by the
// guardian the record names.
var errNotTheGuardian = errors.New("the control socket is not served by the monitor's guardian")

// ComponentRoot returns a descriptor (O_PATH) of the component root of
// monitor m, held by its guardian since the start; the caller closes it
// with unix.Close. It gives up when ctx ends or after 10 s, and returns
// errNoGuardian (see IsNoGuardian) when no guardian answers.
func ComponentRoot(ctx context.Context, dir *state.Dir, m *state.Monitor) (int, error) {
	// The descriptor is trusted as the root only from the guardian the
	// record names, alive with its recorded start time (see dialGuardian).
	conn, err := dialGuardian(dir, m)
	if err != nil {
		return -1, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	defer unblockOnDone(ctx, conn)()
	data, _ := json.Marshal(controlRequest{Op: "root"})
	if _, err := conn.Write(append(data, '\n')); err != nil {
		return -1, errNoGuardian
	}
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*4)) // room to see extra descriptors, and close them
	n, oobn, flags, _, err := conn.ReadMsgUnix(buf, oob)
	fds := receivedFDs(oob[:oobn])
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	if err != nil {
		closeAll()
		return -1, fmt.Errorf("read guardian reply: %w", err)
	}
	line := buf[:n]
	if bytes.IndexByte(line, '\n') < 0 {
		// The rest of the line, if it came split; descriptors come with
		// its first byte only.
		rest, err := bufio.NewReaderSize(conn, len(buf)).ReadSlice('\n')
		if err != nil {
			closeAll()
			return -1, fmt.Errorf("read guardian reply: %w", err)
		}
		line = append(line, rest...)
	}
	var reply controlReply
	if err := json.Unmarshal(line, &reply); err != nil {
		closeAll()
		return -1, fmt.Errorf("decode guardian reply: %w", err)
	}
	if reply.Error != nil {
		closeAll()
		return -1, &protocol.Error{Code: reply.Error.Code, Message: reply.Error.Message}
	}
	if flags&unix.MSG_CTRUNC != 0 || len(fds) != 1 {
		closeAll()
		return -1, fmt.Errorf("guardian of %s sent %d descriptors for its component root, want one", m.MonitorID, len(fds))
	}
	var st unix.Stat_t
	if err := unix.Fstat(fds[0], &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		closeAll()
		return -1, fmt.Errorf("guardian of %s sent a component root that is not a directory", m.MonitorID)
	}
	return fds[0], nil
}

// receivedFDs returns every descriptor passed in the control messages oob.
func receivedFDs(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

// peerPID returns the pid of the process that serves conn's other end.
func peerPID(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, credErr
	}
	return int(cred.Pid), nil
}
