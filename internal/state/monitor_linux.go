package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
)

// The statuses of a monitor.
const (
	StatusRunning             = "running"
	StatusSettling            = "settling"
	StatusExited              = "exited"
	StatusCancelled           = "cancelled"
	StatusTimedOut            = "timed_out"
	StatusOutputLimit         = "output_limit"
	StatusNeedsReconciliation = "needs_reconciliation"
)

// The phases a guardian records; the status a reader shows is derived from
// the phase, the receipt and whether custody is still proven.
const (
	PhaseRunning  = "running"
	PhaseSettling = "settling"
	PhaseTerminal = "terminal"
)

// Monitor is the durable record of one monitored service. Only its guardian
// writes it while the guardian lives; reconcile writes it after.
type Monitor struct {
	MonitorID      string   `json:"monitor_id"`
	RunID          string   `json:"run_id"`
	Name           string   `json:"name,omitempty"`
	Argv           []string `json:"argv"`
	Cwd            string   `json:"cwd"`
	CommandOrdinal int64    `json:"command_ordinal"`
	BootID         string   `json:"boot_id"`

	PID             int    `json:"pid"`
	PGID            int    `json:"pgid"`
	ChildStartTicks uint64 `json:"child_start_ticks"`

	GuardianPID        int    `json:"guardian_pid"`
	GuardianStartTicks uint64 `json:"guardian_start_ticks"`

	AdmittedAtMs         int64 `json:"admitted_at_ms"`
	StartedAtMs          int64 `json:"started_at_ms"`
	HeartbeatSeq         int64 `json:"heartbeat_seq"`
	OwnershipExpiresAtMs int64 `json:"ownership_expires_at_ms"`
	// OwnershipExpiresMonoMs is the same end on CLOCK_MONOTONIC, which
	// the window is judged by (WindowLapsed), as the time namespace
	// OwnershipClock names reads it. 0 in a record of an earlier procmon,
	// judged by the wall clock.
	OwnershipExpiresMonoMs int64  `json:"ownership_expires_mono_ms,omitempty"`
	OwnershipClock         string `json:"ownership_clock,omitempty"`
	OwnerGraceMs           int64  `json:"owner_grace_ms"`
	WorkDeadlineMs         *int64 `json:"work_deadline_ms"`
	MaxOutputBytes         *int64 `json:"max_output_bytes"`

	Phase         string `json:"phase"`
	CapturedBytes int64  `json:"captured_bytes"`
	LogBytes      int64  `json:"log_bytes"`
	LogError      string `json:"log_error,omitempty"`
	LogBytesLost  int64  `json:"log_bytes_lost,omitempty"`

	// EscapedSessions are the sessions that the service's descendants
	// made with setsid, as the guardian last saw them: out of the
	// guardian's session, they would be out of reconcile's sight once the
	// guardian is lost. Written as soon as a look finds them changed, and
	// with each heartbeat; Truncated says there were more than a record
	// lists.
	EscapedSessions          []EscapedSession `json:"escaped_sessions,omitempty"`
	EscapedSessionsTruncated bool             `json:"escaped_sessions_truncated,omitempty"`

	Receipt *Receipt `json:"receipt,omitempty"`
}

// EscapedSession is a session made by a descendant of a guardian: its id
// (its leader's pid) and its witnesses, the earliest-started members the
// guardian saw in it (the leader first while it exists, a zombie too), by
// pid and start time, earliest first. Every member started no earlier than
// the first, since a session cannot be joined from outside; and while one
// of them is in it, the session's number cannot have been handed out
// again.
type EscapedSession struct {
	SID       int       `json:"sid"`
	Witnesses []Witness `json:"witnesses"`
}

// Witness is a process named by pid and start time.
type Witness struct {
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
}

// MaxWitnesses is how many witnesses an EscapedSession names: a daemon's
// session whose short-lived intermediate was its earliest member stays
// proven by the daemon.
const MaxWitnesses = 3

// Receipt is the terminal record of a monitor. It holds exit_code when the
// process exited and signal when one killed it, never both, and neither
// when custody was reconciled.
type Receipt struct {
	Status             string        `json:"status"`
	Reason             string        `json:"reason"`
	ExitCode           *int          `json:"exit_code"`
	Signal             *string       `json:"signal"`
	Signals            []SignalEvent `json:"signals"`
	GroupEmptyVerified bool          `json:"group_empty_verified"`
	OutputDrained      bool          `json:"output_drained"`
	Containment        string        `json:"containment"`
	Escaped            []int         `json:"escaped,omitempty"`
	KillUnconfirmed    []int         `json:"kill_unconfirmed,omitempty"`
	Custody            string        `json:"custody"`
	ExitedAtMs         *int64        `json:"exited_at_ms,omitempty"`
	FinishedAtMs       int64         `json:"finished_at_ms"`
}

// SignalEvent records one signal the guardian sent to the group.
type SignalEvent struct {
	Signal  string `json:"signal"`
	AtMs    int64  `json:"at_ms"`
	Targets int    `json:"targets"`
}

// Containment values of a receipt.
const (
	// ContainmentComplete: the group and every escaped descendant are
	// verified gone.
	ContainmentComplete = "complete"
	// ContainmentGroupOnly: the group is verified gone, and the sessions
	// its descendants made that the guardian recorded, and every
	// descendant of what was left; a session made since its last look by
	// a process whose parent has ended since could not be seen (a
	// reconciled monitor whose guardian was lost).
	ContainmentGroupOnly = "group_only"
	// ContainmentIncomplete: something may be left. KillUnconfirmed names
	// what survived SIGKILL; a recorded escaped session that could not be
	// proven the service's any more is left alone, unnamed.
	ContainmentIncomplete = "incomplete"
)

// Custody values of a receipt.
const (
	CustodyGuardian   = "guardian"
	CustodyReconciled = "reconciled"
	CustodyUnverified = "unverified"
)

// ValidMonitorID refuses anything that is not a monitor id, so an id is
// never interpreted as a path.
func ValidMonitorID(id string) error {
	if !validID(id, "m_") {
		return protocol.Errorf(protocol.CodeInvalidRequest, "monitor id %q is not valid: want m_ followed by 20 to 32 of [0-9a-z]", id).With("field", "monitor_id")
	}
	return nil
}

// MonitorDir is the directory of one monitor.
func (d *Dir) MonitorDir(id string) string { return MonitorPath(d.Path, id) }

// File names inside a monitor directory.
const (
	RecordName      = "record.json"
	LogName         = "output.log"
	ControlName     = "control.sock"
	GuardianLogName = "guardian.log"
)

// Maker names the guardian a monitor directory is made for. It is the
// first thing in the directory, before any record: a directory that holds
// no record and whose guardian is gone (or that was made before the last
// boot) was abandoned before anything was spawned, and may be removed.
type Maker struct {
	GuardianPID        int    `json:"guardian_pid"`
	GuardianStartTicks uint64 `json:"guardian_start_ticks"`
	BootID             string `json:"boot_id"`
	// TicksClock says which clock the start times are on (TicksInitial).
	TicksClock string `json:"ticks_clock,omitempty"`
	// Session and SessionTicks name the session the processes live in
	// when it is not the guardian's: a foreground command's (procmon
	// exec), which leads a session of its own while the exec process
	// holds its custody. Zero: the guardian's.
	Session      int    `json:"session,omitempty"`
	SessionTicks uint64 `json:"session_ticks,omitempty"`
}

// SessionOf returns the session whose processes the maker's guardian
// started, and its leader's start time.
func (mk *Maker) SessionOf() (int, uint64) {
	if mk.Session != 0 {
		return mk.Session, mk.SessionTicks
	}
	return mk.GuardianPID, mk.GuardianStartTicks
}

// TraceEscapes are the sessions that a foreground command's descendants
// made with setsid (see Monitor.EscapedSessions), as the process that
// holds its custody (procmon exec) last saw them. They are kept beside
// the maker in the command's trace directory, which names the command's
// own session: should that process die, the sweep of its trace stops
// them too.
type TraceEscapes struct {
	EscapedSessions          []EscapedSession `json:"escaped_sessions"`
	EscapedSessionsTruncated bool             `json:"escaped_sessions_truncated,omitempty"`
}

// EscapesName is the file of a foreground command's trace directory that
// holds its TraceEscapes.
const EscapesName = "escapes.json"

// SaveTraceEscapes stores the escaped sessions of the foreground command
// whose trace is directory id. Like a heartbeat it does not sync: after a
// crash of the machine nothing it names is left.
func (d *Dir) SaveTraceEscapes(id string, e *TraceEscapes) error {
	if err := ValidMonitorID(id); err != nil {
		return err
	}
	return writeRecord(d.Path, d.MonitorDir(id), EscapesName, "escapes", e, false)
}

// LoadTraceEscapes reads the escaped sessions of the foreground command
// whose trace is directory id: none when it recorded none.
func (d *Dir) LoadTraceEscapes(id string) (*TraceEscapes, error) {
	if err := ValidMonitorID(id); err != nil {
		return nil, err
	}
	var e TraceEscapes
	err := readRecord(d.Path, d.MonitorDir(id), EscapesName, "escapes", &e)
	if errors.Is(err, fs.ErrNotExist) {
		return &TraceEscapes{}, nil
	}
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// CreateMonitorDir makes a new monitor's private directory with the first
// record's temp file, which names the directory's maker until the first
// record is written through it, so the first record's write creates
// nothing. The directory is made under a temp name and renamed into
// place, so that a monitor directory never exists without its maker.
// SyncMonitorDir makes them durable. The rest comes later: the output log
// from the launcher, the socket and its own log from the guardian, and the
// lock file with the first lock taken.
func (d *Dir) CreateMonitorDir(id string, maker Maker) (err error) {
	if err := ValidMonitorID(id); err != nil {
		return err
	}
	mdir := d.MonitorDir(id)
	tmp := filepath.Join(d.Path, monitorsDir, tempPrefix+id)
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("create monitor directory: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	f, err := os.OpenFile(filepath.Join(tmp, firstRecordTemp), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create the first record's temp file: %w", err)
	}
	maker.TicksClock = TicksInitial
	data, ok := appendGenerated(nil, &maker)
	if !ok {
		var err error
		if data, err = json.Marshal(&maker); err != nil {
			f.Close()
			return fmt.Errorf("encode the monitor directory's maker: %w", err)
		}
	}
	data = append(data, bytes.Repeat([]byte{'\n'}, firstRecordSize-len(data))...)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("allocate the first record's temp file: %w", err)
	}
	if err := createCustody(tmp); err != nil {
		return fmt.Errorf("create the custody fence: %w", err)
	}
	if err := os.Rename(tmp, mdir); err != nil {
		return fmt.Errorf("move the monitor directory into place: %w", err)
	}
	return nil
}

// LoadMaker reads the maker of a monitor directory that holds no record
// yet. From the moment the guardian starts writing its first record
// through that temp file, the file holds the record instead, which names
// the same guardian: the maker is taken from it then.
func (d *Dir) LoadMaker(id string) (*Maker, error) {
	if err := ValidMonitorID(id); err != nil {
		return nil, err
	}
	mdir := d.MonitorDir(id)
	data, err := readTrusted(d.Path, mdir, firstRecordTemp)
	if err != nil {
		return nil, err
	}
	line, _, _ := bytes.Cut(data, []byte{'\n'})
	var mk Maker
	if (decodeGenerated(line, &mk) || json.Unmarshal(line, &mk) == nil) && mk.GuardianPID > 1 {
		if mk.TicksClock == "" {
			fromWritersClock(&mk, TicksOffset())
			mk.TicksClock = TicksInitial
		}
		return &mk, nil
	}
	var m Monitor
	if err := decodeRecord(filepath.Join(mdir, firstRecordTemp), "monitor", line, &m); err == nil && m.GuardianPID > 1 {
		return &Maker{GuardianPID: m.GuardianPID, GuardianStartTicks: m.GuardianStartTicks, BootID: m.BootID, TicksClock: TicksInitial}, nil
	}
	return nil, fmt.Errorf("monitor directory %s names no maker", id)
}

// LoadMonitor reads and verifies a monitor record.
func (d *Dir) LoadMonitor(id string) (*Monitor, error) {
	if err := ValidMonitorID(id); err != nil {
		return nil, err
	}
	var m Monitor
	err := readRecord(d.Path, d.MonitorDir(id), RecordName, "monitor", &m)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, protocol.Errorf(protocol.CodeUnknownMonitor, "no monitor %s in %s", id, d.Path).With("monitor_id", id)
	}
	if err != nil {
		return nil, err
	}
	if m.MonitorID != id {
		return nil, protocol.Errorf(protocol.CodeStateCorrupt, "record in %s names monitor %s", d.MonitorDir(id), m.MonitorID).With("monitor_id", id)
	}
	return &m, nil
}

// SaveMonitor stores a monitor record whole. durable false leaves the
// directory unsynced: a crash of the machine may then bring back the
// record before it (whole; see writeFileAtomic), which is right for the
// transitions a reboot makes stale anyway.
func (d *Dir) SaveMonitor(m *Monitor, durable bool) error {
	if err := ValidMonitorID(m.MonitorID); err != nil {
		return err
	}
	return writeRecord(d.Path, d.MonitorDir(m.MonitorID), RecordName, "monitor", m, durable)
}

// The first record of a monitor is the running handoff that start waits
// for. Its temp file is made when the directory is, with firstRecordSize
// bytes already written, and SyncMonitorDir makes it durable, so the
// handoff's write is an overwrite in place made durable with fdatasync (no
// metadata to commit) followed by the rename and the directory's fsync.
// The record is padded with newlines to that size, which JSON readers
// skip.
const (
	firstRecordTemp = tempPrefix + RecordName + "-first"
	firstRecordSize = 4096
)

// SyncMonitorDir makes durable what CreateMonitorDir made and the first
// record's write does not: the temp file's blocks (so that the record's
// write needs only a data sync) and the directory's entry in monitors/.
// The directory's own entries are made durable by SaveFirstMonitor, which
// syncs the directory after its rename. The two syncs are independent and
// run at once: each waits on the device, and a start waits for both.
func (d *Dir) SyncMonitorDir(id string) error {
	if err := ValidMonitorID(id); err != nil {
		return err
	}
	mdir := d.MonitorDir(id)
	f, err := openFile(d.Path, mdir, firstRecordTemp, unix.O_RDONLY, 0, 0)
	if err != nil {
		return fmt.Errorf("open the first record's temp file: %w", err)
	}
	dirSynced := make(chan error, 1)
	go func() { dirSynced <- syncDir(filepath.Join(d.Path, monitorsDir)) }()
	err = f.Sync()
	f.Close()
	dirErr := <-dirSynced
	if err != nil {
		return fmt.Errorf("sync the first record's temp file: %w", err)
	}
	return dirErr
}

// OpenFirstRecord opens the temp file made by CreateMonitorDir through
// which the monitor's first record is written; pass it to
// SaveFirstMonitor once SyncMonitorDir has returned. A temp file never
// used is ignored by readers and goes with the directory.
func (d *Dir) OpenFirstRecord(id string) (*os.File, error) {
	if err := ValidMonitorID(id); err != nil {
		return nil, err
	}
	f, err := openFile(d.Path, d.MonitorDir(id), firstRecordTemp, unix.O_WRONLY, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("open the first record's temp file: %w", err)
	}
	return f, nil
}

// SaveFirstMonitor durably stores a monitor's first record through f, from
// OpenFirstRecord, and closes f.
func (d *Dir) SaveFirstMonitor(f *os.File, m *Monitor) (err error) {
	dir := d.MonitorDir(m.MonitorID)
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	data, err := encodeRecord("monitor", m)
	if err != nil {
		return err
	}
	sync := unix.Fdatasync
	if len(data) <= firstRecordSize {
		data = append(data, bytes.Repeat([]byte{'\n'}, firstRecordSize-len(data))...)
	} else {
		sync = unix.Fsync // the file grows: its size is metadata
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("write %s: %w", RecordName, err)
	}
	if err := sync(int(f.Fd())); err != nil {
		return fmt.Errorf("sync %s: %w", RecordName, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", RecordName, err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, RecordName)); err != nil {
		return fmt.Errorf("rename %s into place: %w", RecordName, err)
	}
	return syncDir(dir)
}

// UpdateMonitor applies fn to the stored record under the monitor's lock.
func (d *Dir) UpdateMonitor(id string, fn func(*Monitor) error) (*Monitor, error) {
	if err := ValidMonitorID(id); err != nil {
		return nil, err
	}
	var out *Monitor
	err := withLock(d.Path, d.MonitorDir(id), func() error {
		m, err := d.LoadMonitor(id)
		if err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
		out = m
		return d.SaveMonitor(m, true)
	})
	return out, err
}

// WithMonitorLock runs fn holding the monitor's flock.
func (d *Dir) WithMonitorLock(id string, fn func() error) error {
	if err := ValidMonitorID(id); err != nil {
		return err
	}
	return withLock(d.Path, d.MonitorDir(id), fn)
}

// MonitorIDs lists every entry of monitors/ named like a monitor, sorted;
// other names and temp files are ignored. An entry that is not a plain
// directory is listed all the same, so that reading it says what is wrong
// with it (state_unsafe) instead of the monitor silently vanishing.
func (d *Dir) MonitorIDs() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(d.Path, monitorsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // a state directory not made yet (Look)
	}
	if err != nil {
		return nil, fmt.Errorf("list monitors: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if !isTemp(e.Name()) && ValidMonitorID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// RemoveMonitorDir deletes the directory of a monitor that never got a
// running handoff, and the temp directory it was made in if its making was
// cut short. A directory holding a record is left alone: the record is
// the evidence that reconcile needs.
func (d *Dir) RemoveMonitorDir(id string) error {
	if ValidMonitorID(id) != nil {
		return nil
	}
	os.RemoveAll(filepath.Join(d.Path, monitorsDir, tempPrefix+id))
	if _, err := os.Lstat(filepath.Join(d.MonitorDir(id), RecordName)); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return os.RemoveAll(d.MonitorDir(id))
}

// MonoNowMs is the time ownership windows are judged by: CLOCK_MONOTONIC,
// one clock for every process of a boot (a record of another boot is
// judged by its boot id first). A step of the wall clock (NTP, date -s)
// does not move it: judged by the wall clock, a step forward past the
// grace showed every monitor as needing reconciliation, and the readers
// that showed it closed their custody fences, so that every guardian
// drained. No time passes on it while the machine sleeps, when no
// guardian runs and no reader either.
func MonoNowMs() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano() / 1e6
}

// MonoClock names the clock MonoNowMs reads: CLOCK_MONOTONIC is offset
// in a time namespace (unshare --time), so its readings compare only
// within one. "" where the kernel has no time namespaces.
var MonoClock = sync.OnceValue(func() string {
	ns, _ := os.Readlink("/proc/self/ns/time")
	return ns
})

// SetWindow ends the ownership window graceMs after wallMs on the wall
// clock, which the record shows, and after monoMs on MonoNowMs's clock,
// which it is judged by.
func (m *Monitor) SetWindow(wallMs, monoMs, graceMs int64) {
	m.OwnershipExpiresAtMs = wallMs + graceMs
	m.OwnershipExpiresMonoMs = monoMs + graceMs
	m.OwnershipClock = MonoClock()
}

// WindowLapsed reports whether the ownership window has passed at wallMs
// on the wall clock and monoMs on MonoNowMs's. A reader in another time
// namespace than the guardian's, whose monotonic clock is offset, judges
// by the wall clock, as it does a record of an earlier procmon.
func (m *Monitor) WindowLapsed(wallMs, monoMs int64) bool {
	return m.WindowLeftMs(wallMs, monoMs) < 0
}

// WindowLeftMs is how long the ownership window has to run, as
// WindowLapsed judges it: below 0 once it has lapsed.
func (m *Monitor) WindowLeftMs(wallMs, monoMs int64) int64 {
	if m.OwnershipExpiresMonoMs != 0 && m.OwnershipClock == MonoClock() {
		return m.OwnershipExpiresMonoMs - monoMs
	}
	return m.OwnershipExpiresAtMs - wallMs
}

// BootID returns the kernel's boot id; a record from another boot has lost
// its guardian for certain.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// MonitorPath is the directory of a monitor in the state directory at dir.
func MonitorPath(dir, id string) string { return filepath.Join(dir, monitorsDir, id) }

// MadeBeforeBoot reports whether path was last changed before the machine
// booted: whatever made it is gone.
func MadeBeforeBoot(path string) bool {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil {
		return false
	}
	boot, ok := bootTime()
	return ok && st.Mtim.Sec < boot
}

// bootTime is the time the machine booted, in seconds since the epoch
// ("btime" in /proc/stat).
func bootTime() (int64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			t, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return t, err == nil
		}
	}
	return 0, false
}
