package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"procmon/internal/early"
	"procmon/internal/fault"
	"procmon/internal/protocol"
	"procmon/internal/state"
)

// GuardianArg is the hidden subcommand that runs a guardian.
const GuardianArg = early.GuardianArg

// PendingGuardian is a guardian process started before its spec is known.
// A Go process takes milliseconds to boot, so the guardian is launched
// first; while it boots, the caller does admission, takes the command
// slot and makes the monitor's directory.
//
// The guardian's stdin carries the spec (Send), then two bytes (Handoff):
// slotDurable once the command slot is durable, and dirDurable once the
// monitor's directory is. The guardian prepares the start from the spec,
// spawns the child only after the first byte and writes the first record
// only after the second. A pipe closed before them stops the start. The
// directory exists, naming the guardian (state.Maker), before the spec is
// sent: whatever the guardian spawns is in its session, which the
// directory makes provable should the guardian die before its record.
type PendingGuardian struct {
	g          *early.Guardian
	dir        *state.Dir
	monitorID  string
	ticks      uint64        // the guardian's start time, once created is closed (0: unread)
	created    chan struct{} // closed once the directory and the first record's temp file exist
	createdErr error         // why they do not; read after created is closed
	made       chan struct{} // closed once the log is made too and all is durable, or cannot be
	madeErr    error         // why not; read after made is closed
	sent       bool          // Send has written the spec
	graceMs    int64         // the spec's ownership grace: how long the handoff may take
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
	g, err := early.LaunchGuardian(dir.Path, monitorID)
	if err != nil {
		return nil, err
	}
	return AdoptGuardian(dir, g)
}

// AdoptGuardian takes charge of a guardian already launched for dir (by
// early, before main) as StartGuardian would have. A guardian launched
// for another directory, or with an id that is not a monitor id, is
// abandoned instead.
func AdoptGuardian(dir *state.Dir, g *early.Guardian) (*PendingGuardian, error) {
	if g.StateDir != dir.Path {
		g.Abandon()
		return nil, fmt.Errorf("guardian launched for state directory %s, not %s", g.StateDir, dir.Path)
	}
	if err := state.ValidMonitorID(g.MonitorID); err != nil {
		g.Abandon()
		return nil, err
	}
	pg := &PendingGuardian{g: g, dir: dir, monitorID: g.MonitorID,
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

// Abandon sends no spec: the guardian exits, Abandon waits for it and
// removes the monitor's directory, so a refused start leaves no guardian
// and no directory behind. After Handoff it does nothing.
func (pg *PendingGuardian) Abandon() {
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

// Prepare works out, while the guardian boots, what the guardian would
// otherwise do itself before it spawns the child: the path of argv[0]
// through the child's PATH and cwd, and the guardian's start time. What it
// cannot work out it leaves for the guardian (a missing program is then
// reported by the guardian, after the command slot is taken, as always).
func (pg *PendingGuardian) Prepare(spec *Spec) {
	if len(spec.Argv) > 0 {
		if path, err := lookPath(spec.Argv[0], spec.Env, spec.Cwd); err == nil {
			spec.Path = path
		}
	}
	if <-pg.created; pg.ticks != 0 {
		spec.GuardianStartTicks = pg.ticks
	}
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
		_, err = pg.g.Spec.Write(data)
	}
	if err != nil {
		return fmt.Errorf("send spec to guardian: %w", err)
	}
	pg.sent = true
	pg.graceMs = spec.OwnerGraceMs
	return nil
}

// Handoff tells the guardian sent its spec that the command slot is
// durable, then that the directory is, and returns once the guardian has
// durably recorded the running handoff, or with the error that stopped it
// (exec_failed, nonreaping_unavailable, ...). What a guardian that died
// during the start had spawned is stopped here, found in its session: with
// its record written, through reconcile (the error names the monitor,
// whose receipt says what was found); without, directly, and nothing is
// left.
func (pg *PendingGuardian) Handoff() (*state.Monitor, error) {
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
	stalled := time.AfterFunc(time.Duration(max(pg.graceMs, 1000))*time.Millisecond, func() {
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
	pg.g.Wait()
	if _, err := pg.dir.LoadMonitor(pg.monitorID); !protocol.HasCode(err, protocol.CodeUnknownMonitor) {
		return nil, pg.settleLost(h.Error)
	}
	// Nothing was recorded. A guardian that failed on its own stopped what
	// it had spawned; one that died may have left some of it, in its
	// session: that is stopped here, and the directory goes once nothing
	// is left (else it stays, naming the guardian, for list to settle).
	if _, left := stopLost(pg.g.PID, pg.ticks, DefaultDrainGraceMs); len(left) > 0 {
		return nil, protocol.Errorf(protocol.CodeInternal, "the guardian of %s died during the start, and %d of the processes it had started could not be stopped", pg.monitorID, len(left)).With("kill_unconfirmed", left)
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
	case tellErr != nil:
		return nil, fmt.Errorf("hand off to the guardian: %w", tellErr)
	}
	return nil, protocol.Errorf(protocol.CodeInternal, "guardian of %s exited before the running handoff; its stderr (above) says why", pg.monitorID)
}

// settleLost stops what a guardian that died during its start left
// behind, proven by its record, and reports the start as failed, naming
// the monitor: its record stays, with a reconciled receipt.
func (pg *PendingGuardian) settleLost(said *protocol.ErrorBody) error {
	id := pg.monitorID
	m, err := Reconcile(pg.dir, id, DefaultDrainGraceMs)
	if err != nil {
		return fmt.Errorf("the guardian of %s died during the start, and what it left could not be settled: %w", id, err)
	}
	why := "it died"
	if said != nil {
		why = said.Message
	}
	e := protocol.Errorf(protocol.CodeInternal, "the guardian of %s stopped during the start (%s); what it had started was stopped and its receipt kept", id, why).With("monitor_id", id)
	if m.Receipt != nil {
		e = e.With("receipt", m.Receipt)
	}
	return e
}
