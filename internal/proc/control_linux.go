package proc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

// controlRequest is one request on a guardian's private control socket.
// No operation takes a text of the caller's: the guardian holds the
// service's secrets, and no answer it gives may depend on them (an answer
// that redacted a caller's text would let any process of the user guess a
// secret one character at a time).
type controlRequest struct {
	Op      string `json:"op"` // "cancel", "ping", "root" or "watch"
	GraceMs int64  `json:"grace_ms,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// controlReply answers a control request.
type controlReply struct {
	Receipt *state.Receipt `json:"receipt,omitempty"`
	Phase   string         `json:"phase,omitempty"`
	// Captured, Logged, Lost and LogError are the live output counters.
	Captured int64  `json:"captured,omitempty"`
	Logged   int64  `json:"logged,omitempty"`
	Lost     int64  `json:"lost,omitempty"`
	LogError string `json:"log_error,omitempty"`
	// Held is how many bytes of output the redactor holds back.
	Held int64 `json:"held,omitempty"`
	// CustodyLeftMs is how long the ownership window the guardian last
	// renewed has to run, which a record that could not be written lacks;
	// StateError says why it could not. Time left, not an end: the reader
	// may be in another time namespace, or read the wall clock after a
	// step. CustodyUntilMs is the window's end on the wall clock as a
	// guardian of an earlier procmon answers it.
	CustodyLeftMs  int64               `json:"custody_left_ms,omitempty"`
	CustodyUntilMs int64               `json:"custody_until_ms,omitempty"`
	StateError     string              `json:"state_error,omitempty"`
	Error          *protocol.ErrorBody `json:"error,omitempty"`
}

// controlServer is the guardian's end of the socket. The socket lives in
// the monitor's 0700 directory, is created 0600, and a peer must also be
// the guardian's own user (or root).
type controlServer struct {
	l     *net.UnixListener
	dirFD int
	// conns has a slot for each connection the guardian may hold, and
	// watches one for each that may be a watch (see connectionSlots);
	// held counts the connections that hold a slot.
	conns, watches chan struct{}
	held           atomic.Int32
}

// awaitFirstByte waits, until conn's read deadline, for a byte (or the
// caller's hang-up) to arrive, without reading it; it reports whether one
// did. A byte that arrived in time counts even when the guardian comes to
// look only after the deadline.
func awaitFirstByte(conn *net.UnixConn) bool {
	raw, err := conn.SyscallConn()
	if err != nil {
		return false
	}
	arrived := func(fd uintptr) bool {
		var b [1]byte
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		return err != unix.EAGAIN
	}
	if raw.Read(arrived) == nil {
		return true
	}
	ok := false
	raw.Control(func(fd uintptr) { ok = arrived(fd) })
	return ok
}

// custodyDescriptors is how many descriptors a guardian keeps for its
// custody, whatever its callers hold open: a drain takes a pidfd and a
// /proc directory at a time for each member it signals, and a record's
// write the state directory walked a descriptor at a time, the lock, the
// stored record and the temp file.
const custodyDescriptors = 16

// maxControlConns bounds the connections a guardian holds at once.
const maxControlConns = 256

// connectionSlots says how many control connections the guardian may hold
// at once, and how many of them may be watches: those its descriptor
// limit leaves once custody has its share, two at least (a cancel, a
// ping), and all but two for watches (a wait whose watch is turned away
// watches the monitor's directory instead). Without a bound, a few dozen
// waits under ulimit -n 32 left a guardian no descriptor to write its
// receipt with or to signal a member through: the cancel found it gone
// without one, and a child that had left the service's session ran on.
func connectionSlots() (conns, watches int) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 2, 0
	}
	open, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 2, 0
	}
	n := int(min(lim.Cur, 1<<20)) - len(open) - custodyDescriptors
	conns = min(max(n, 2), maxControlConns)
	return conns, conns - 2
}

// socketPath names a file in dir through /proc/self/fd, which keeps the
// address short however deep the state directory is (sun_path is 108 bytes).
func socketPath(dirFD int) string {
	return fmt.Sprintf("/proc/self/fd/%d/%s", dirFD, state.ControlName)
}

// listen binds the control socket through a descriptor of the monitor's
// directory, reached and checked one component at a time: a link planted
// in place of the directory does not take the socket elsewhere.
func (g *guardian) listen() (*controlServer, error) {
	fd, err := g.dir.OpenMonitorDir(g.monitorID)
	if err != nil {
		return nil, err
	}
	l, err := listenUnix(socketPath(fd))
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("listen on control socket: %w", err)
	}
	return &controlServer{l: l, dirFD: fd}, nil
}

// controlBacklog bounds the connections waiting to be accepted; a
// guardian serves a handful at a time.
const controlBacklog = 64

// listenUnix listens on a new socket at path, created 0600, made with the
// socket calls themselves: net.ListenUnix would also read the system's
// backlog limit from /proc, which costs every start about 0.1 ms. The
// listener does not remove the socket when closed (close does).
func listenUnix(path string) (*net.UnixListener, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	old := unix.Umask(0o177)
	err = unix.Bind(fd, &unix.SockaddrUnix{Name: path})
	unix.Umask(old)
	if err == nil {
		err = unix.Listen(fd, controlBacklog)
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	l, err := net.FileListener(f)
	f.Close() // the listener holds a duplicate
	if err != nil {
		return nil, err
	}
	return l.(*net.UnixListener), nil
}

// serve accepts a connection whenever it has a slot for one: the others
// wait in the socket's backlog. The slots are counted once the guardian
// holds what it keeps through custody (the service's pipe and pidfd, the
// log).
func (s *controlServer) serve(g *guardian) {
	conns, watches := connectionSlots()
	s.conns, s.watches = make(chan struct{}, conns), make(chan struct{}, watches)
	for {
		s.conns <- struct{}{}
		conn, err := s.l.AcceptUnix()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// Out of descriptors, most likely: the socket must outlive it,
			// or cancel could never reach this guardian again.
			<-s.conns
			fmt.Fprintf(os.Stderr, "guardian: accept: %v\n", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		g.handlers.Add(1)
		s.held.Add(1)
		go func() {
			defer g.handlers.Done()
			defer func() { s.held.Add(-1); <-s.conns }()
			defer conn.Close()
			g.handle(conn)
		}()
	}
}

// crowded reports whether every connection slot is held by a
// connection, so that a caller may be waiting in the backlog. (The accept
// loop takes a slot before each accept: len(conns) counts that one too.)
func (s *controlServer) crowded() bool {
	return int(s.held.Load()) >= cap(s.conns)
}

func (s *controlServer) close() {
	unix.Unlinkat(s.dirFD, state.ControlName, 0)
	s.l.Close()
	unix.Close(s.dirFD)
}

func peerAllowed(conn *net.UnixConn) bool {
	raw, err := conn.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil || cred == nil {
		return false
	}
	return cred.Uid == 0 || int(cred.Uid) == os.Geteuid()
}

// requestPatience is how long a connection that has sent nothing may
// hold one of the guardian's slots while every slot is taken. procmon
// writes its request as soon as it connects; a caller stopped in between
// must not keep a reader's ping waiting for a slot past askPatience.
// While slots are free such a caller costs nobody anything, and is given
// requestDeadline: with 300 guardians on two cores, a run end starved
// between its connection and its request for half a second found the
// connection dropped, and its cancel failed. What counts is whether a
// byte has arrived, not whether the guardian has read it (a guardian
// starved past the deadline comes to a request that was there in time).
const (
	requestPatience = 500 * time.Millisecond
	requestDeadline = 10 * time.Second
)

func (g *guardian) handle(conn *net.UnixConn) {
	if !peerAllowed(conn) {
		return
	}
	accepted := time.Now()
	for {
		conn.SetReadDeadline(time.Now().Add(requestPatience))
		if awaitFirstByte(conn) {
			break
		}
		if g.ctl.crowded() || time.Since(accepted) > requestDeadline {
			return
		}
	}
	conn.SetReadDeadline(accepted.Add(requestDeadline))
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return
	}
	conn.SetReadDeadline(time.Time{})
	var req controlRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return
	}
	var reply controlReply
	switch req.Op {
	case "ping":
		reply.Phase = state.PhaseRunning
		if g.receipt.Load() != nil {
			reply.Phase = state.PhaseTerminal
		} else if g.draining.Load() {
			reply.Phase = state.PhaseSettling
		}
		reply.Captured = g.out.captured.Load()
		reply.Logged = g.out.logBytes.Load()
		reply.Lost = g.out.lost.Load()
		reply.Held = g.out.held.Load()
		if e := g.out.logErr.Load(); e != nil {
			reply.LogError = *e
		}
		if g.custodyOpen() {
			reply.CustodyLeftMs = g.custodyUntil.Load() - state.MonoNowMs()
		}
		if e := g.stateErr.Load(); e != nil {
			reply.StateError = *e
		}
		reply.Receipt = g.receipt.Load()
	case "watch":
		select {
		case g.ctl.watches <- struct{}{}:
			defer func() { <-g.ctl.watches }()
			g.serveWatch(conn)
		default:
			// Turned away without its acknowledgement: the wait watches
			// the monitor's directory instead.
		}
		return
	case "root":
		g.serveRoot(conn)
		return
	case "cancel":
		select {
		case g.cancels <- cancelRequest{graceMs: req.GraceMs, reason: req.Reason}:
		default: // a drain is already asked for; its grace stands
		}
		<-g.receipted
		reply.Receipt = g.receipt.Load()
		if e := g.stateErr.Load(); e != nil {
			reply.StateError = *e
		}
	default:
		reply.Error = &protocol.ErrorBody{Code: protocol.CodeInvalidRequest, Message: "unknown control op " + req.Op}
	}
	data, _ := json.Marshal(reply)
	conn.Write(append(data, '\n'))
}

// dialGuardian connects to the control socket of monitor m's guardian,
// or returns errNoGuardian. Whatever answers there must be the guardian
// the record names, alive with its recorded start time (its peer
// credentials say so): a socket planted in the monitor's directory, or
// left by a guardian whose pid now names another process, answers
// nothing procmon would trust, a receipt least of all.
func dialGuardian(dir *state.Dir, m *state.Monitor) (*net.UnixConn, error) {
	fd, err := unix.Open(dir.MonitorDir(m.MonitorID), unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, errNoGuardian
	}
	defer unix.Close(fd)
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: socketPath(fd), Net: "unix"})
	if err != nil {
		return nil, errNoGuardian
	}
	if pid, err := peerPID(conn); err != nil || pid != m.GuardianPID || !Matches(pid, m.GuardianStartTicks) {
		conn.Close()
		return nil, errNotTheGuardian
	}
	return conn, nil
}

// unblockOnDone ends every read and write on conn once ctx ends; call the
// function it returns when done with conn.
func unblockOnDone(ctx context.Context, conn *net.UnixConn) (stop func() bool) {
	return context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
}

// errNoGuardian means the control socket has no live guardian behind it.
var errNoGuardian = errors.New("guardian is not answering on its control socket")

// ask sends one control request to monitor m's guardian and returns its
// reply, waiting for it until timeout passes.
func ask(dir *state.Dir, m *state.Monitor, req controlRequest, timeout time.Duration) (*controlReply, error) {
	return askUntil(context.Background(), dir, m, req, time.Now().Add(timeout))
}

// askUntil is ask bounded by ctx and by deadline (none when zero).
func askUntil(ctx context.Context, dir *state.Dir, m *state.Monitor, req controlRequest, deadline time.Time) (*controlReply, error) {
	conn, err := dialGuardian(dir, m)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(deadline)
	defer unblockOnDone(ctx, conn)()
	data, _ := json.Marshal(req)
	if _, err := conn.Write(append(data, '\n')); err != nil {
		return nil, errNoGuardian
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("read guardian reply: %w", err)
	}
	var reply controlReply
	if err := json.Unmarshal(line, &reply); err != nil {
		return nil, fmt.Errorf("decode guardian reply: %w", err)
	}
	if reply.Error != nil {
		return nil, &protocol.Error{Code: reply.Error.Code, Message: reply.Error.Message}
	}
	return &reply, nil
}

// RequestDrain asks a monitor's guardian to drain for reason with the given
// grace and waits for its receipt, durable unless the reply's StateError
// says why not yet, until ctx ends. It returns errNoGuardian when no
// guardian answers. How long a guardian is waited for is the caller's to
// judge, by its custody (see awaitDrain): a fixed bound would either cut
// short a drain whose window covers it, or hold a caller long after a
// stopped guardian has lost custody.
func RequestDrain(ctx context.Context, dir *state.Dir, m *state.Monitor, graceMs int64, reason string) (*controlReply, error) {
	reply, err := askUntil(ctx, dir, m, controlRequest{Op: "cancel", GraceMs: graceMs, Reason: reason}, time.Time{})
	if err != nil {
		return nil, err
	}
	if reply.Receipt == nil {
		return nil, protocol.Errorf(protocol.CodeInternal, "guardian of %s replied without a receipt", m.MonitorID)
	}
	return reply, nil
}

// awaitDrain asks the guardian of o, just observed in custody, to drain,
// and waits for its reply while custody holds as a status would show it:
// the monitor is looked at again when the ownership window the record
// shows ends, and every custodyRecheck meanwhile. A look that shows it
// terminal or needing reconciliation ends the wait with that observation
// (seen), unless the reply came with it: a guardian stopped before it
// takes the drain, or in the middle of it, lets its window lapse, and one
// stopped once it has stored its receipt has the receipt show. Nothing is
// signalled on that account: the guardian, should it run again, finds its
// window lapsed and drains (heartbeat_missed), or finishes its drain, and
// only reconcile stops what a guardian lost. The reply is awaited for as
// long as custody holds, with no other bound: a long grace, or a drain
// that waits out members stuck in the kernel, has a window that covers it.
func awaitDrain(dir *state.Dir, o *Observation, graceMs int64, reason string) (reply *controlReply, seen *Observation, err error) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	type answer struct {
		reply *controlReply
		err   error
	}
	answered := make(chan answer, 1)
	go func() {
		reply, err := RequestDrain(ctx, dir, o.Monitor, graceMs, reason)
		answered <- answer{reply, err}
	}()
	look := time.NewTimer(untilLapse(o.Monitor))
	defer look.Stop()
	for {
		select {
		case a := <-answered:
			return a.reply, nil, a.err
		case <-look.C:
		}
		again, err := Observe(dir, o.Monitor.MonitorID)
		if err == nil && (again.Terminal() || again.Status == state.StatusNeedsReconciliation) {
			stop()
			if a := <-answered; a.err == nil {
				return a.reply, nil, nil // it came as the look ended custody
			}
			return nil, again, nil
		}
		if err == nil {
			o = again
		}
		look.Reset(untilLapse(o.Monitor))
	}
}

// custodyRecheck is how often a cancel looks at custody while it waits
// for the guardian's reply, whatever the window: a guardian stopped once
// it has stored its receipt is then found out well before the window of
// a long drain ends, as is a record whose window lags behind its
// guardian's (a full disk: the look asks the guardian).
const custodyRecheck = 2 * time.Second

// untilLapse is how long until m's ownership window, as the record shows
// it, has lapsed (a millisecond past its end, as WindowLapsed judges),
// or custodyRecheck if that is sooner. A window already past was looked at
// by asking the guardian, which answered that it holds custody: looking
// again at once would only ask it again.
func untilLapse(m *state.Monitor) time.Duration {
	left := m.WindowLeftMs(nowMs(), state.MonoNowMs())
	if left < 0 {
		return custodyRecheck
	}
	return min(time.Duration(left+1)*time.Millisecond, custodyRecheck)
}

// IsNoGuardian reports whether err means no guardian (none that the
// record names) answered.
func IsNoGuardian(err error) bool {
	return errors.Is(err, errNoGuardian) || errors.Is(err, errNotTheGuardian)
}

// Live is what a live guardian tells beyond its record's counters.
type Live struct {
	// StateError is what stops the guardian from writing the record.
	StateError string
	// Held is how many bytes of the output the redactor holds back: the
	// last ones the service wrote, which may begin a credential, and
	// which are stored (as themselves or redacted) once more output
	// decides them or the output ends. A wait for text among them does
	// not see it until then.
	Held int64
}

// LiveCounters refreshes a live monitor's output counters from its
// guardian; the record's copy is only as fresh as the last heartbeat.
// A guardian that does not answer within 2 s, or before ctx ends, leaves
// the record's values, and tells nothing more.
func LiveCounters(ctx context.Context, dir *state.Dir, m *state.Monitor) Live {
	reply, err := askUntil(ctx, dir, m, controlRequest{Op: "ping"}, time.Now().Add(2*time.Second))
	if err != nil {
		return Live{}
	}
	reply.counters(m)
	return Live{StateError: reply.StateError, Held: reply.Held}
}

// LiveCounters is LiveCounters for an observed monitor: its guardian is
// asked only while the monitor runs or settles, and is not stopped. One
// whose custody lapsed, or that is stopped within its window, is not
// asked, which would hold the caller for the ping's 2 s (a wait past its
// timeout, for one).
func (o *Observation) LiveCounters(ctx context.Context, dir *state.Dir) Live {
	if o.Status != state.StatusRunning && o.Status != state.StatusSettling ||
		!answering(o.Monitor.GuardianPID, o.Monitor.GuardianStartTicks) {
		return Live{}
	}
	return LiveCounters(ctx, dir, o.Monitor)
}

// counters brings m's output counters up to those of the reply.
func (reply *controlReply) counters(m *state.Monitor) {
	m.CapturedBytes = max(m.CapturedBytes, reply.Captured)
	m.LogBytes = max(m.LogBytes, reply.Logged)
	m.LogBytesLost = max(m.LogBytesLost, reply.Lost)
	if reply.LogError != "" {
		m.LogError = reply.LogError
	}
}
