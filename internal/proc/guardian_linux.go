package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
	"procmon/internal/redact"
	"procmon/internal/state"
)

func nowMs() int64 { return time.Now().UnixMilli() }

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
// loop goroutine unless noted.
type guardian struct {
	spec      Spec
	dir       *state.Dir
	mdir      string
	self      int
	selfTicks uint64

	rec *state.Monitor // the record as last written

	child      int
	childTicks uint64
	exited     chan exitStatus // from the custody thread, once
	exit       *exitStatus

	out *outputCopier
	// redactText shows a whole text as the redacted stream would.
	redactText func(string) string

	cancels  chan cancelRequest // from control connections
	sigchld  chan os.Signal
	signals  chan os.Signal  // the guardian's own termination signals
	owner    <-chan struct{} // closed when the run's owner exits (nil: unbound)
	finished chan struct{}   // closed once the receipt is durable
	receipt  atomic.Pointer[state.Receipt]
	handlers sync.WaitGroup
	ctl      *controlServer
}

// RunGuardian is the body of the hidden guardian subcommand: it reads the
// Spec on stdin, writes the handoff on stdout, then keeps custody until the
// receipt is durable. It returns the exit status of the guardian process.
func RunGuardian(stdin io.Reader, stdout *os.File) int {
	// A guardian holds little: bounded buffers and one record. Keep the heap
	// from growing far past that.
	debug.SetGCPercent(25)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)

	var spec Spec
	if err := json.NewDecoder(io.LimitReader(stdin, 16<<20)).Decode(&spec); err != nil {
		if err == io.EOF {
			return 0 // the start was refused before a spec was sent
		}
		writeHandoff(stdout, handoff{Error: &protocol.ErrorBody{Code: protocol.CodeInternal, Message: "guardian: read spec: " + err.Error()}})
		return 1
	}
	g, err := startCustody(spec)
	if err != nil {
		e := protocol.AsError(err)
		writeHandoff(stdout, handoff{Error: &protocol.ErrorBody{Code: e.Code, Message: e.Message, Details: e.Details}})
		return 1
	}
	writeHandoff(stdout, handoff{Monitor: g.rec})
	// The launcher has what it waited for; from here on the guardian has no
	// tie to the caller's stdio.
	redirectToDevNull(1)
	g.keepCustody()
	return 0
}

func writeHandoff(w *os.File, h handoff) {
	data, _ := json.Marshal(h)
	w.Write(append(data, '\n'))
}

func redirectToDevNull(fd int) {
	if n, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0); err == nil {
		unix.Dup3(n, fd, 0)
		unix.Close(n)
	}
}

// startCustody does everything up to the durable running handoff: the
// non-reaping probe, the monitor directory, the output pipe and log, the
// child, the control socket and the first record.
func startCustody(spec Spec) (_ *guardian, err error) {
	redirectToDevNull(0)
	// Compiling the redactor is the guardian's largest piece of work before
	// the handoff; it overlaps the directory, pipe and spawn syscalls below.
	compiled := compileRedactor(spec.Secrets)
	if err := probeNonReaping(); err != nil {
		return nil, protocol.Errorf(protocol.CodeNonreapingUnavailable, "waitid(WNOWAIT) is unavailable (%v): the guardian cannot observe an exit without reaping, so it refuses to start", err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, protocol.Errorf(protocol.CodeNonreapingUnavailable, "become child subreaper: %v", err)
	}
	dir, err := state.Open(spec.StateDir)
	if err != nil {
		return nil, err
	}
	if err := dir.CreateMonitorDir(spec.MonitorID); err != nil {
		return nil, err
	}
	g := &guardian{
		spec:     spec,
		dir:      dir,
		mdir:     dir.MonitorDir(spec.MonitorID),
		self:     os.Getpid(),
		exited:   make(chan exitStatus, 1),
		cancels:  make(chan cancelRequest, 1),
		sigchld:  make(chan os.Signal, 1),
		signals:  make(chan os.Signal, 1),
		finished: make(chan struct{}),
	}
	defer func() {
		if err != nil {
			// No running handoff: leave nothing behind, not even the directory.
			if g.ctl != nil {
				g.ctl.close()
			}
			dir.RemoveMonitorDir(spec.MonitorID)
		}
	}()
	if g.selfTicks, err = StartTicks(g.self); err != nil {
		return nil, fmt.Errorf("read own start time: %w", err)
	}
	if f, err := os.OpenFile(filepath.Join(g.mdir, "guardian.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
		unix.Dup3(int(f.Fd()), 2, 0)
		f.Close()
	}
	signal.Notify(g.sigchld, syscall.SIGCHLD)
	signal.Notify(g.signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	path, err := lookPath(spec.Argv[0], spec.Env, spec.Cwd)
	if err != nil {
		return nil, err
	}
	g.out, err = newOutputCopier(g.mdir, spec)
	if err != nil {
		return nil, err
	}
	if g.ctl, err = g.listen(); err != nil {
		g.out.abandon()
		return nil, err
	}
	if err := g.spawn(path); err != nil {
		g.out.abandon()
		return nil, err
	}
	// The redactor sits between the pipe and the log: a raw secret never
	// reaches the disk, and the secrets live only in this process. Until
	// it is ready the child's output waits in the pipe.
	c := <-compiled
	if c.err != nil {
		g.abortChild()
		return nil, protocol.Errorf(protocol.CodeInvalidRequest, "secrets: %w", c.err).With("field", "secrets")
	}
	g.redactText = c.redactor.String
	g.out.filter = c.redactor.NewStream()
	go g.out.run()
	if g.childTicks, err = StartTicks(g.child); err != nil {
		// The child is ours and unreaped, so its stat exists even as a zombie.
		return nil, fmt.Errorf("read child start time: %w", err)
	}
	if spec.Owner != nil {
		g.owner = watchOwner(*spec.Owner)
	}
	now := nowMs()
	g.rec = &state.Monitor{
		MonitorID:            spec.MonitorID,
		RunID:                spec.RunID,
		Name:                 g.redactText(spec.Name),
		Argv:                 redactAll(g.redactText, spec.Argv),
		Cwd:                  spec.Cwd,
		CommandOrdinal:       spec.CommandOrdinal,
		BootID:               state.BootID(),
		PID:                  g.child,
		PGID:                 g.child,
		ChildStartTicks:      g.childTicks,
		GuardianPID:          g.self,
		GuardianStartTicks:   g.selfTicks,
		AdmittedAtMs:         spec.AdmittedAtMs,
		StartedAtMs:          now,
		OwnershipExpiresAtMs: now + spec.OwnerGraceMs,
		OwnerGraceMs:         spec.OwnerGraceMs,
		WorkDeadlineMs:       spec.WorkDeadlineMs,
		MaxOutputBytes:       spec.MaxOutputBytes,
		Phase:                state.PhaseRunning,
	}
	if err := g.save(true); err != nil {
		// Custody cannot be recorded: take the child down with us.
		g.abortChild()
		return nil, err
	}
	go g.ctl.serve(g)
	return g, nil
}

// spawn starts the child in its own process group on a thread locked for
// the guardian's life: Pdeathsig fires when the forking thread exits, so
// the thread must outlive custody. The same thread then waits for the exit
// without reaping.
func (g *guardian) spawn(path string) error {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devnull.Close()
	w := g.out.writeEnd
	attr := &syscall.ProcAttr{
		Dir:   g.spec.Cwd,
		Env:   g.spec.Env,
		Files: []uintptr{devnull.Fd(), w.Fd(), w.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	type started struct {
		pid int
		err error
	}
	result := make(chan started, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, see above
		pid, err := syscall.ForkExec(path, g.spec.Argv, attr)
		result <- started{pid, err}
		if err != nil {
			return
		}
		var info childInfo
		if err := waitid(unix.P_PID, pid, unix.WEXITED|unix.WNOWAIT, &info); err != nil {
			fmt.Fprintf(os.Stderr, "guardian: waitid on child %d: %v\n", pid, err)
			select {}
		}
		g.exited <- decodeExit(&info, nowMs())
		select {}
	}()
	r := <-result
	w.Close()
	g.out.writeEnd = nil
	if r.err != nil {
		return protocol.Errorf(protocol.CodeExecFailed, "cannot execute %q: %v", g.spec.Argv[0], execReason(r.err, g.spec.Cwd)).With("argv0", g.spec.Argv[0])
	}
	g.child = r.pid
	return nil
}

func execReason(err error, cwd string) string {
	if errors.Is(err, unix.ENOENT) {
		if _, statErr := os.Stat(cwd); statErr != nil {
			return fmt.Sprintf("working directory %s: %v", cwd, statErr)
		}
	}
	return err.Error()
}

// abortChild kills a child whose custody could not be recorded and reaps it.
func (g *guardian) abortChild() {
	unix.Kill(-g.child, unix.SIGKILL)
	unix.Kill(g.child, unix.SIGKILL)
	var info childInfo
	waitid(unix.P_PID, g.child, unix.WEXITED, &info)
}

// errRevoked means the stored record no longer belongs to this guardian.
var errRevoked = errors.New("the record no longer names this guardian")

// save writes the guardian's record under the monitor's lock, unless the
// stored record has been taken over (another guardian named, or a receipt
// written by reconcile): then it is left as it is.
func (g *guardian) save(durable bool) error {
	return g.dir.WithMonitorLock(g.spec.MonitorID, func() error {
		if g.rec.HeartbeatSeq > 0 || g.rec.Phase != state.PhaseRunning {
			stored, err := g.dir.LoadMonitor(g.spec.MonitorID)
			if err == nil && (stored.Receipt != nil || stored.GuardianPID != g.self || stored.GuardianStartTicks != g.selfTicks) {
				return errRevoked
			}
		}
		g.out.snapshot(g.rec)
		return g.dir.SaveMonitor(g.rec, durable)
	})
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
	var deadline <-chan time.Time
	if d := g.spec.WorkDeadlineMs; d != nil {
		t := time.NewTimer(time.Until(time.UnixMilli(*d)))
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
			break loop
		case <-deadline:
			cause = drainCause{status: state.StatusTimedOut, reason: "deadline", graceMs: DefaultDrainGraceMs}
			break loop
		case <-g.out.capHit:
			cause = drainCause{status: state.StatusOutputLimit, reason: "output_limit", graceMs: DefaultDrainGraceMs}
			break loop
		case <-g.owner:
			cause = drainCause{status: state.StatusCancelled, reason: "owner_exited", graceMs: DefaultDrainGraceMs}
			break loop
		case sig := <-g.signals:
			cause = drainCause{status: state.StatusCancelled, reason: "guardian_" + unix.SignalName(sig.(syscall.Signal)), graceMs: DefaultDrainGraceMs}
			break loop
		case <-g.sigchld:
			g.reapOrphans()
		case <-heartbeat.C:
			if c, ok := g.renew(); !ok {
				cause = c
				break loop
			}
		}
	}
	// An exit that raced with another cause still decides how the child ended.
	if g.exit == nil {
		select {
		case ex := <-g.exited:
			g.exit = &ex
			if cause.status != state.StatusOutputLimit && cause.status != state.StatusTimedOut {
				cause = drainCause{status: state.StatusExited, reason: "exited", graceMs: cause.graceMs}
			}
		default:
		}
	}
	g.finish(cause)
}

// renew checks that custody still holds (the record names this guardian,
// the run is active, the owner alive, the deadline not passed) and only
// then extends the ownership window. A failed check returns the drain cause.
func (g *guardian) renew() (drainCause, bool) {
	revoked := drainCause{status: state.StatusCancelled, reason: "revoked", graceMs: DefaultDrainGraceMs}
	if run, err := g.dir.LoadRun(g.spec.RunID); err != nil {
		return revoked, false
	} else if run.EndedAtMs != nil {
		return drainCause{status: state.StatusCancelled, reason: "run_ended", graceMs: DefaultDrainGraceMs}, false
	}
	if g.spec.Owner != nil && !Matches(g.spec.Owner.PID, g.spec.Owner.StartTicks) {
		return drainCause{status: state.StatusCancelled, reason: "owner_exited", graceMs: DefaultDrainGraceMs}, false
	}
	now := nowMs()
	if d := g.spec.WorkDeadlineMs; d != nil && now >= *d {
		return drainCause{status: state.StatusTimedOut, reason: "deadline", graceMs: DefaultDrainGraceMs}, false
	}
	g.rec.HeartbeatSeq++
	g.rec.OwnershipExpiresAtMs = now + g.spec.OwnerGraceMs
	// save checks, under the record's lock, that the record still names
	// this guardian. A heartbeat lost in a crash changes nothing (a reboot
	// changes the boot id, a dead guardian fails the liveness check), so
	// it is written without fsyncs.
	if err := g.save(false); err != nil {
		if errors.Is(err, errRevoked) {
			return revoked, false
		}
		fmt.Fprintf(os.Stderr, "guardian: heartbeat: %v\n", err)
	}
	return drainCause{}, true
}

// finish drains the group, writes the receipt and answers every cancel.
func (g *guardian) finish(cause drainCause) {
	// Settling is shown at once; its loss in a crash changes nothing, so it
	// skips the fsyncs that would slow every cancel.
	g.rec.Phase = state.PhaseSettling
	g.rec.OwnershipExpiresAtMs = nowMs() + cause.graceMs + drainBoundMs + g.spec.OwnerGraceMs
	if err := g.save(false); err != nil {
		fmt.Fprintf(os.Stderr, "guardian: settling: %v\n", err)
	}
	receipt := g.drain(cause)
	g.rec.Phase = state.PhaseTerminal
	g.rec.Receipt = receipt
	if err := g.save(true); err != nil {
		// errRevoked: someone else settled the record; theirs stands.
		fmt.Fprintf(os.Stderr, "guardian: receipt: %v\n", err)
	}
	g.receipt.Store(receipt)
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

// compileRedactor builds the redactor in the background.
func compileRedactor(secrets []string) <-chan compiledRedactor {
	out := make(chan compiledRedactor, 1)
	go func() {
		r, err := redact.New(secrets)
		out <- compiledRedactor{r, err}
	}()
	return out
}
