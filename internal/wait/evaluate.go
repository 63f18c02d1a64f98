//go:build linux

package wait

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// The outcomes of a wait.
const (
	OutcomeSatisfied    = "satisfied"
	OutcomeTimeout      = "timeout"
	OutcomeProcessEnded = "process_ended"
	OutcomeUnavailable  = "unavailable"
)

// Custody is one look at the monitor a wait is about, as its caller
// decides it: this package does not know how monitors are stored or how
// their custody is proven.
type Custody struct {
	Status string
	// Terminal is true once a verified terminal receipt exists.
	Terminal bool
	// OutputEnded is true once the log can grow no more: the monitor is
	// terminal, or no guardian is left to write it (what logs reads as
	// ended too). Terminal implies it.
	OutputEnded bool
	// Unverified is true when custody cannot be proven (the monitor needs
	// reconciliation): nothing it shows can satisfy a wait.
	Unverified bool
	// Why says what makes custody unverified.
	Why string
	// Reason, ExitCode and Signal come from the terminal receipt.
	Reason   string
	ExitCode *int
	Signal   *string
	// Lapses is when custody stops being proven unless the guardian
	// renews it (the end of its ownership window); zero when nothing can
	// lapse, or when the caller cannot say. A stalled guardian changes no
	// file and sends no notice, so the wait looks again at that moment,
	// and talks to the guardian no longer than until then.
	Lapses time.Time
}

// Target is the monitor a wait observes.
type Target struct {
	// Dir is the monitor's directory: its record is replaced and its log
	// written there, so a watch on it wakes the wait on every change.
	Dir string
	// OpenLog opens the redacted output stream, which only grows, for
	// reading. It is made before the monitor is: any error is the wait's.
	// (The caller checks what it opens: a link or a FIFO planted in its
	// place, or no log at all, is refused, never followed or waited on.)
	OpenLog func() (*os.File, error)
	// RootPath is the component root as the record names it: the
	// directory the service was started in. No file is ever reached
	// through it. On every look at a file it must still name the held
	// root, so a component renamed, replaced or deleted since the start
	// makes the wait unavailable instead of being followed.
	RootPath string
	// HoldRoot returns a descriptor (O_PATH) of the component root, held
	// since the start; every file condition is resolved beneath it, and
	// the wait closes it. It fails when nothing can prove the root, and
	// gives up when its context ends. Without it a file condition is
	// never satisfied.
	HoldRoot func(ctx context.Context) (int, error)
	// Observe returns the monitor's custody now.
	Observe func() (Custody, error)
	// Changes, when set, subscribes to the guardian's change notices: the
	// channel receives after the log grows or the record changes, and is
	// closed when the guardian stops sending (its receipt is durable, or it
	// died). It gives up when its context ends. Without it, or when it
	// fails, the wait watches Dir instead, as it does once the notices end.
	Changes func(ctx context.Context) (<-chan struct{}, io.Closer, error)
}

// Options tune an evaluation. The zero value waits forever.
type Options struct {
	// Timeout ends the wait with outcome timeout; zero means none.
	Timeout time.Duration
	// Now is the clock for elapsed time and the timeout (default time.Now).
	Now func() time.Time
	// Start is when the wait began (default: when Evaluate is called);
	// elapsed time and the timeout count from it.
	Start time.Time
	// Recheck is how often custody is looked at without any event
	// (default DefaultRecheck): a guardian can die without touching a file.
	Recheck time.Duration

	// checkFile replaces CheckFile in tests.
	checkFile func(rootFD int, c Condition) FileObservation
	// looked, when set, is called after each look that did not end the
	// wait, so tests can change things at exactly that point.
	looked func()
	// lookBudget replaces lookBudget in tests: a log many looks long
	// need not be hundreds of MiB, which the race detector reads slowly.
	lookBudget int64
}

// talkDeadline is how long a wait that began at start waits for its
// guardian to answer: until the wait's timeout or the moment custody
// lapses, whichever is first; zero when neither bounds it.
func talkDeadline(start time.Time, timeout time.Duration, lapses time.Time) time.Time {
	var by time.Time
	if timeout > 0 {
		by = start.Add(timeout)
	}
	if !lapses.IsZero() && (by.IsZero() || lapses.Before(by)) {
		by = lapses
	}
	return by
}

// DefaultRecheck is the safety re-check period. It only bounds how late a
// lost guardian is noticed; every other change wakes the wait at once.
const DefaultRecheck = 2 * time.Second

// The bounds of the log tail a failed wait carries.
const (
	TailLines = 20
	TailBytes = 8 << 10
)

// Evidence is what a wait found: its outcome and the observation behind it.
type Evidence struct {
	Outcome     string      `json:"outcome"`
	Observation Observation `json:"observation"`
}

// Observation is the evidence of the last evaluation. Fields that do not
// apply to the condition's kind or the monitor's state are left out.
type Observation struct {
	Status    string `json:"status"`
	ElapsedMs int64  `json:"elapsed_ms"`
	Why       string `json:"why,omitempty"`

	// From the terminal receipt.
	Reason   string  `json:"reason,omitempty"`
	ExitCode *int    `json:"exit_code,omitempty"`
	Signal   *string `json:"signal,omitempty"`

	// Output conditions: where the text starts in the redacted stream,
	// and how much of the stream was searched.
	MatchOffset  *int64 `json:"match_offset,omitempty"`
	ScannedBytes *int64 `json:"scanned_bytes,omitempty"`
	// LogBytesLost and LogError say, when an output wait did not succeed,
	// what the log could not store (a full disk): the text may be among
	// it. The caller fills them in; Evaluate reads only the log.
	LogBytesLost int64  `json:"log_bytes_lost,omitempty"`
	LogError     string `json:"log_error,omitempty"`
	// HeldBytes says, when an output wait did not succeed on a live
	// monitor, how many bytes of the output the redactor holds back:
	// the text may be among them, shown once more output decides them.
	HeldBytes int64 `json:"held_bytes,omitempty"`

	// File conditions: the last look at the file, and every refusal seen
	// during the wait, so a symlink that came and went is still named.
	Path         string   `json:"path,omitempty"`
	SHA256       string   `json:"sha256,omitempty"`
	Size         *int64   `json:"size,omitempty"`
	Refusal      string   `json:"refusal,omitempty"`
	RefusalsSeen []string `json:"refusals_seen,omitempty"`

	// LogTail is the end of the output when the wait did not succeed.
	LogTail []string `json:"log_tail,omitempty"`
}

// Evaluate waits until c holds for the monitor at t, the monitor ends or
// loses verified custody, the timeout passes, or ctx is done (then it
// returns ctx's error). It looks again whenever the monitor directory or,
// for a file condition, the directory the file would appear in changes,
// when the custody it last saw lapses, and every opt.Recheck besides; it
// never polls faster. An output condition is searched incrementally: each
// byte of the log is read once. A file condition is resolved beneath the
// component root held since the start (t.HoldRoot), and is unavailable
// when that root cannot be had or no longer stands at t.RootPath.
//
// Precedence: a monitor without verified custody is unavailable for every
// kind; evidence present when the monitor is seen terminal (output read to
// the log's end after that, a file checked once more beneath a root held
// before the end) wins over process_ended.
func Evaluate(ctx context.Context, c Condition, t Target, opt Options) (Evidence, error) {
	if err := c.checkShape(); err != nil {
		return Evidence{}, err
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Recheck <= 0 {
		opt.Recheck = DefaultRecheck
	}
	if opt.checkFile == nil {
		opt.checkFile = CheckFile
	}
	start := opt.Start
	if start.IsZero() {
		start = opt.Now()
	}

	e := &evaluation{cond: c, target: t, opt: opt, rootFD: -1}
	defer e.close()
	if err := e.open(); err != nil {
		return Evidence{}, err
	}
	// The first look comes before anything that needs the guardian to
	// answer, so what is so already is answered at once: custody lost,
	// output printed before the wait, an end reached. A file is looked at
	// only beneath the root the guardian hands over, so a file
	// condition's first look is at custody alone. A guardian that does
	// not answer (stopped, or wedged) is then waited for only until the
	// wait's timeout or the end of its ownership window, whichever comes
	// first, and the loop looks again.
	var first string
	if c.Kind == KindFile {
		if err := e.observe(); err != nil {
			return Evidence{}, err
		}
		if e.custody.Unverified {
			first = OutcomeUnavailable
		}
	} else {
		var err error
		if first, err = e.step(false); err != nil {
			return Evidence{}, err
		}
		// A monitor that has ended is answered from its whole log, read
		// in looks, before anything is subscribed to.
		for first == "" && e.more && e.custody.Terminal {
			if err := ctx.Err(); err != nil {
				return Evidence{}, err
			}
			if first, err = e.step(false); err != nil {
				return Evidence{}, err
			}
		}
	}
	if first != "" {
		return e.evidence(first, opt.Now().Sub(start)), nil
	}
	guardianCtx, cancelGuardian := ctx, context.CancelFunc(func() {})
	if by := talkDeadline(start, opt.Timeout, e.custody.Lapses); !by.IsZero() {
		guardianCtx, cancelGuardian = context.WithDeadline(ctx, by)
	}

	// Subscribing comes before the looks of the loop, so nothing written
	// after a look goes unnoticed.
	changes, err := WatchChanges(ctx, guardianCtx, t)
	if err == nil && c.Kind == KindFile {
		e.holdRoot(guardianCtx)
	}
	cancelGuardian()
	if err != nil {
		return Evidence{}, err
	}
	defer changes.Close()
	if err := ctx.Err(); err != nil {
		return Evidence{}, err
	}

	var fileEvents <-chan struct{}
	if e.fileWatch != nil {
		fileEvents = e.fileWatch.Events()
	}

	var deadline <-chan time.Time
	if opt.Timeout > 0 {
		timer := time.NewTimer(max(opt.Timeout-opt.Now().Sub(start), 0))
		defer timer.Stop()
		deadline = timer.C
	}
	recheck := time.NewTicker(opt.Recheck)
	defer recheck.Stop()
	// lapse fires when the custody last seen lapses, unless a look
	// before then saw it renewed.
	lapse := time.NewTimer(time.Hour)
	lapse.Stop()
	defer lapse.Stop()

	timedOut := false
	for {
		timeUp := timedOut || opt.Timeout > 0 && opt.Now().Sub(start) >= opt.Timeout
		outcome, err := e.step(timeUp)
		if err != nil {
			return Evidence{}, err
		}
		// A timeout says the service keeps running: one that has ended is
		// read to the end of its log, which is all there will ever be.
		if outcome == "" && timeUp && !(e.custody.Terminal && e.more) {
			outcome = OutcomeTimeout
		}
		if outcome != "" {
			return e.evidence(outcome, opt.Now().Sub(start)), nil
		}
		if d := e.custody.Lapses.Sub(opt.Now()); !e.custody.Lapses.IsZero() && d > 0 {
			lapse.Reset(d)
		} else {
			// A moment already past is left to the re-check: looking
			// again at once would find the same custody.
			lapse.Stop()
		}
		if opt.looked != nil {
			opt.looked()
		}
		if e.more {
			// The log holds more than one look reads: read on at once.
			if err := ctx.Err(); err != nil {
				return Evidence{}, err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return Evidence{}, ctx.Err()
		case _, ok := <-changes.C:
			if !ok {
				// Closed because ctx ended (the select may see that
				// first), or because watching failed.
				if err := ctx.Err(); err != nil {
					return Evidence{}, err
				}
				return Evidence{}, changes.Err()
			}
		case _, ok := <-fileEvents:
			if !ok {
				return Evidence{}, fmt.Errorf("watch the component root: %w", e.fileWatch.Err())
			}
			e.fileChanged = true
		case <-recheck.C:
			// Also covers changes no watch reports (writes through a
			// shared mapping).
			e.fileChanged = true
		case <-lapse.C:
			// The window has lapsed unless it was renewed: look.
		case <-deadline:
			// Look once more: evidence that arrived with the deadline
			// still counts.
			timedOut, e.fileChanged = true, true
		}
	}
}

// evaluation is the state one wait carries between looks.
type evaluation struct {
	cond   Condition
	target Target
	opt    Options

	custody Custody

	log     *os.File
	matcher *OutputMatcher
	// more says the last look left part of the log unread (lookBudget).
	more bool

	// rootFD is the held component root, or -1: rootDir names it for
	// inotify (through /proc/self/fd), and rootErr says why there is
	// none. rootLate means the guardian did not hand it over before the
	// wait's timeout or the end of its window.
	rootFD   int
	rootDir  string
	rootErr  error
	rootLate bool
	// why says what makes the wait unavailable when custody holds but
	// the component root does not.
	why string
	// fileWatch watches the directories towards the file, apart from the
	// monitor directory: a chatty service's log writes must not make the
	// wait read and hash the file again when it has not changed.
	fileWatch   *Watcher
	fileChanged bool
	watched     map[string]bool
	file        FileObservation
	seen        []string
}

// open prepares what the condition's kind needs.
func (e *evaluation) open() error {
	switch e.cond.Kind {
	case KindOutput:
		e.matcher = NewOutputMatcher(e.cond.Text)
	case KindFile:
		var err error
		if e.fileWatch, err = NewWatcher(); err != nil {
			return err
		}
		e.fileChanged = true
		e.watched = map[string]bool{}
		e.file = FileObservation{Path: e.cond.Path}
	}
	return nil
}

func (e *evaluation) close() {
	if e.log != nil {
		e.log.Close()
	}
	if e.rootFD >= 0 {
		unix.Close(e.rootFD)
	}
	if e.fileWatch != nil {
		closeLater(e.fileWatch)
	}
}

// observe reads the monitor's custody into e.custody.
func (e *evaluation) observe() error {
	cust, err := e.target.Observe()
	if err != nil {
		return err
	}
	e.custody = cust
	return nil
}

// holdRoot gets the component root from the caller, which asks the
// guardian: the one process that has held it since the start. A monitor
// already ended has no guardian left to ask, so its root cannot be proven
// and no file is read: a path looked up now could lead anywhere.
func (e *evaluation) holdRoot(ctx context.Context) {
	switch {
	case e.custody.Terminal:
		e.rootErr = errors.New("the monitor has ended, and with it the guardian that held its component root")
		return
	case e.target.HoldRoot == nil:
		e.rootErr = errors.New("no component root is held for this monitor")
		return
	}
	fd, err := e.target.HoldRoot(ctx)
	switch {
	case err == nil:
		e.rootFD, e.rootDir = fd, fmt.Sprintf("/proc/self/fd/%d", fd)
		// The root itself is watched from the start, so that its being
		// renamed or deleted wakes the wait.
		if e.fileWatch.Add(e.rootDir) == nil {
			e.watched[e.rootDir] = true
		}
	case ctx.Err() != nil:
		e.rootLate = true
	default:
		e.rootErr = err
	}
}

// step looks once and returns the outcome, or "" to keep waiting. Custody
// is read before the evidence, so evidence read after a terminal custody
// is all there will ever be. timeUp says the wait's timeout has passed.
func (e *evaluation) step(timeUp bool) (string, error) {
	if err := e.observe(); err != nil {
		return "", err
	}
	cust := e.custody
	var err error
	if cust.Unverified {
		return OutcomeUnavailable, nil
	}
	held := false
	switch e.cond.Kind {
	case KindOutput:
		held, err = e.lookAtOutput(cust.Terminal)
		if err != nil {
			return "", err
		}
	case KindFile:
		if e.rootFD < 0 {
			switch {
			case cust.Terminal:
				// process_ended, with the reason no file was read.
				e.refuseRoot(ReasonComponentUnproven, e.rootErr)
			case e.rootLate && timeUp:
				return "", nil // a timeout, not a refusal
			case e.rootLate:
				e.refuseRoot(ReasonComponentUnproven, errors.New("its guardian did not hand it over while its window was current"))
				return OutcomeUnavailable, nil
			default:
				e.refuseRoot(ReasonComponentUnproven, e.rootErr)
				return OutcomeUnavailable, nil
			}
			break
		}
		// Checked when something towards it changed, and once more when
		// the monitor is seen terminal.
		if e.fileChanged || cust.Terminal {
			held = e.lookAtFile()
		}
		if e.why != "" {
			return OutcomeUnavailable, nil
		}
	case KindExit:
		held = cust.Terminal
	}
	switch {
	case held:
		return OutcomeSatisfied, nil
	case cust.Terminal && !e.more:
		return OutcomeProcessEnded, nil
	}
	return "", nil
}

// lookBudget bounds what one look reads of the log: the wait's loop sees
// its timeout and an interrupt between looks, and reads on at once while
// the log holds more. Read whole in one look, 6 GB of log held a wait
// with a timeout of 1 s for 8 s, and an interrupt for 5.
const lookBudget = 64 << 20

// lookAtOutput feeds the matcher whatever the log gained since the last
// look, up to lookBudget (e.more says there is more); ended says the log
// will not grow.
func (e *evaluation) lookAtOutput(ended bool) (bool, error) {
	if e.log == nil {
		f, err := e.target.OpenLog()
		if err != nil {
			return false, fmt.Errorf("open output log: %w", err)
		}
		e.log = f
	}
	budget := int64(lookBudget)
	if e.opt.lookBudget > 0 {
		budget = e.opt.lookBudget
	}
	var r io.ReaderAt = e.log
	e.more = false
	if fi, err := e.log.Stat(); err == nil && fi.Size()-e.matcher.Consumed() > budget {
		r = io.NewSectionReader(e.log, 0, e.matcher.Consumed()+budget)
		ended, e.more = false, true
	}
	_, found, err := e.matcher.FeedFrom(r, ended)
	if err != nil {
		return false, fmt.Errorf("read output log: %w", err)
	}
	return found, nil
}

// refuseRoot records why the component root gives no evidence.
func (e *evaluation) refuseRoot(reason string, err error) {
	e.file.Refusal = reason
	if !contains(e.seen, reason) {
		e.seen = append(e.seen, reason)
	}
	switch reason {
	case ReasonComponentMoved:
		e.why = fmt.Sprintf("the component root %s was renamed or removed since the start", e.target.RootPath)
	case ReasonComponentReplaced:
		e.why = fmt.Sprintf("the component root %s names another directory than the one the service was started in", e.target.RootPath)
	case ReasonComponentDeleted:
		e.why = "the component root was deleted since the start"
	default:
		e.why = "the component root cannot be proven"
		if err != nil {
			e.why += ": " + err.Error()
		}
	}
}

// lookAtFile checks that the held root is still the component, makes sure
// the deepest existing directory towards the file is watched, then checks
// the file, and the root once more: a file read while the component was
// moved is no evidence. Watching first means a change made after the
// check always wakes the wait.
func (e *evaluation) lookAtFile() bool {
	if r := componentProblem(e.rootFD, e.target.RootPath); r != "" {
		e.refuseRoot(r, nil)
		return false
	}
	dir := NearestDir(e.rootDir, e.cond.Path)
	if !e.watched[dir] {
		// A directory that vanished before it could be watched is noticed
		// through its parent, which is watched already.
		if err := e.fileWatch.Add(dir); err == nil {
			e.watched[dir] = true
		}
	}
	e.fileChanged = false
	obs := e.opt.checkFile(e.rootFD, e.cond)
	e.file = obs
	if r := componentProblem(e.rootFD, e.target.RootPath); r != "" {
		e.refuseRoot(r, nil)
		return false
	}
	if r := obs.Refusal; r != "" && r != ReasonAbsent && !contains(e.seen, r) {
		e.seen = append(e.seen, r)
	}
	return obs.Satisfied
}

// closeLater closes a watcher without waiting for it. Closing an inotify
// descriptor that holds watches waits for the kernel to retire them (an
// SRCU grace period, often milliseconds); the evidence need not wait too.
func closeLater(w *Watcher) { go w.Close() }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// evidence assembles the observation behind an outcome.
func (e *evaluation) evidence(outcome string, elapsed time.Duration) Evidence {
	cust := e.custody
	o := Observation{
		Status:    cust.Status,
		ElapsedMs: elapsed.Milliseconds(),
	}
	switch {
	case cust.Unverified:
		o.Why = cust.Why
	case outcome == OutcomeUnavailable || outcome == OutcomeProcessEnded:
		o.Why = e.why
	}
	if cust.Terminal {
		o.Reason, o.ExitCode, o.Signal = cust.Reason, cust.ExitCode, cust.Signal
	}
	switch e.cond.Kind {
	case KindOutput:
		scanned := e.matcher.Consumed()
		o.ScannedBytes = &scanned
		if off, found := e.matcher.Found(); found {
			o.MatchOffset = &off
		}
	case KindFile:
		o.Path = e.cond.Path
		o.SHA256 = e.file.SHA256
		o.Refusal = e.file.Refusal
		if e.file.SHA256 != "" || e.file.Refusal == ReasonTooLarge {
			size := e.file.Size
			o.Size = &size
		}
		o.RefusalsSeen = e.seen
	}
	if outcome != OutcomeSatisfied {
		o.LogTail = Tail(e.target.OpenLog, TailLines, TailBytes, cust.Terminal || cust.OutputEnded)
	}
	return Evidence{Outcome: outcome, Observation: o}
}
