package proc

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/early"
	"procmon/internal/fault"
	"procmon/internal/protocol"
	"procmon/internal/redact"
	"procmon/internal/state"
)

// nowMs is the wall clock, which records show; ownership windows are
// judged by state.MonoNowMs. The fault tests may step it.
func nowMs() int64 { return time.Now().UnixMilli() + fault.WallStepMs() }

// deadlineAt returns when the spec's work deadline passes, on the
// monotonic clock: counted from the admission on the clock that read it,
// so that a step of the wall clock since (as the slot is taken, or after
// the handoff: TestFaultsWallStepBeforeTheSpec and TestFaultsWallClockStep
// step it there) does not move it. A guardian on another clock (another
// time namespace), or whose clock reads the admission as still to come,
// counts from now on the wall clock instead.
func (s *Spec) deadlineAt() time.Time {
	elapsed := state.MonoNowMs() - s.AdmittedMonoMs
	if s.AdmittedMonoMs == 0 || s.MonoClock != state.MonoClock() || elapsed < 0 {
		return monoDeadline(*s.WorkDeadlineMs)
	}
	left := *s.WorkDeadlineMs - s.AdmittedAtMs - elapsed
	return time.Now().Add(time.Duration(left) * time.Millisecond)
}

// monoDeadline returns when the wall-clock time ms comes, on the monotonic
// clock: a step of the wall clock after this call does not move it. A
// deadline is a time to run, counted from admission, so it is read this
// way as soon as custody begins.
func monoDeadline(ms int64) time.Time {
	return time.Now().Add(time.Duration(ms-nowMs()) * time.Millisecond)
}

// drainCause says why custody is ending and what status the receipt takes.
type drainCause struct {
	status  string
	reason  string
	graceMs int64
}

// cancelRequest asks the main loop to drain; the first one wins.
type cancelRequest struct {
	graceMs int64
	reason  string
}

// guardian holds custody of one service. Its fields are owned by the main
// loop goroutine unless noted; custody sets child, and clears
// out.writeEnd, before it reports the spawn.
type guardian struct {
	stateDir  string
	monitorID string
	spec      Spec
	dir       *state.Dir
	bootID    string
	self      int
	selfTicks uint64

	rec         *state.Monitor // the record as last written
	firstRecord *os.File       // the temp file the first record is written through

	child      int
	childTicks uint64
	// spawnedAtMs is when the child was forked: its started_at, which
	// its exit (observed later, on the same clock) can never precede.
	// Set by custody before it reports the spawn.
	spawnedAtMs int64
	aborted     atomic.Bool // abortChild has killed and reaped the child
	// groupReleased is set once the child may have been reaped: its pid
	// no longer names the group for certain (see signalCustody). Only
	// the goroutine that drains touches it.
	groupReleased bool
	exited        chan exitStatus // from the custody thread, once
	exit          *exitStatus
	// ownSession starts the child in a session of its own rather than in
	// a group of the guardian's session (see Exec).
	ownSession bool

	out *outputCopier
	// root is the component root, held from just before the spawn, for
	// file waits (see component_linux.go).
	root *componentRoot
	// redactText shows a whole text as the redacted stream would.
	redactText func(string) string

	cancels   chan cancelRequest // from control connections
	sig       *early.Signals     // the guardian's own
	owner     <-chan struct{}    // closed when the run's owner exits (nil: unbound)
	finished  chan struct{}      // closed once the receipt is durable
	receipted chan struct{}      // closed once the receipt exists, durable or not
	receipt   atomic.Pointer[state.Receipt]
	// deadlineAt is when the work deadline passes, on the monotonic
	// clock (zero: none), set as the spec arrives, before the handoff.
	deadlineAt time.Time
	// escaped is the latest look for the sessions the service's
	// descendants made (watchEscapes): the record takes it as soon as it
	// changes (recordEscapes), and with each heartbeat.
	escaped atomic.Pointer[escapes]
	// custodyUntil is the end of the ownership window as the guardian
	// last renewed it, in milliseconds of state.MonoNowMs: the stored
	// record's, or later when the record could not be written (a full
	// disk). Past it, custody has lapsed for good.
	custodyUntil atomic.Int64
	// fenced says the monitor's directory held an open custody fence at
	// the handoff (see custodyOpen).
	fenced bool
	// stateErr says why the record could not be written last time, or is
	// nil once it was.
	stateErr atomic.Pointer[string]
	// draining is set once custody is ending, before the settling phase is
	// written (which a full disk may stop).
	draining atomic.Bool
	handlers sync.WaitGroup
	ctl      *controlServer
	feed     changeFeed // tells waits of new output and record changes
}

// RunGuardian is the body of the hidden guardian subcommand, started by
// Start as "procmon __guardian STATE_DIR MONITOR_ID" before the
// request is admitted. It boots and prepares while the launcher takes the
// command slot, then reads the Spec on stdin, starts the child, writes the
// handoff on stdout and keeps custody until the receipt is durable. It
// returns the exit status of the guardian process.
func RunGuardian(args []string, stdin io.Reader, stdout *os.File) int {
	if len(args) != 2 {
		fmt.Fprintf(os.Stderr, "procmon: %s is started by procmon start, never by hand\n", GuardianArg)
		return 2
	}
	// The signals are caught from the guardian's init on (see early):
	// the termination signals before the child is spawned, so that a
	// SIGTERM (or SIGINT, SIGHUP, SIGQUIT) drains once custody is handed
	// off and never kills a guardian that has a child; SIGPIPE and SIGCHLD
	// before the first record or any handoff is written, so that a caller
	// that died cannot take the guardian with it. An orphan that exits
	// before SIGCHLD is caught is reaped when the guardian settles.
	sig := early.CatchSignals()
	in := bufio.NewReader(stdin)
	var spec Spec
	if readErr := readSpec(in, &spec); readErr != nil {
		// The launcher refused the start or died before sending a spec:
		// what it made for the monitor goes.
		if dir, err := state.Open(args[0]); err == nil {
			dir.RemoveMonitorDir(args[1])
		}
		if readErr == io.EOF {
			return 0
		}
		<-sig.AllCaught
		writeHandoff(stdout, handoff{Error: &protocol.ErrorBody{Code: protocol.CodeInternal, Message: "guardian: read spec: " + readErr.Error()}})
		return 1
	}
	// Compiling the secrets into the redactor is the largest piece of work
	// before the handoff: it starts first, and overlaps the spawn.
	compiled := compileRedactor(spec.Secrets)
	g, err := newGuardian(args[0], args[1], sig, spec.GuardianStartTicks)
	if err == nil {
		err = g.start(spec, in, compiled)
	}
	if err == errAbandoned {
		return 0
	}
	<-sig.AllCaught
	if err != nil {
		e := protocol.AsError(err)
		writeHandoff(stdout, handoff{Error: &protocol.ErrorBody{Code: e.Code, Message: e.Message, Details: e.Details}})
		return 1
	}
	fault.Point("guardian:after_record")
	writeHandoff(stdout, handoff{Monitor: g.rec})
	// The launcher has what it waited for: from here on the guardian has no
	// tie to the caller's stdio.
	redirectToDevNull(1)
	g.logToOwnFile()
	g.keepCustody()
	return 0
}

// settleAfter is how long after the handoff the guardian settles down
// (see settle). Settling costs about 1.5 ms of CPU, most of it the full
// collection, and the moments after a start are when its caller runs its
// next commands: more starts, a wait, a status. A second later they are
// usually done. Until then the guardian holds no more memory than after
// settling (the collection itself touches pages).
const settleAfter = time.Second

// settle is the guardian's housekeeping after the start: one P is plenty
// from here on; a guardian holds little (bounded buffers and one record),
// so the heap is kept from growing far past that, and what the start left
// behind goes back to the system; an orphan that exited before SIGCHLD
// was caught is reaped; the output log, and what it holds so far, is
// made durable (see outputCopier.sync). (The small heap goal, set before
// the handoff, would cost the start a collection.) It runs on the main
// loop, unless custody ends first: a guardian about to drain and exit has
// no use for it.
func (g *guardian) settle() {
	runtime.GOMAXPROCS(1)
	debug.SetGCPercent(25)
	debug.FreeOSMemory()
	g.reapOrphans()
	g.out.sync()
}

// logToOwnFile makes the guardian's stderr its own log in the monitor's
// directory: what it has to say about custody (and a panic's trace) stays
// with the monitor. It is made after the handoff, which it would only
// delay: nothing is written to it before. It is opened as every file of
// the state directory is (state.Dir.OpenGuardianLog): a link, a FIFO or a
// hard link to a file elsewhere planted in its place, or in place of the
// directory, is not written through. Without it, stderr is let go all the
// same.
func (g *guardian) logToOwnFile() {
	f, err := g.dir.OpenGuardianLog(g.monitorID)
	if err != nil {
		redirectToDevNull(2)
		return
	}
	unix.Dup3(int(f.Fd()), 2, 0)
	f.Close()
}

func redirectToDevNull(fd int) { redirect(fd, os.DevNull, unix.O_RDWR) }

// redirect points descriptor fd at path, opened with flags (a file it
// creates is 0600), and reports whether it could.
func redirect(fd int, path string, flags int) bool {
	n, err := unix.Open(path, flags|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return false
	}
	unix.Dup3(n, fd, 0)
	unix.Close(n)
	return true
}

// newGuardian does what must precede any spawn: the non-reaping probe,
// the subreaper bit and the output pipe. selfTicks is the guardian's start
// time as its launcher read it, or 0.
func newGuardian(stateDir, monitorID string, sig *early.Signals, selfTicks uint64) (*guardian, error) {
	if err := probeNonReaping(); err != nil {
		return nil, protocol.Errorf(protocol.CodeNonreapingUnavailable, "waitid(WNOWAIT) is unavailable (%v): the guardian cannot observe an exit without reaping, so it refuses to start", err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, protocol.Errorf(protocol.CodeNonreapingUnavailable, "become child subreaper: %v", err)
	}
	g := &guardian{
		stateDir:  stateDir,
		monitorID: monitorID,
		self:      os.Getpid(),
		exited:    make(chan exitStatus, 1),
		cancels:   make(chan cancelRequest, 1),
		sig:       sig,
		finished:  make(chan struct{}),
		receipted: make(chan struct{}),
		selfTicks: selfTicks,
	}
	var err error
	if g.selfTicks == 0 {
		if g.selfTicks, err = StartTicks(g.self); err != nil {
			return nil, fmt.Errorf("read own start time: %w", err)
		}
	}
	if g.out, err = newOutputCopier(); err != nil {
		return nil, err
	}
	return g, nil
}

// open listens on the control socket in the monitor's directory and
// opens the first record's temp file; once the launcher has said, on in,
// that the directory is durable, it opens the output log, which the
// launcher makes meanwhile. It reads in only once slotRead is closed:
// after start has read the byte before it, or given up.
func (g *guardian) open(in *bufio.Reader, slotRead <-chan struct{}) error {
	dir, err := state.Open(g.stateDir)
	if err != nil {
		return err
	}
	g.dir = dir
	g.bootID = state.BootID()
	if g.ctl, err = g.listen(); err != nil {
		return err
	}
	if g.firstRecord, err = dir.OpenFirstRecord(g.monitorID); err != nil {
		return err
	}
	<-slotRead
	if !heard(in, dirDurable) {
		return errNotDurable
	}
	redirectToDevNull(0) // the spec pipe is done with
	return g.out.openLog(g.dir, g.monitorID)
}

// discard undoes newGuardian and open for a start that never got its
// running handoff. Unless something it spawned may be left (keepTrace),
// not even the directory is left; otherwise the directory stays, naming
// this guardian (see state.Maker), so that what is left of its session is
// found and stopped by the next command that looks (see SweepAbandoned).
func (g *guardian) discard(keepTrace bool) {
	if g.ctl != nil {
		g.ctl.close()
	}
	if g.firstRecord != nil {
		g.firstRecord.Close()
	}
	g.out.abandon()
	if keepTrace {
		return
	}
	if dir, err := state.Open(g.stateDir); err == nil {
		dir.RemoveMonitorDir(g.monitorID)
	}
}

// start does the rest, up to the durable running handoff: the child and
// the first record. On error the child is gone and nothing is left but,
// when the group could not be verified empty, the directory that names
// the guardian.
func (g *guardian) start(spec Spec, in *bufio.Reader, compiled func() compiledRedactor) (err error) {
	g.spec = spec
	if spec.WorkDeadlineMs != nil {
		g.deadlineAt = spec.deadlineAt()
	}
	defer func() {
		// An error names argv[0] or the working directory, which may
		// hold a secret.
		if err == nil || err == errAbandoned {
			return
		}
		if c := compiled(); c.err == nil {
			err = redactError(err, c.redactor.String)
		}
	}()
	opened := make(chan error, 1)
	joined := false
	keepTrace := false // something spawned may be left
	defer func() {
		if err != nil {
			if !joined {
				<-opened
			}
			g.discard(keepTrace)
		}
	}()
	if spec.StateDir != g.stateDir || spec.MonitorID != g.monitorID {
		opened <- nil
		return protocol.Errorf(protocol.CodeInternal, "guardian of monitor %s in %s was sent a spec for %s in %s", g.monitorID, g.stateDir, spec.MonitorID, spec.StateDir)
	}
	// The monitor's files are opened while the child is spawned: the
	// child needs only the pipe. Before the spawn, the monitor's directory
	// already names this guardian (see state.Maker): a guardian that dies
	// from here on leaves what it started provably its own.
	slotRead := make(chan struct{})
	readSlot := sync.OnceFunc(func() { close(slotRead) })
	defer readSlot() // on every way out, so that open returns
	go func() { opened <- g.open(in, slotRead) }()
	path := spec.Path
	if path == "" {
		if path, err = lookPath(spec.Argv[0], spec.Env, spec.Cwd); err != nil {
			return err
		}
	}
	if spec.MaxOutputBytes != nil {
		g.out.limit = *spec.MaxOutputBytes
	}
	// Nothing is spawned before the command slot is durable. (The byte is
	// read here, by a blocking read, rather than handed over by a channel:
	// the kernel wakes this thread itself.)
	slot := heard(in, slotDurable)
	readSlot()
	if !slot {
		return errAbandoned
	}
	<-g.sig.TerminationCaught
	fault.Point("guardian:before_spawn")
	g.root = holdComponentRoot(spec.Cwd)
	spawned := make(chan error, 1)
	go g.custody(path, spawned)
	if err := <-spawned; err != nil {
		return err
	}
	abort := func(err error) error {
		keepTrace = !g.abortChild()
		return err
	}
	fault.Point("guardian:after_spawn")
	if g.childTicks, err = StartTicks(g.child); err != nil {
		// The child is ours and unreaped, so its stat exists even as a zombie.
		return abort(fmt.Errorf("read child start time: %w", err))
	}
	joined = true
	if err := <-opened; err != nil {
		return abort(err)
	}
	// The redactor sits between the pipe and the log: a raw secret never
	// reaches the disk, and the secrets live only in this process. Until
	// it is ready the child's output waits in the pipe.
	c := compiled()
	if c.err != nil {
		return abort(protocol.Errorf(protocol.CodeInvalidRequest, "secrets: %w", c.err).With("field", "secrets"))
	}
	g.redactText = c.redactor.String
	g.out.filter = c.redactor.NewStream()
	g.out.changed = g.feed.notify
	go g.out.run()
	if spec.Owner != nil {
		g.owner = watchOwner(*spec.Owner)
	}
	now, mono := nowMs(), state.MonoNowMs()
	g.rec = &state.Monitor{
		MonitorID:          spec.MonitorID,
		RunID:              spec.RunID,
		Name:               g.redactText(spec.Name),
		Argv:               redactAll(g.redactText, spec.Argv),
		Cwd:                g.redactText(spec.Cwd),
		CommandOrdinal:     spec.CommandOrdinal,
		BootID:             g.bootID,
		PID:                g.child,
		PGID:               g.child,
		ChildStartTicks:    g.childTicks,
		GuardianPID:        g.self,
		GuardianStartTicks: g.selfTicks,
		AdmittedAtMs:       spec.AdmittedAtMs,
		StartedAtMs:        g.spawnedAtMs,
		OwnerGraceMs:       spec.OwnerGraceMs,
		WorkDeadlineMs:     spec.WorkDeadlineMs,
		MaxOutputBytes:     spec.MaxOutputBytes,
		Phase:              state.PhaseRunning,
	}
	g.rec.SetWindow(now, mono, spec.OwnerGraceMs)
	<-g.sig.AllCaught
	// An orphan that exited before SIGCHLD was caught sent it for nothing.
	g.reapOrphans()
	if err := g.save(true); err != nil {
		// Custody cannot be recorded: take the child down with us.
		return abort(err)
	}
	g.custodyUntil.Store(g.rec.OwnershipExpiresMonoMs)
	g.fenced = g.dir.Custody(g.spec.MonitorID) == state.CustodyOpen
	go g.ctl.serve(g)
	return nil
}

// custody is the child's own goroutine. Locked to its thread from the
// start, it spawns the child (the result goes to spawned) and waits for
// its exit without reaping it: Pdeathsig fires when the thread that forked
// the child exits, so that thread must outlive the child. Everything else
// runs unlocked: a locked goroutine woken by a channel waits for its own
// thread to be handed a P, which cost a start about 0.2 ms when the
// spawning goroutine went on to wait for the monitor's files.
func (g *guardian) custody(path string, spawned chan<- error) {
	runtime.LockOSThread()
	if err := g.spawn(path); err != nil {
		spawned <- err
		return
	}
	pid := g.child
	g.spawnedAtMs = nowMs()
	spawned <- nil
	var info childInfo
	if err := waitid(unix.P_PID, pid, unix.WEXITED|unix.WNOWAIT, &info); err != nil {
		if g.aborted.Load() {
			return // abortChild reaped it first
		}
		// The child may still run: keep its parent-death signal armed.
		fmt.Fprintf(os.Stderr, "guardian: waitid on child %d: %v\n", pid, err)
		select {}
	}
	// The child stays a zombie until the drain reaps it: this thread may end.
	g.exited <- decodeExit(&info, nowMs())
}

// spawn starts the child in its own process group, from custody's thread.
func (g *guardian) spawn(path string) error {
	devnull, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer unix.Close(devnull)
	w := g.out.writeEnd
	pid, err := syscall.ForkExec(path, g.spec.Argv, &syscall.ProcAttr{
		Dir:   g.spec.Cwd,
		Env:   g.spec.Env,
		Files: []uintptr{uintptr(devnull), w.Fd(), w.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: !g.ownSession, Setsid: g.ownSession, Pdeathsig: syscall.SIGKILL},
	})
	w.Close()
	g.out.writeEnd = nil
	if err != nil {
		return protocol.Errorf(protocol.CodeExecFailed, "cannot execute %q: %v", g.spec.Argv[0], execReason(err, path, g.spec.Cwd)).With("argv0", g.spec.Argv[0])
	}
	g.child = pid
	return nil
}

// execReason says why execve of path, run in cwd, failed. ENOENT names
// the program, but the program may be there and what it needs not: the
// working directory, the interpreter its #! line names, or (an
// executable without one) its dynamic loader.
func execReason(err error, path, cwd string) string {
	if !errors.Is(err, unix.ENOENT) {
		return err.Error()
	}
	if _, statErr := os.Stat(cwd); statErr != nil {
		return fmt.Sprintf("working directory %s: %v", cwd, statErr)
	}
	if !strings.HasPrefix(path, "/") {
		path = cwd + "/" + path
	}
	// Without blocking: what is there now may be a FIFO, which an open
	// for reading waits on for a writer.
	f, openErr := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if openErr != nil {
		return err.Error()
	}
	defer f.Close()
	if fi, statErr := f.Stat(); statErr != nil || !fi.Mode().IsRegular() {
		return err.Error()
	}
	var head [256]byte
	n, _ := io.ReadFull(f, head[:])
	line, _, _ := strings.Cut(string(head[:n]), "\n")
	if interp, ok := strings.CutPrefix(line, "#!"); ok {
		// As the kernel reads it: the name ends at a space or a tab, so
		// a \r of a file saved with CRLF is part of it.
		if name, _, _ := strings.Cut(strings.TrimLeft(interp, " \t"), " "); name != "" {
			name, _, _ = strings.Cut(name, "\t")
			if _, statErr := os.Stat(name); statErr != nil {
				return fmt.Sprintf("the interpreter its #! line names, %q, is not there", name)
			}
			return fmt.Sprintf("the interpreter its #! line names, %q, is there, but not what it needs to run", name)
		}
	}
	return "the file is there, but not what it needs to run (its #! interpreter, or the dynamic loader an executable names)"
}

// abortChild kills a child whose custody could not be recorded, with its
// group and whatever left the group meanwhile (a setsid grandchild), and
// reaps them all: a start without a record leaves nothing running. It
// reports whether that was verified.
func (g *guardian) abortChild() bool {
	g.aborted.Store(true)
	kill := func(sig unix.Signal, c custody) { g.signalCustody(sig, c) }
	kill(unix.SIGKILL, g.look())
	unix.Kill(g.child, unix.SIGKILL)
	return g.verifyEmpty(time.Now().Add(killBoundMs*time.Millisecond), kill)
}

// redactError passes the message and the string details of a typed error
// through redact.
func redactError(err error, redact func(string) string) error {
	e := protocol.AsError(err)
	out := &protocol.Error{Code: e.Code, Message: redact(e.Message)}
	for k, v := range e.Details {
		if s, ok := v.(string); ok {
			v = redact(s)
		}
		out = out.With(k, v)
	}
	return out
}

// errRevoked means the stored record no longer belongs to this guardian.
var errRevoked = errors.New("the record no longer names this guardian")

// errUnreadable means the stored record cannot be read as one (replaced
// by something else, damaged, or removed): it names no owner, and no
// reader can find the guardian through it to cancel its service.
var errUnreadable = errors.New("the record cannot be read, so it names no owner")

// save writes the guardian's record under the monitor's lock, unless the
// stored record has been taken over (another guardian named, or a receipt
// written by reconcile): then it is left as it is.
func (g *guardian) save(durable bool) error {
	if f := g.firstRecord; f != nil {
		// Nobody else writes a monitor before its first record exists.
		g.firstRecord = nil
		g.out.snapshot(g.rec)
		return g.dir.SaveFirstMonitor(f, g.rec)
	}
	return g.dir.WithMonitorLock(g.spec.MonitorID, func() error {
		if g.rec.HeartbeatSeq > 0 || g.rec.Phase != state.PhaseRunning {
			// A receipt takes the place of a record that cannot be read:
			// how custody ended is then told again.
			if err := g.stillOurs(); err != nil && (g.rec.Receipt == nil || !errors.Is(err, errUnreadable)) {
				return err
			}
		}
		g.out.snapshot(g.rec)
		return g.dir.SaveMonitor(g.rec, durable)
	})
}

// stillOurs returns errRevoked when the stored record has been taken over
// (settled, or naming another guardian), and errUnreadable when it is no
// record at all; the caller holds the monitor's lock.
//
// No record is one removed, one replaced by something that is no file (a
// directory, a link, a FIFO), and one whose content does not decode. It
// used to count as ours: a directory planted in its place kept the
// service running past every window, while cancel and reconcile refused
// it. A record that cannot be read for any other reason may well name
// this guardian, and counts as ours: a read that failed (EIO, or no
// descriptor left) may pass, and a file of the right content with a
// second link (a backup by hard links) or another mode is replaced whole
// by the next write.
func (g *guardian) stillOurs() error {
	stored, err := g.dir.LoadMonitor(g.spec.MonitorID)
	if err == nil {
		if stored.Receipt != nil || stored.GuardianPID != g.self || stored.GuardianStartTicks != g.selfTicks {
			return errRevoked
		}
		return nil
	}
	var errno syscall.Errno
	fi, lerr := os.Lstat(filepath.Join(g.dir.MonitorDir(g.spec.MonitorID), state.RecordName))
	switch {
	case errors.Is(lerr, fs.ErrNotExist), lerr == nil && !fi.Mode().IsRegular(),
		protocol.HasCode(err, protocol.CodeStateCorrupt) && !errors.As(err, &errno):
		return fmt.Errorf("%w: %v", errUnreadable, err)
	}
	return nil
}

// custodyOpen reports whether the monitor's custody fence still lets the
// guardian claim custody: no reader has shown the monitor as needing
// reconciliation (see state.CustodyName). A fence that was there at the
// handoff and is gone since counts as given up.
func (g *guardian) custodyOpen() bool {
	switch g.dir.Custody(g.spec.MonitorID) {
	case state.CustodyOpen:
		return true
	case state.CustodyUnfenced:
		return !g.fenced
	}
	return false
}

// errLapsed means the ownership window passed before its renewal could
// be written, or a reader gave custody up meanwhile.
var errLapsed = errors.New("the ownership window lapsed before its renewal was written")

// saveRenewal writes the record with the ownership window renewed from
// now, under the monitor's lock, unless the window that ends at until has
// lapsed by the time the lock is held; it returns the renewed window's
// end. Readers see a lapsed window without the lock, so the check must
// come once the lock is held: a heartbeat that waited for it (a procmon
// command stopped while holding it) used to write a window renewed from
// before its wait, and a monitor shown as needing reconciliation was
// running again. Should the guardian stall between the check and the
// write, the lapsed window is put back before the lock is let go.
func (g *guardian) saveRenewal(until int64, escaped *escapes) (int64, error) {
	var renewed int64
	err := g.dir.WithMonitorLock(g.spec.MonitorID, func() error {
		if err := g.stillOurs(); err != nil {
			return err
		}
		mono := state.MonoNowMs()
		if mono > until || !g.custodyOpen() {
			return errLapsed
		}
		seq, expires, expiresMono := g.rec.HeartbeatSeq, g.rec.OwnershipExpiresAtMs, g.rec.OwnershipExpiresMonoMs
		g.rec.HeartbeatSeq++
		g.rec.SetWindow(nowMs(), mono, g.spec.OwnerGraceMs)
		if escaped != nil {
			g.rec.EscapedSessions, g.rec.EscapedSessionsTruncated = escaped.sessions, escaped.truncated
		}
		renewed = g.rec.OwnershipExpiresMonoMs
		g.out.snapshot(g.rec)
		err := g.dir.SaveMonitor(g.rec, false)
		if state.MonoNowMs() > until || !g.custodyOpen() {
			g.rec.HeartbeatSeq, g.rec.OwnershipExpiresAtMs, g.rec.OwnershipExpiresMonoMs = seq, expires, expiresMono
			if err == nil {
				g.dir.SaveMonitor(g.rec, false)
			}
			return errLapsed
		}
		return err
	})
	return renewed, err
}

// keepCustody is the main loop: it renews ownership until something ends
// custody, then drains and writes the receipt.
func (g *guardian) keepCustody() {
	period := time.Duration(g.spec.OwnerGraceMs) * time.Millisecond / 3
	if period < 10*time.Millisecond {
		period = 10 * time.Millisecond
	}
	heartbeat := time.NewTicker(period)
	defer heartbeat.Stop()
	looking := make(chan struct{})
	looked := make(chan struct{}, 1)
	go g.watchEscapes(period, looking, looked)
	settle := time.NewTimer(settleAfter)
	defer settle.Stop()
	var deadline <-chan time.Time
	if !g.deadlineAt.IsZero() {
		t := time.NewTimer(time.Until(g.deadlineAt))
		defer t.Stop()
		deadline = t.C
	}
	var cause drainCause
loop:
	for {
		select {
		case ex := <-g.exited:
			g.exit = &ex
			cause = drainCause{status: state.StatusExited, reason: "exited", graceMs: DefaultDrainGraceMs}
			break loop
		case c := <-g.cancels:
			cause = drainCause{status: state.StatusCancelled, reason: c.reason, graceMs: c.graceMs}
			if g.custodyLapsed() {
				// Taken only once the guardian runs again past its window
				// (stopped with the cancel waiting on its socket): readers
				// may have shown the monitor as needing reconciliation, and
				// the cancel may have answered so and gone. The drain is
				// the one the next heartbeat would have made.
				cause = heartbeatMissed
			}
			break loop
		case <-deadline:
			cause = drainCause{status: state.StatusTimedOut, reason: "deadline", graceMs: DefaultDrainGraceMs}
			break loop
		case <-g.out.capHit:
			cause = drainCause{status: state.StatusOutputLimit, reason: "output_limit", graceMs: DefaultDrainGraceMs}
			break loop
		case <-g.owner:
			cause = ownerExited
			break loop
		case sig := <-g.sig.Termination:
			cause = drainCause{status: state.StatusCancelled, reason: "guardian_" + unix.SignalName(sig.(syscall.Signal)), graceMs: DefaultDrainGraceMs}
			break loop
		case <-settle.C:
			g.settle()
		case <-looked:
			g.recordEscapes()
		case <-g.sig.Child:
			g.reapOrphans()
		case sig := <-g.sig.Stray:
			fmt.Fprintf(os.Stderr, "guardian: ignored %v\n", sig)
		case <-heartbeat.C:
			if c, ok := g.renew(); !ok {
				cause = c
				break loop
			}
		}
	}
	close(looking) // the drain looks for itself
	g.finish(g.exitRaced(cause))
}

// exitRaced returns cause, unless the child's exit raced with it: the
// exit then decides how the child ended (a deadline or the output cap
// still name why custody ended). An exit that raced with the cap, or was
// taken ahead of it, ends as output_limit all the same once the drain has
// read the output (see capOverridesExit).
func (g *guardian) exitRaced(cause drainCause) drainCause {
	if g.exit != nil {
		return cause
	}
	select {
	case ex := <-g.exited:
		g.exit = &ex
		if cause.status != state.StatusOutputLimit && cause.status != state.StatusTimedOut {
			cause = drainCause{status: state.StatusExited, reason: "exited", graceMs: cause.graceMs}
		}
	default:
	}
	return cause
}

// runEnded and ownerExited are the drains of a run's commands once the
// run has ended, or its owner has exited.
var (
	runEnded    = drainCause{status: state.StatusCancelled, reason: "run_ended", graceMs: DefaultDrainGraceMs}
	ownerExited = drainCause{status: state.StatusCancelled, reason: "owner_exited", graceMs: DefaultDrainGraceMs}
)

// runOver reports whether custody of a command of run runID, bound to
// owner (nil: unbound), must end because the run has ended or its owner
// has exited, and with which drain. It fails when the run cannot be read.
func runOver(dir *state.Dir, runID string, owner *state.Owner) (drainCause, bool, error) {
	run, err := dir.LoadRun(runID)
	if err != nil {
		return drainCause{}, false, err
	}
	if run.EndedAtMs != nil {
		return runEnded, true, nil
	}
	if owner != nil && !OwnerAlive(*owner) {
		return ownerExited, true, nil
	}
	return drainCause{}, false, nil
}

// heartbeatMissed is the drain of a guardian that finds its ownership
// window lapsed.
var heartbeatMissed = drainCause{status: state.StatusCancelled, reason: "heartbeat_missed", graceMs: DefaultDrainGraceMs}

// custodyLapsed reports whether the ownership window the guardian last
// renewed has passed, or a reader has given its custody up meanwhile:
// either way it may never claim custody again.
func (g *guardian) custodyLapsed() bool {
	return state.MonoNowMs() > g.custodyUntil.Load() || !g.custodyOpen()
}

// renew checks that custody still holds (the record names this guardian,
// the run is active, the owner alive, the deadline not passed) and only
// then extends the ownership window. A failed check returns the drain cause.
func (g *guardian) renew() (drainCause, bool) {
	revoked := drainCause{status: state.StatusCancelled, reason: "revoked", graceMs: DefaultDrainGraceMs}
	missed := heartbeatMissed
	// A guardian that finds its window lapsed (it was stopped, or starved
	// of CPU, past it) has been reported as needing reconciliation: it
	// never renews.
	until := g.custodyUntil.Load()
	if g.custodyLapsed() {
		return missed, false
	}
	// A run that cannot be read for want of a resource (no descriptor
	// left: internal) is looked at again at the next heartbeat, as the
	// record is; one that cannot be trusted, or is gone, ends custody.
	if c, over, err := runOver(g.dir, g.spec.RunID, g.spec.Owner); err != nil && !protocol.HasCode(err, protocol.CodeInternal) {
		return revoked, false
	} else if over {
		return c, false
	}
	if !g.deadlineAt.IsZero() && !time.Now().Before(g.deadlineAt) {
		return drainCause{status: state.StatusTimedOut, reason: "deadline", graceMs: DefaultDrainGraceMs}, false
	}
	// saveRenewal checks, under the record's lock, that the record still
	// names this guardian and that the window has not lapsed. A heartbeat
	// does not sync the directory: after a crash of the machine, the
	// record that survives (whole, old or new) is from another boot.
	renewed, err := g.saveRenewal(until, g.escaped.Load())
	switch {
	case errors.Is(err, errRevoked), errors.Is(err, errUnreadable):
		return revoked, false
	case errors.Is(err, errLapsed), state.MonoNowMs() > until:
		// The lock could not be had, and the window passed meanwhile.
		return missed, false
	case renewed == 0:
		// The lock could not be had (it stayed taken, or no descriptor
		// was left to take it with): renewed from now, as the record
		// would have been.
		renewed = state.MonoNowMs() + g.spec.OwnerGraceMs
	}
	// Custody was checked in time: it holds whether or not the record
	// could be written (a full disk); readers ask the guardian then.
	g.custodyUntil.Store(renewed)
	g.noteStateError("heartbeat", err)
	return drainCause{}, true
}

// maxEscapedSessions bounds the sessions a record lists: past it, the
// record says it was cut (EscapedSessionsTruncated), and a reconciled
// receipt says containment was incomplete.
const maxEscapedSessions = 64

// escapes is what a look at the guardian's descendants found: the
// sessions they made with setsid (state.EscapedSession), in the order of
// their ids, and whether there were more than maxEscapedSessions.
type escapes struct {
	sessions  []state.EscapedSession
	truncated bool
}

// names reports whether a record that lists sessions, cut or not
// (truncated), lists exactly the sessions and witnesses of e.
func (e *escapes) names(sessions []state.EscapedSession, truncated bool) bool {
	return e.truncated == truncated && slices.EqualFunc(e.sessions, sessions, func(a, b state.EscapedSession) bool {
		return a.SID == b.SID && slices.Equal(a.Witnesses, b.Witnesses)
	})
}

// lookForEscapes lists the sessions the service's descendants made out of
// the service's own session (the guardian's; the command's for a
// foreground command, which leads one). Once the guardian is lost, those
// sessions are out of the one that reconcile finds by itself
// (LostMembers): only the record names them.
func (g *guardian) lookForEscapes() *escapes {
	home := g.self
	if g.ownSession {
		home = g.child
	}
	e := &escapes{}
	for _, s := range scanDescendants(g.self) {
		// A zombie still holds its session (and is the leader of one
		// whose parent never reaps it): it may witness.
		if s.session == home || s.state == 'X' {
			continue
		}
		i := slices.IndexFunc(e.sessions, func(x state.EscapedSession) bool { return x.SID == s.session })
		if i < 0 {
			if len(e.sessions) == maxEscapedSessions {
				e.truncated = true
				continue
			}
			e.sessions = append(e.sessions, state.EscapedSession{SID: s.session})
			i = len(e.sessions) - 1
		}
		// The earliest-started members witness, earliest first.
		w := &e.sessions[i].Witnesses
		*w = append(*w, state.Witness{PID: s.pid, StartTicks: s.startTicks})
		slices.SortFunc(*w, func(a, b state.Witness) int { return cmp.Compare(a.StartTicks, b.StartTicks) })
		*w = (*w)[:min(len(*w), state.MaxWitnesses)]
	}
	slices.SortFunc(e.sessions, func(a, b state.EscapedSession) int { return a.SID - b.SID })
	return e
}

// firstEscapeLook is when the first look for escaped sessions comes, and
// the interval to the next, which doubles up to the heartbeat's period: a
// service makes its daemons as it starts, and a guardian lost before its
// first heartbeat (a third of the grace, 10 s by default) left them
// unrecorded. Looks at 50, 150, 350, 750 ms and 1.55 s after the handoff
// find one made in the first second within about half a second of its
// setsid, for five more looks than before (about 0.1 ms each for a small
// service). None comes at once: the moments right after a start are its
// caller's (see settleAfter), and a service has made nothing yet.
const firstEscapeLook = 50 * time.Millisecond

// watchEscapes keeps g.escaped current until done is closed, and says so
// on looked (without waiting) after each look, so that a new session is
// recorded at once rather than at the next heartbeat. It looks after
// firstEscapeLook, then at doubling intervals up to period; or
// twenty times as long as the last look took when that is more, so that a
// service of thousands of processes costs its guardian a twentieth of a
// CPU at most; never less often than every ten periods, so that a look
// the guardian was stopped or starved through does not put the next one
// off for long. The look is off the heartbeat's path, which must renew
// within the grace whatever the size of the service.
func (g *guardian) watchEscapes(period time.Duration, done <-chan struct{}, looked chan<- struct{}) {
	interval := min(firstEscapeLook, period)
	t := time.NewTimer(interval)
	for {
		select {
		case <-done:
			t.Stop()
			return
		case <-t.C:
		}
		began := time.Now()
		g.escaped.Store(g.lookForEscapes())
		select {
		case looked <- struct{}{}:
		default:
		}
		interval = min(2*interval, period)
		t.Reset(min(max(interval, 20*time.Since(began)), 10*period))
	}
}

// recordEscapes writes the record as soon as the latest look for escaped
// sessions differs from what it names, without renewing the window: a
// guardian lost before its next heartbeat leaves them named for
// reconcile. A write that fails is the heartbeat's to retry; a record
// settled by someone else meanwhile, or custody lapsed, is the
// heartbeat's to find.
func (g *guardian) recordEscapes() {
	e := g.escaped.Load()
	if e == nil || e.names(g.rec.EscapedSessions, g.rec.EscapedSessionsTruncated) {
		return
	}
	err := g.dir.WithMonitorLock(g.spec.MonitorID, func() error {
		if err := g.stillOurs(); err != nil {
			return err
		}
		// The record may hold a window renewed but not stored (a full
		// disk): once custody has lapsed it is never written.
		if state.MonoNowMs() > g.custodyUntil.Load() || !g.custodyOpen() {
			return errLapsed
		}
		g.rec.EscapedSessions, g.rec.EscapedSessionsTruncated = e.sessions, e.truncated
		g.out.snapshot(g.rec)
		return g.dir.SaveMonitor(g.rec, false)
	})
	if err != nil && !errors.Is(err, errRevoked) && !errors.Is(err, errLapsed) {
		g.noteStateError("escaped sessions", err)
	}
}

// receiptPatience is how long a guardian tries to store a receipt whose
// write failed otherwise than for want of space or descriptors (mayPass)
// before it exits, leaving the monitor to reconcile.
const receiptPatience = time.Minute

// mayPass reports whether err is a write that failed for want of space
// or of descriptors (the system's table full), or on a file system
// mounted read-only, which waiting may give.
func mayPass(err error) bool {
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) || errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) ||
		errors.Is(err, unix.EROFS)
}

// noteStateError keeps the outcome of the last write of the record, for
// status to show while the record cannot be written.
func (g *guardian) noteStateError(what string, err error) {
	if err == nil {
		g.stateErr.Store(nil)
		return
	}
	msg := what + ": " + err.Error()
	if old := g.stateErr.Swap(&msg); old == nil || *old != msg {
		fmt.Fprintf(os.Stderr, "guardian: %s\n", msg)
	}
}

// settlingRecordAfter is how long a drain runs before the record says
// settling (see finish). A cooperative service is gone well within it
// (a sleep in about a millisecond), and its receipt is then the only
// record the drain writes: the settling record, written before the
// signals (a temp file, its fsync and a rename), took 1.4 to 4 ms of a
// cancel in a trace; without it a cancel of sleep took 9.9 ms instead of
// 11.0 (medians of 41, interleaved, load 2.4 on the shared 2-CPU
// machine; 15.9 instead of 17.0 at load 14).
const settlingRecordAfter = 20 * time.Millisecond

// finish drains the group, writes the receipt and answers every cancel.
func (g *guardian) finish(cause drainCause) {
	// A ping says settling at once. The record says so, with the
	// ownership window stretched over the whole drain, only once the
	// drain has run for settlingRecordAfter: until then the window it
	// shows is current (renewed at least twice per window), and a guardian
	// killed or stopped meanwhile is found out as it would be with the
	// settling record. It is not made durable: after a reboot a record
	// without a receipt needs reconciliation whatever its phase.
	g.draining.Store(true)
	var mu sync.Mutex // held by the settling write; the receipt waits for it
	settled := false
	settling := time.AfterFunc(settlingRecordAfter, func() {
		mu.Lock()
		defer mu.Unlock()
		if settled {
			return
		}
		g.rec.Phase = state.PhaseSettling
		g.rec.SetWindow(nowMs(), state.MonoNowMs(), cause.graceMs+drainBoundMs+g.spec.OwnerGraceMs)
		if err := g.save(false); err != nil {
			// The record still says running: readers are to ask.
			g.dir.GiveUpCustody(g.spec.MonitorID)
			fmt.Fprintf(os.Stderr, "guardian: settling: %v\n", err)
		}
		g.feed.notify()
	})
	// The log is made durable as far as it is written while the group
	// stops, so that the sync before the receipt finds nothing left to
	// do unless the service wrote on its way out.
	go g.out.sync()
	receipt := g.drain(cause)
	settling.Stop()
	mu.Lock()
	settled = true
	mu.Unlock()
	fault.Point("guardian:before_receipt")
	g.rec.Phase = state.PhaseTerminal
	g.rec.Receipt = receipt
	g.receipt.Store(receipt)
	err := g.save(true)
	if errors.Is(err, errRevoked) {
		// Someone else settled the record meanwhile; theirs stands.
		fmt.Fprintf(os.Stderr, "guardian: receipt: %v\n", err)
		err = nil
	}
	g.noteStateError("receipt", err)
	if err != nil {
		// The record does not say how custody ended: readers are to ask
		// until it does, rather than show a current window as running.
		g.dir.GiveUpCustody(g.spec.MonitorID)
	}
	fault.Point("guardian:after_receipt")
	close(g.receipted)
	// A receipt that could not be stored for want of space (a full disk, a
	// quota) or of descriptors, or on a file system remounted read-only,
	// is never given up: the guardian stays, answering with it, and
	// stores it once it can. Any other failure (the directory moved away,
	// an entry planted in it) may be put right by hand, but need not be:
	// that is tried for receiptPatience. Exiting at once lost the receipt
	// of a drain that had happened, and the reconcile after it could say
	// nothing of what had been signalled.
	for backoff, since := 50*time.Millisecond, time.Now(); mayPass(err) || err != nil && time.Since(since) < receiptPatience; backoff = min(2*backoff, 5*time.Second) {
		time.Sleep(backoff)
		if err = g.save(true); errors.Is(err, errRevoked) {
			err = nil
		}
		g.noteStateError("receipt", err)
	}
	close(g.finished)
	g.ctl.close()
	waitBounded(&g.handlers, 2*time.Second)
}

func waitBounded(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// redactAll redacts each argument: a credential passed on a command line
// is no more storable than one printed.
func redactAll(redact func(string) string, args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = redact(a)
	}
	return out
}

type compiledRedactor struct {
	redactor *redact.Redactor
	err      error
}

// compileRedactor builds the redactor, in the background when it has
// secrets to compile: without them it is the format rules alone, whose
// tables are built into the binary (see redact/builtin.go). The function
// it returns waits for it.
func compileRedactor(secrets []string) func() compiledRedactor {
	out := make(chan compiledRedactor, 1)
	compile := func() {
		r, err := redact.New(secrets)
		out <- compiledRedactor{r, err}
	}
	if len(secrets) == 0 {
		compile()
	} else {
		go compile()
	}
	return sync.OnceValue(func() compiledRedactor { return <-out })
}
