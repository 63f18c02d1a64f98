package proc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/early"
	"procmon/internal/ids"
	"procmon/internal/logtext"
	"procmon/internal/protocol"
	"procmon/internal/redact"
	"procmon/internal/state"
)

// ExecSpec is one foreground command (execute_command): the calling
// process holds its custody itself, as a guardian holds a service's, for
// as long as it runs.
type ExecSpec struct {
	Argv    []string
	Cwd     string
	Env     []string
	Secrets []string
	// DeadlineMs is when the command is drained as timed_out (wall clock,
	// milliseconds); nil: none.
	DeadlineMs *int64
	// MaxOutputBytes caps the captured output: past it the command is
	// drained as output_limit. nil: no cap.
	MaxOutputBytes *int64
	// WindowBytes is the most of the end of the redacted output returned.
	WindowBytes int64
	// GraceMs is the time between SIGTERM and SIGKILL when the command is
	// drained before it ends by itself.
	GraceMs int64
	// State is the state directory that holds the command's trace while
	// it runs (see Exec); nil: none (in-process tests).
	State *state.Dir
	// RunID is the run the command belongs to, in State: once it ends,
	// the command is drained (reason run_ended). Empty: no run watched.
	RunID string
	// Owner is the process the run is bound to: once it exits, the
	// command is drained (reason owner_exited). nil: unbound.
	Owner *state.Owner
}

// ExecResult is what became of a foreground command: its receipt (status
// exited, timed_out, output_limit, or cancelled when the caller gave up,
// its run ended or the run's owner exited) and the end of its redacted
// output.
type ExecResult struct {
	Argv        []string // redacted
	PID         int
	StartedAtMs int64
	Receipt     *state.Receipt
	// Text is the last WindowBytes (or fewer) of the redacted output,
	// never split inside a UTF-8 sequence; OutputBytes and OutputSHA256
	// describe exactly it.
	Text          string
	OutputBytes   int
	OutputSHA256  string
	CapturedBytes int64 // bytes of the command's redacted output, stored or not
	StreamBytes   int64 // bytes of the redacted stream, of which Text is the end
	// CaptureLimit: the output passed MaxOutputBytes; Window: Text leaves
	// the start of the stream out; Undrained: the output pipe was not read
	// to its end (see Receipt.OutputDrained), so the stream, and Text
	// with it, may leave out what was written last.
	CaptureLimit bool
	Window       bool
	Undrained    bool
}

// ExecInterrupted is the drain cause reason of a command whose caller
// was interrupted (or gave up) before it ended.
const ExecInterrupted = "interrupted"

// Exec runs one command in its own process group under the calling
// process's custody, with the guardian's own machinery: its spawn (stdin
// from /dev/null, stdout and stderr into one pipe, a parent-death signal),
// its output copier with the redactor in front of the captured bytes and
// the capture limit, and its drain (SIGTERM with SIGCONT, the grace,
// SIGKILL, reaping, verification that nothing of the group nor any
// escaped descendant is left, the pipe read to its end). The redacted
// stream's tail is kept in memory instead of a log.
//
// The calling process becomes a child subreaper, so a descendant that
// leaves the group with setsid is still seen and drained, and it must have
// no other children: the drain's verdict rests on it having none left. The
// command is drained as cancelled when ctx is done (reason interrupted),
// and, as a guardian drains a monitor, when its run ends (run_ended) or
// the run's owner exits (owner_exited).
func Exec(ctx context.Context, spec ExecSpec) (*ExecResult, error) {
	p, err := PrepareExec(spec)
	if err != nil {
		return nil, err
	}
	return p.Run(ctx)
}

// PreparedExec is a foreground command made ready to spawn: Run spawns
// it, Abandon lets it go unspawned.
type PreparedExec struct {
	spec      ExecSpec
	path      string
	redactor  *redact.Redactor
	out       *outputCopier
	tail      *outputTail
	child     chan os.Signal
	selfTicks uint64
	bootID    string
}

// PrepareExec does all of Exec that comes before the spawn and decides
// nothing: a caller may do it while its command slot is made durable (an
// fdatasync, during which this process has a CPU to spare), and spawn only
// once the slot is. Done so, an exec of true took 8.6 ms instead of 9.3
// (medians of 61, interleaved, load 1.8; 10.5 instead of 11.0 at load
// 13).
func PrepareExec(spec ExecSpec) (*PreparedExec, error) {
	if err := probeNonReaping(); err != nil {
		return nil, protocol.Errorf(protocol.CodeNonreapingUnavailable, "waitid(WNOWAIT) is unavailable (%v): procmon cannot observe an exit without reaping, so it refuses to run the command", err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, protocol.Errorf(protocol.CodeNonreapingUnavailable, "become child subreaper: %v", err)
	}
	redactor, err := redact.New(spec.Secrets)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidRequest, "secrets: %w", err).With("field", "secrets")
	}
	path, err := lookPath(spec.Argv[0], spec.Env, spec.Cwd)
	if err != nil {
		return nil, redactError(err, redactor.String)
	}
	p := &PreparedExec{spec: spec, path: path, redactor: redactor}
	if spec.State != nil {
		// What the trace names besides the command (see traceExec).
		if p.selfTicks, err = StartTicks(os.Getpid()); err != nil {
			return nil, fmt.Errorf("read own start time: %w", err)
		}
		p.bootID = state.BootID()
	}
	out, err := newOutputCopier()
	if err != nil {
		return nil, err
	}
	// The copier's log is a memory file that stays empty: the stored
	// output goes to the tail, which keeps its end.
	memfd, err := unix.MemfdCreate("procmon-exec", unix.MFD_CLOEXEC)
	if err != nil {
		out.abandon()
		return nil, protocol.Errorf(protocol.CodeInternal, "memfd_create: %w", err)
	}
	out.log = os.NewFile(uintptr(memfd), "exec-output")
	out.logFD = uintptr(memfd)
	p.tail = &outputTail{keep: logtext.Span(spec.WindowBytes)}
	out.filter = redactor.NewStream()
	out.store = p.tail.add
	if spec.MaxOutputBytes != nil {
		out.limit = *spec.MaxOutputBytes
	}
	p.out = out
	p.child = make(chan os.Signal, 1)
	signal.Notify(p.child, syscall.SIGCHLD)
	return p, nil
}

// Abandon releases what PrepareExec made, for a command that is not run.
func (p *PreparedExec) Abandon() {
	signal.Stop(p.child)
	p.out.abandon()
}

// Run spawns the prepared command and holds its custody until it is
// drained (see Exec).
func (p *PreparedExec) Run(ctx context.Context) (*ExecResult, error) {
	spec, out, redactor, tail, child := p.spec, p.out, p.redactor, p.tail, p.child
	defer signal.Stop(child)
	g := &guardian{
		spec:       Spec{Argv: spec.Argv, Cwd: spec.Cwd, Env: spec.Env},
		self:       os.Getpid(),
		selfTicks:  p.selfTicks,
		bootID:     p.bootID,
		exited:     make(chan exitStatus, 1),
		sig:        &early.Signals{Child: child},
		out:        out,
		ownSession: true,
	}
	spawned := make(chan error, 1)
	go g.custody(p.path, spawned)
	if err := <-spawned; err != nil {
		out.abandon()
		return nil, redactError(err, redactor.String)
	}
	traceID, err := g.traceExec(spec.State)
	if err != nil {
		g.abortChild()
		out.abandon()
		return nil, err
	}
	res := &ExecResult{Argv: redactAll(redactor.String, spec.Argv), PID: g.child, StartedAtMs: g.spawnedAtMs}
	go out.run()
	looking := make(chan struct{})
	var looked chan struct{} // nil without a trace: never ready
	trace := traceEscapes{dir: spec.State, id: traceID}
	if spec.State != nil {
		looked = make(chan struct{}, 1)
		go g.watchEscapes(execEscapePeriod, looking, looked)
	}

	var deadline <-chan time.Time
	if d := spec.DeadlineMs; d != nil {
		t := time.NewTimer(time.Until(monoDeadline(*d)))
		defer t.Stop()
		deadline = t.C
	}
	// The run's end reaches no exec directly (run end drains monitors
	// through their guardians' sockets): the run is looked at instead.
	var owner <-chan struct{} // nil: unbound, never ready
	if spec.Owner != nil {
		owner = watchOwner(*spec.Owner)
	}
	var runCheck <-chan time.Time // nil: no run, never ready
	if spec.State != nil && spec.RunID != "" {
		t := time.NewTicker(execRunCheckPeriod)
		defer t.Stop()
		runCheck = t.C
	}
	var cause drainCause
loop:
	for {
		select {
		case ex := <-g.exited:
			g.exit = &ex
			cause = drainCause{status: state.StatusExited, reason: "exited", graceMs: spec.GraceMs}
			break loop
		case <-deadline:
			cause = drainCause{status: state.StatusTimedOut, reason: "deadline", graceMs: spec.GraceMs}
			break loop
		case <-out.capHit:
			cause = drainCause{status: state.StatusOutputLimit, reason: "output_limit", graceMs: spec.GraceMs}
			break loop
		case <-ctx.Done():
			cause = drainCause{status: state.StatusCancelled, reason: ExecInterrupted, graceMs: spec.GraceMs}
			break loop
		case <-owner:
			cause = ownerExited
			cause.graceMs = spec.GraceMs
			break loop
		case <-runCheck:
			// A run that cannot be read is looked at again next time: it
			// is the state directory that failed, not the command's run.
			if c, over, err := runOver(spec.State, spec.RunID, spec.Owner); err == nil && over {
				cause = c
				cause.graceMs = spec.GraceMs
				break loop
			}
		case <-child:
			g.reapOrphans()
		case <-looked:
			trace.record(g.escaped.Load())
		}
	}
	close(looking) // the drain looks for itself
	res.Receipt = g.drain(g.exitRaced(cause))
	if spec.State != nil && res.Receipt.GroupEmptyVerified {
		// Nothing is left for the trace to point to.
		spec.State.RemoveMonitorDir(traceID)
	}
	if !res.Receipt.OutputDrained {
		// Something still holds the pipe's write end: a member that
		// survived SIGKILL, or a process outside the command that was
		// handed it. Closing the read end wakes the copier's read, and it
		// ends at once, the filter flushed into the tail: what was read
		// is the text, which leaves out whatever was not (Undrained).
		out.pipe.Close()
		<-out.done
		// What the copier read since the drain gave up on the pipe
		// counts against the cap as well.
		capOverridesExit(res.Receipt, out)
	}

	res.CapturedBytes = out.captured.Load()
	res.CaptureLimit = spec.MaxOutputBytes != nil && res.CapturedBytes > *spec.MaxOutputBytes
	res.Undrained = !res.Receipt.OutputDrained
	tail.window(res, spec.WindowBytes)
	return res, nil
}

// traceExec records, in a directory of the state directory's monitors,
// this process and the session the command leads (it is spawned as a
// session leader), so that should this process die with the command's
// descendants still running (SIGKILL: the command itself dies with it, its
// parent-death signal, but not what it started), the next list finds them
// by that session and stops them (see SweepAbandoned). The directory holds
// no record, so it is no monitor: it goes when the command's group is
// verified empty. A descendant forked in the moment between the spawn and
// the trace, by a command whose custodian dies in that moment, is not
// covered. The sessions that the command's descendants make with setsid,
// out of its own, are kept in the trace as its custodian sees them (see
// traceEscapes); one made after its last look is not covered either.
func (g *guardian) traceExec(dir *state.Dir) (string, error) {
	if dir == nil {
		return "", nil
	}
	ticks, err := StartTicks(g.child)
	if err != nil {
		return "", fmt.Errorf("read the command's start time: %w", err)
	}
	id := ids.NewID("m_")
	mk := state.Maker{GuardianPID: g.self, GuardianStartTicks: g.selfTicks, BootID: g.bootID, Session: g.child, SessionTicks: ticks}
	if err := dir.CreateMonitorDir(id, mk); err != nil {
		return "", fmt.Errorf("record the command's trace: %w", err)
	}
	return id, nil
}

// execRunCheckPeriod is how often a foreground command's custodian looks
// whether its run has ended (and its owner exited, which a pidfd also
// tells at once): the command outlives its run's end by at most this.
// A look (a read of the small run record and of the owner's stat) took
// 24 µs here, so twice a second costs about 0.005% of a core.
const execRunCheckPeriod = 500 * time.Millisecond

// execEscapePeriod is how often, once the command has run a while, its
// custodian looks for sessions its descendants made: as a guardian of the
// default grace does (see watchEscapes).
const execEscapePeriod = state.DefaultOwnerGraceSeconds * time.Second / 3

// traceEscapes keeps the escaped sessions in a foreground command's trace
// (see traceExec) as its custodian sees them, so that should it die, the
// sweep of the trace stops them as well as the command's own session.
type traceEscapes struct {
	dir      *state.Dir
	id       string
	recorded *escapes // as stored; nil: none yet
}

// record stores the sessions of the look e unless the trace already names
// them. A write that fails is tried again after the next look.
func (t *traceEscapes) record(e *escapes) {
	if e == nil || (t.recorded == nil && len(e.sessions) == 0 && !e.truncated) {
		return
	}
	if t.recorded != nil && e.names(t.recorded.sessions, t.recorded.truncated) {
		return
	}
	if err := t.dir.SaveTraceEscapes(t.id, &state.TraceEscapes{EscapedSessions: e.sessions, EscapedSessionsTruncated: e.truncated}); err == nil {
		t.recorded = e
	}
}

// outputTail keeps the last keep bytes of a foreground command's stored
// output (redacted, and cut at the capture limit) in memory, instead of a
// log.
type outputTail struct {
	keep  int64
	buf   []byte
	total int64
}

func (t *outputTail) add(p []byte) {
	t.total += int64(len(p))
	t.buf = append(t.buf, p...)
	// Compacted once it holds twice what is kept, so each byte is copied
	// a bounded number of times.
	if over := int64(len(t.buf)) - t.keep; over > 0 && int64(len(t.buf)) > 2*t.keep+4096 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
}

// window fills res with the last maxBytes of text of the ended stream, as
// a tail window of a monitor's log reads it (see package logtext).
func (t *outputTail) window(res *ExecResult, maxBytes int64) {
	size := t.total
	base := size - int64(len(t.buf)) // stream offset of t.buf[0]
	lo, _ := logtext.LastRange(maxBytes, size)
	w := logtext.Last(logtext.Held{Bytes: t.buf[lo-base:], Base: lo, Size: size, Ended: true}, maxBytes)
	res.StreamBytes = size
	res.Window = w.Cut
	res.Text = string(w.Text)
	res.OutputBytes = len(res.Text)
	sum := sha256.Sum256([]byte(res.Text))
	res.OutputSHA256 = hex.EncodeToString(sum[:])
}
