package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/early"
	"procmon/internal/fault"
	"procmon/internal/ids"
	"procmon/internal/protocol"
	"procmon/internal/redact"
	"procmon/internal/state"
)

// This file is the start: both sides of the handshake between the
// launcher (the "procmon start" process) and the guardian it launches,
// from the launch to the durable running handoff. Start is its one entry.
//
//	launcher (procmon start)                  guardian (procmon __guardian)
//	------------------------                  -----------------------------
//	init (package early): fork+exec ────────▶ boots, catches its signals
//	make monitors/.tmp-m_ID, naming the
//	  guardian (state.Maker); rename it
//	  to monitors/m_ID                        waits for the spec on stdin
//	admit: run, grants, owner
//	work out argv[0]'s path (prepare)
//	under the run's lock, take the slot:
//	  send the spec ────────────────────────▶ compiles the secrets, opens the
//	  make the slot durable                    control socket and the first
//	                                           record's temp file
//	'g' (slotDurable) ──────────────────────▶ spawns the service (its session)
//	sync the directory, make output.log
//	'd' (dirDurable) ───────────────────────▶ opens output.log, writes the
//	                                           first record (durable)
//	reads the handoff ◀───────────────────── the record, or a typed error
//	returns the monitor                        keeps custody; never waited for
//
// A pipe closed before a byte stops the start, on either side. The
// launcher gives the guardian the run's ownership grace to hand off, then
// kills it. What a guardian that died or was killed had spawned is in its
// session, which the directory's maker names: the launcher stops it
// (directly, or through reconcile once a record exists), and a launcher
// that died itself leaves the directory for the next list (see
// SweepAbandoned). A guardian is launched before main when it can be (see
// package early): the two processes' boots overlap.

// GuardianArg is the hidden subcommand that runs a guardian.
const GuardianArg = early.GuardianArg

// StartRequest is a start as the caller resolved it.
type StartRequest struct {
	Command
	RunID string
	Name  string
}

// Command is what start and exec run, resolved against the caller.
type Command struct {
	Argv      []string
	Cwd       string            // absolute
	Env       map[string]string // added to Inherited, replacing its own
	Inherited []string          // the caller's environment, NAME=VALUE
	Secrets   []string
	SecretEnv []string // names of variables whose values are secrets
	// TimeoutSeconds is the request's work deadline counted from
	// admission; nil: none asked.
	TimeoutSeconds *int64
}

// check refuses, before a slot is taken or anything is spawned, what no
// program could be given.
func (c *Command) check() error {
	if len(c.Argv) == 0 {
		return protocol.Errorf(protocol.CodeInvalidRequest, `field "argv" is required and must not be empty`).With("field", "argv")
	}
	if c.Argv[0] == "" {
		return protocol.Errorf(protocol.CodeInvalidRequest, `field "argv": argv[0] is empty`).With("field", "argv")
	}
	if err := protocol.SecondsOrNull("timeout_seconds", c.TimeoutSeconds); err != nil {
		return err
	}
	// A NUL byte cannot cross execve.
	for i, a := range c.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return protocol.Errorf(protocol.CodeInvalidRequest, `field "argv": argv[%d] holds a NUL byte, which no program can be passed`, i).With("field", "argv")
		}
	}
	if strings.IndexByte(c.Cwd, 0) >= 0 {
		return protocol.Errorf(protocol.CodeInvalidRequest, `field "cwd" holds a NUL byte`).With("field", "cwd")
	}
	for k, v := range c.Env {
		if !state.VarName(k) || strings.IndexByte(v, 0) >= 0 {
			return protocol.Errorf(protocol.CodeInvalidRequest, `field "env": %q=... is not a variable a program can be given (an empty name, or "=" or a NUL byte in it)`, k).With("field", "env")
		}
	}
	if err := state.CheckSecretEnv(c.SecretEnv); err != nil {
		return err
	}
	for i, s := range c.Secrets {
		if len(s) < redact.MinSecretLen {
			return protocol.Errorf(protocol.CodeInvalidRequest, "secrets[%d] is shorter than %d bytes; so short a secret would shred ordinary output", i, redact.MinSecretLen).With("field", "secrets")
		}
	}
	if !redact.Compilable(c.Secrets) {
		return errTooMuchSecret(true, nil)
	}
	return c.checkSize()
}

// maxArgLen is the longest string execve passes, its NUL counted
// (MAX_ARG_STRLEN).
const maxArgLen = 32 * 4096

// checkSize refuses a command that execve would refuse as an argument
// list too long (E2BIG): a string of maxArgLen bytes or more, or strings
// and their pointers past the kernel's limit, a quarter of the stack's
// (at most 6 MiB, at least maxArgLen). Found at exec, it cost the slot
// the command took. The count leaves out what the kernel adds (the
// program's path, a script's interpreter), so it refuses nothing that
// execve would run. The refusal names the bound, never a size: an
// argument or variable may hold a secret, whose length is not told.
func (c *Command) checkSize() error {
	for i, a := range c.Argv {
		if len(a)+1 > maxArgLen {
			return protocol.Errorf(protocol.CodeInvalidRequest, `field "argv": argv[%d] is longer than execve passes (%d bytes in one argument)`, i, maxArgLen-1).With("field", "argv")
		}
	}
	for k, v := range c.Env {
		if len(k)+1+len(v)+1 > maxArgLen {
			return protocol.Errorf(protocol.CodeInvalidRequest, `field "env": %s=... is longer than execve passes (%d bytes in one variable)`, k, maxArgLen-1).With("field", "env")
		}
	}
	limit := uint64(6 << 20)
	var stack unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_STACK, &stack) == nil && stack.Cur != unix.RLIM_INFINITY {
		limit = min(limit, stack.Cur/4)
	}
	limit = max(limit, maxArgLen)
	env := c.Environ()
	size := uint64(len(c.Argv)+len(env)) * 8
	for _, a := range c.Argv {
		size += uint64(len(a)) + 1
	}
	for _, kv := range env {
		size += uint64(len(kv)) + 1
	}
	if size > limit {
		return protocol.Errorf(protocol.CodeInvalidRequest, `fields "argv" and "env": the arguments and environment are longer than execve passes here (%d bytes, a quarter of the stack limit)`, limit).With("field", "argv")
	}
	return nil
}

// Environ is the command's environment: the request's variables over
// the inherited ones.
func (c *Command) Environ() []string {
	out := make([]string, 0, len(c.Inherited)+len(c.Env))
	for _, kv := range c.Inherited {
		k, _, _ := strings.Cut(kv, "=")
		if _, replaced := c.Env[k]; !replaced {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(c.Env))
	for k := range c.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, k+"="+c.Env[k])
	}
	return out
}

// secrets are what the output of the command, run with env in run, is
// redacted of, and warnings about secret-looking variables left alone
// (see redact.Secrets): the request's secrets, and the variables the
// request or the run's settings name as secret or that look secret.
//
// A name the request gives that the environment does not set (or sets
// empty) is named in a warning too: it is most often a typo, and the
// caller believes a value redacted that the service may still print.
// The settings' names are not: they apply to every command, most of
// which have no such variable.
func (c *Command) secrets(env []string, run *state.Run) (secrets, warnings []string, err error) {
	secrets, vars, warnings := redact.Secrets(env, c.Secrets, append(slices.Clip(c.SecretEnv), run.Policy.SecretEnv...))
	if !redact.Compilable(secrets) {
		return nil, nil, errTooMuchSecret(len(c.Secrets) > 0, vars)
	}
	for i, n := range c.SecretEnv {
		if slices.Contains(c.SecretEnv[:i], n) {
			continue
		}
		if !slices.ContainsFunc(env, func(kv string) bool { k, v, _ := strings.Cut(kv, "="); return k == n && v != "" }) {
			warnings = append(warnings, fmt.Sprintf("secret_env names %s, which the command's environment does not set (or sets empty): nothing is redacted for it", n))
		}
	}
	return secrets, warnings, nil
}

// errTooMuchSecret refuses a command whose secrets, with the values of its
// secret variables vars, are more than a guardian compiles (see
// redact.Compilable). It names the bounds and the variables, and no size
// of a secret. (A caller probing the bounds with secrets of its own could
// learn a variable's length, and how many of its characters escapings
// change: no more than any command it runs may print, ${#NAME} and more.)
func errTooMuchSecret(given bool, vars []string) error {
	what, verb, fix := "the secrets given", "are", "pass fewer or shorter secrets"
	const empty = `set it empty for this command if the command does not need it (--env NAME=, or "env": {"NAME": ""} in a request)`
	switch {
	case len(vars) == 1:
		what, verb, fix = "the value of the secret variable "+vars[0], "is", strings.Replace(empty, "NAME", vars[0], 2)
	case len(vars) > 1:
		what, fix = "the values of the secret variables "+strings.Join(vars, ", "), `set empty for this command those the command does not need (--env NAME=, or "env": {"NAME": ""} in a request)`
	}
	if given && len(vars) > 0 {
		what, verb, fix = "the secrets given and "+what, "are", "pass fewer secrets, or "+fix
	}
	return protocol.Errorf(protocol.CodeInvalidRequest,
		"%s %s more than procmon redacts for one command: at most %d bytes (64 KiB) of distinct secrets, and less where escapings lengthen them (quotes, backslashes, <, >, &, control characters, non-ASCII) or where they are thousands; %s",
		what, verb, redact.MaxSecretsLen, fix).With("field", "secrets")
}

// OwnerAlive reports whether a run's owner is the process it was bound to.
func OwnerAlive(o state.Owner) bool { return Matches(o.PID, o.StartTicks) }

// Start starts req's command under a guardian and returns once the
// running handoff is durable: the monitor, and warnings about the request
// (a secret-looking variable too short to redact). The command takes one
// slot of the run's budget, never refunded. A start refused or failed
// leaves no guardian, directory or process behind, and never reports
// failure for a monitor that exists: a guardian lost during the start is
// reconciled, and the error names the monitor and its receipt.
func Start(dir *state.Dir, req StartRequest) (*state.Monitor, []string, error) {
	admitted, admittedMono := nowMs(), state.MonoNowMs()
	if err := req.check(); err != nil {
		early.AbandonLaunched()
		return nil, nil, err
	}
	// The guardian boots while the start is admitted and the monitor's
	// directory is made; it spawns nothing until the handoff.
	pg, err := takeLaunched(dir)
	if err != nil {
		return nil, nil, err
	}
	defer pg.abandon() // nothing once handed off
	run, err := dir.Admit(req.RunID, state.StartTool, admitted, OwnerAlive)
	if err != nil {
		return nil, nil, err
	}
	env := req.Environ()
	secrets, warnings, err := req.secrets(env, run)
	if err != nil {
		return nil, nil, err
	}
	sb := run.Policy.Sandbox
	spec := Spec{
		StateDir:       dir.Path,
		MonitorID:      pg.monitorID,
		RunID:          run.RunID,
		Name:           req.Name,
		Argv:           req.Argv,
		Cwd:            req.Cwd,
		Env:            env,
		Secrets:        secrets,
		AdmittedAtMs:   admitted,
		AdmittedMonoMs: admittedMono,
		MonoClock:      state.MonoClock(),
		WorkDeadlineMs: run.WorkDeadline(admitted, req.TimeoutSeconds),
		MaxOutputBytes: sb.MaxOutputBytes,
		OwnerGraceMs:   run.Policy.OwnerGraceSeconds() * 1000,
		Owner:          run.Owner,
	}
	pg.prepare(&spec)
	// The slot is taken before anything is spawned. The guardian has the
	// spec while the slot is made durable, and spawns the child only at
	// the handoff, once it is.
	_, err = dir.TakeOrdinal(run.RunID, sb.CommandLimit, func(ordinal int64) error {
		spec.CommandOrdinal = ordinal
		return pg.send(spec)
	})
	if err != nil {
		return nil, nil, err
	}
	m, err := pg.handoff()
	if err != nil {
		return nil, nil, slotUsed(err, spec.CommandOrdinal)
	}
	return m, warnings, nil
}

// slotUsed is err, a command's failure once its slot ordinal was taken,
// with the slot in its details: it stays used (SPEC 2). An exec failure
// names it in its message too, which a person retrying a mistyped
// program should not have to find in the details.
func slotUsed(err error, ordinal int64) error {
	if !protocol.HasCode(err, protocol.CodeExecFailed) {
		return protocol.Wrapf(err, "%w", err).With("command_ordinal", ordinal)
	}
	return protocol.Wrapf(err, "%w; %s", err, slotUsedPhrase(ordinal)).With("command_ordinal", ordinal)
}

// slotUsedPhrase says that a command's slot stays used.
func slotUsedPhrase(ordinal int64) string {
	return fmt.Sprintf("command slot %d of the run is used", ordinal)
}

// takeLaunched takes charge of the guardian that package early launched
// before main for this start, or launches one now: early launches only
// for a state directory already made, and only this one may be used.
func takeLaunched(dir *state.Dir) (*pendingGuardian, error) {
	if g := early.TakeLaunched(); g != nil {
		if pg, err := adoptGuardian(dir, g); err == nil {
			return pg, nil
		}
	}
	return startGuardian(dir, ids.NewID("m_"))
}

// pendingGuardian is a guardian process started before its spec is known.
// A Go process takes milliseconds to boot, so the guardian is launched
// first; while it boots, the caller does admission, takes the command
// slot and makes the monitor's directory.
//
// The guardian's stdin carries the spec (send), then two bytes (handoff):
// slotDurable once the command slot is durable, and dirDurable once the
// monitor's directory is. The guardian prepares the start from the spec,
// spawns the child only after the first byte and writes the first record
// only after the second. A pipe closed before them stops the start. The
// directory exists, naming the guardian (state.Maker), before the spec is
// sent: whatever the guardian spawns is in its session, which the
// directory makes provable should the guardian die before its record.
type pendingGuardian struct {
	g          *early.Guardian
	dir        *state.Dir
	monitorID  string
	ticks      uint64        // the guardian's start time, once created is closed (0: unread)
	created    chan struct{} // closed once the directory and the first record's temp file exist
	createdErr error         // why they do not; read after created is closed
	made       chan struct{} // closed once the log is made too and all is durable, or cannot be
	madeErr    error         // why not; read after made is closed
	sent       bool          // send has written the spec
	graceMs    int64         // the spec's ownership grace: how long the handoff may take
	ordinal    int64         // the spec's command slot
	done       bool
}

// The bytes that follow the spec on the guardian's stdin.
const (
	slotDurable = 'g' // the command slot is durable: the child may be spawned
	dirDurable  = 'd' // the directory is durable: the record may be written
)

// startGuardian starts a detached guardian for monitorID in dir and makes
// the monitor's directory in the background. The guardian waits for its
// spec. It runs in its own session and lets go of the caller's stdio at
// the handoff, so the caller may exit or be killed without touching the
// service.
func startGuardian(dir *state.Dir, monitorID string) (*pendingGuardian, error) {
	if err := state.ValidMonitorID(monitorID); err != nil {
		return nil, err
	}
	g, err := early.LaunchGuardian(dir.Path, monitorID)
	if err != nil {
		return nil, err
	}
	return adoptGuardian(dir, g)
}

// adoptGuardian takes charge of a guardian already launched for dir (by
// early, before main) as startGuardian would have. A guardian launched
// for another directory, or with an id that is not a monitor id, is
// abandoned instead.
func adoptGuardian(dir *state.Dir, g *early.Guardian) (*pendingGuardian, error) {
	if g.StateDir != dir.Path {
		g.Abandon()
		return nil, fmt.Errorf("guardian launched for state directory %s, not %s", g.StateDir, dir.Path)
	}
	if err := state.ValidMonitorID(g.MonitorID); err != nil {
		g.Abandon()
		return nil, err
	}
	pg := &pendingGuardian{g: g, dir: dir, monitorID: g.MonitorID,
		created: make(chan struct{}), made: make(chan struct{})}
	go func() {
		defer close(pg.made)
		// The guardian is this process's child and is never reaped here
		// before the handoff, so its pid names it still.
		pg.ticks, _ = StartTicks(g.PID)
		pg.createdErr = dir.CreateMonitorDir(pg.monitorID, state.Maker{GuardianPID: g.PID, GuardianStartTicks: pg.ticks, BootID: state.BootID()})
		close(pg.created)
		if pg.createdErr != nil {
			pg.madeErr = pg.createdErr
			return
		}
		// The log's entry is made durable with the record's (see
		// SyncMonitorDir), so the log is made while the rest is synced.
		synced := make(chan error, 1)
		go func() { synced <- dir.SyncMonitorDir(pg.monitorID) }()
		logErr := makeLog(dir, pg.monitorID)
		if pg.madeErr = <-synced; logErr != nil {
			pg.madeErr = logErr
		}
	}()
	return pg, nil
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

// abandon sends no spec: the guardian exits, abandon waits for it and
// removes the monitor's directory, so a refused start leaves no guardian
// and no directory behind. After handoff it does nothing.
func (pg *pendingGuardian) abandon() {
	if pg.done {
		return
	}
	pg.done = true
	<-pg.made
	pg.g.Spec.Close()
	pg.g.Handoff.Close()
	pg.g.Wait()
	pg.dir.RemoveMonitorDir(pg.monitorID)
}

// prepare works out, while the guardian boots, what the guardian would
// otherwise do itself before it spawns the child: the path of argv[0]
// through the child's PATH and cwd, and the guardian's start time. What it
// cannot work out it leaves for the guardian (a missing program is then
// reported by the guardian, after the command slot is taken, as always).
func (pg *pendingGuardian) prepare(spec *Spec) {
	if len(spec.Argv) > 0 {
		if path, err := lookPath(spec.Argv[0], spec.Env, spec.Cwd); err == nil {
			spec.Path = path
		}
	}
	if <-pg.created; pg.ticks != 0 {
		spec.GuardianStartTicks = pg.ticks
	}
}

// send sends the spec once the monitor's directory exists; the guardian
// prepares the start from it but spawns nothing before handoff. It may be
// called before the command slot in the spec is durable. After an error,
// abandon cleans up.
func (pg *pendingGuardian) send(spec Spec) error {
	if <-pg.created; pg.createdErr != nil {
		return pg.createdErr
	}
	data, err := spec.MarshalBinary()
	if err == nil {
		fault.Point("start:before_spec")
		_, err = pg.g.Spec.Write(data)
	}
	if errors.Is(err, syscall.EPIPE) {
		// Sent as the command slot is taken, which stays used (as an
		// exec_failed start's does): say which.
		return protocol.Errorf(protocol.CodeInternal, "the guardian of %s ended before it took the start (killed, or failed as it began: its stderr says why); nothing was started, and %s", pg.monitorID, slotUsedPhrase(spec.CommandOrdinal)).
			With("command_ordinal", spec.CommandOrdinal)
	}
	if err != nil {
		return fmt.Errorf("send spec to guardian: %w", err)
	}
	fault.Point("start:after_spec")
	pg.sent = true
	pg.graceMs = spec.OwnerGraceMs
	pg.ordinal = spec.CommandOrdinal
	return nil
}

// handoff tells the guardian sent its spec that the command slot is
// durable, then that the directory is, and returns once the guardian has
// durably recorded the running handoff, or with the error that stopped it
// (exec_failed, nonreaping_unavailable, ...). What a guardian that died
// during the start had spawned is stopped here, found in its session: with
// its record written, through reconcile (the error names the monitor,
// whose receipt says what was found); without, directly, and nothing is
// left.
func (pg *pendingGuardian) handoff() (*state.Monitor, error) {
	if !pg.sent {
		return nil, errors.New("handoff before the spec was sent")
	}
	pg.done = true
	defer pg.g.Handoff.Close()
	_, tellErr := pg.g.Spec.Write([]byte{slotDurable})
	if <-pg.made; pg.madeErr == nil && tellErr == nil {
		_, tellErr = pg.g.Spec.Write([]byte{dirDurable})
	}
	pg.g.Spec.Close()
	fault.Point("start:before_handoff")
	// A guardian that has not handed off within the ownership grace (it
	// was stopped, or is wedged) has lost the start: it is killed (it is
	// this process's unreaped child, so its pid names it still), and what
	// it spawned is stopped below, as for one that died.
	bound := time.Duration(max(pg.graceMs, 1000)) * time.Millisecond
	var killedStalled atomic.Bool
	stalled := time.AfterFunc(bound, func() {
		killedStalled.Store(true)
		syscall.Kill(pg.g.PID, syscall.SIGKILL)
	})
	// Read as soon as it is written (the guardian lets go of the pipe only
	// after it), by a blocking read: the kernel wakes this thread itself.
	h, err := readHandoff(bufio.NewReader(pg.g.Handoff))
	if !stalled.Stop() && h.Monitor != nil {
		// Killed just after it handed off: it is lost like any other
		// guardian that dies, and status says so.
		h.Monitor = nil
	}
	if err != nil {
		h.Error = &protocol.ErrorBody{Code: protocol.CodeInternal, Message: "read guardian handoff: " + err.Error()}
	}
	if h.Monitor != nil {
		// The guardian outlives this process; it is never waited for.
		return h.Monitor, nil
	}
	// No running handoff: the guardian is exiting or dead. Wait for it, so
	// a failed start provably leaves no guardian behind.
	ended := pg.g.Wait()
	// A guardian that this process killed, and not its own death, is what
	// the answer then says: it was killed for not handing off.
	died := "it died"
	if killedStalled.Load() {
		died = fmt.Sprintf("it did not hand off within %v, stopped or wedged, so procmon killed it", bound)
	}
	if _, err := pg.dir.LoadMonitor(pg.monitorID); !protocol.HasCode(err, protocol.CodeUnknownMonitor) {
		return nil, pg.settleLost(h.Error, died)
	}
	// Nothing was recorded. A guardian that failed on its own stopped what
	// it had spawned; one that died may have left some of it, in its
	// session: that is stopped here, and the directory goes once nothing
	// is left (else it stays, naming the guardian, for list to settle).
	if end := stopLost(pg.g.PID, pg.ticks, nil); len(end.left) > 0 {
		return nil, protocol.Errorf(protocol.CodeInternal, "the guardian of %s died during the start, and %d of the processes it had started could not be stopped", pg.monitorID, len(end.left)).With("kill_unconfirmed", end.left)
	} else if end.outOfSight {
		return nil, protocol.Errorf(protocol.CodeInternal, "the guardian of %s died during the start, and the processes it had started forked faster than they could be stopped: some may be left", pg.monitorID)
	}
	pg.dir.RemoveMonitorDir(pg.monitorID)
	switch {
	case h.Error != nil && (pg.madeErr == nil || h.Error.Message != errNotDurable.Error()):
		// What stopped the guardian. (A guardian that failed on its own
		// removed the directory, which may have failed the launcher's
		// making of it too.)
		return nil, &protocol.Error{Code: h.Error.Code, Message: h.Error.Message, Details: h.Error.Details}
	case pg.madeErr != nil: // the guardian stopped because of it
		return nil, pg.madeErr
	}
	// How it ended says what happened; a failed tell (a broken pipe) is
	// only its echo. The slot stays used, as in send.
	slot := slotUsedPhrase(pg.ordinal)
	if ended.Signaled() {
		// Killed, it said nothing: sending the reader to its stderr sent
		// them to nothing.
		if killedStalled.Load() {
			return nil, protocol.Errorf(protocol.CodeInternal, "guardian of %s stopped before the running handoff (%s); what was left of its session was stopped, and %s", pg.monitorID, died, slot).
				With("command_ordinal", pg.ordinal)
		}
		return nil, protocol.Errorf(protocol.CodeInternal, "guardian of %s was killed by %s before the running handoff; what was left of its session was stopped, and %s", pg.monitorID, unix.SignalName(ended.Signal()), slot).
			With("command_ordinal", pg.ordinal)
	}
	return nil, protocol.Errorf(protocol.CodeInternal, "guardian of %s exited before the running handoff (its stderr, above, says why); %s", pg.monitorID, slot).
		With("command_ordinal", pg.ordinal)
}

// settleLost stops what a guardian that died during its start left
// behind, proven by its record, and reports the start as failed, naming
// the monitor: its record stays, with a reconciled receipt. said is what
// the guardian said, if anything; died is how it ended otherwise.
func (pg *pendingGuardian) settleLost(said *protocol.ErrorBody, died string) error {
	id := pg.monitorID
	m, err := Reconcile(pg.dir, id)
	if err != nil {
		return protocol.Wrapf(err, "the guardian of %s stopped during the start (%s), and what it left could not be settled: %w", id, died, err)
	}
	why := died
	if said != nil {
		why = said.Message
	}
	e := protocol.Errorf(protocol.CodeInternal, "the guardian of %s stopped during the start (%s); what it had started was stopped and its receipt kept", id, why).With("monitor_id", id)
	if m.Receipt != nil {
		e = e.With("receipt", m.Receipt)
	}
	return e
}

// The guardian's side of the handshake. (RunGuardian reads the spec, and
// guardian.start and guardian.open wait for the two bytes.)

// heard reads the launcher's next byte on the guardian's stdin and
// reports whether it is want. Anything else (the pipe closed by a
// launcher that refused the start or died) stops the start.
func heard(in *bufio.Reader, want byte) bool {
	b, err := in.ReadByte()
	return err == nil && b == want
}

// errNotDurable means the launcher could not make the monitor's directory
// durable: it says why itself.
var errNotDurable = errors.New("the launcher did not make the monitor's directory durable")

// errAbandoned means the launcher refused the start before the child was
// spawned: the guardian leaves quietly.
var errAbandoned = errors.New("the launcher abandoned the start")

// writeHandoff writes h to the launcher's pipe with write(2) itself: an
// os.File write to descriptor 1 that meets a closed pipe raises SIGPIPE
// unless it is caught, and a caller that died must not take the guardian
// with it.
func writeHandoff(w *os.File, h handoff) {
	fd := int(w.Fd())
	for data := appendHandoff(nil, h); len(data) > 0; {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		data = data[n:]
	}
}
