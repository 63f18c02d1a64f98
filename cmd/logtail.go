//go:build linux

package cmd

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"procmon/internal/logtext"
	"procmon/internal/proc"
	"procmon/internal/protocol"
	"procmon/internal/state"
)

// followTailLines is where logs --follow starts by default, as tail -f
// does: the last 10 lines.
const followTailLines = 10

// maxTailBytes bounds how much text --tail and --since return in one
// answer: beyond it, the answer is the last maxTailBytes of what they
// asked for, so it still ends where the output does.
const maxTailBytes = 16 << 20

// startFrom turns --tail and --since (and the default of --follow) into
// the request's offset: the logs protocol has byte offsets only, and a
// person counts lines or time.
func startFrom(env *Env, c *cobra.Command, req *logsRequest, tail, since string, follow bool) error {
	// Each of them is the request's offset: a conflict names that field.
	if req.Offset != nil && (tail != "" || since != "") {
		return protocol.Errorf(protocol.CodeInvalidRequest, "--offset is a byte of the stream; give it or --tail/--since, not both (see %s --help)", c.CommandPath()).With("field", "offset")
	}
	if tail != "" && since != "" {
		return protocol.Errorf(protocol.CodeInvalidRequest, "give --tail or --since, not both").With("field", "offset")
	}
	if req.MonitorID == "" {
		return protocol.Errorf(protocol.CodeInvalidRequest, `field "monitor_id" is required`).With("field", "monitor_id")
	}
	lines := followTailLines
	if tail != "" && tail != "all" {
		var err error
		if lines, err = strconv.Atoi(tail); errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(tail, "-") {
			return protocol.Errorf(protocol.CodeInvalidRequest, "--tail %q: more lines than a log can hold; for every line, give --tail all", tail).With("field", "tail")
		} else if err != nil || lines < 0 {
			return protocol.Errorf(protocol.CodeInvalidRequest, "--tail %q: want a number of lines, or all", tail).With("field", "tail")
		}
	}
	dir, o, err := observeFor(env, req.MonitorID, state.LogsTool)
	if err != nil {
		return err
	}
	final := o.OutputEnded()
	var off int64
	switch {
	case since != "":
		if off, err = sinceOffset(env, dir, o, since, final); err != nil {
			return err
		}
	case tail == "all":
	default:
		if off, err = tailOffset(dir, o.Monitor, lines, final); err != nil {
			return err
		}
	}
	req.Offset = &off
	if req.MaxBytes == nil && !follow {
		// The answer runs to the end: the text from off, or, when that
		// holds more than maxTailBytes, its last maxTailBytes. Only when
		// it may not fit is it read to see.
		n := int64(maxTailBytes)
		req.MaxBytes = &n
		w, err := dir.ReadLogWindow(o.Monitor, &off, 4, final)
		if err != nil {
			return err
		}
		if textBound(w.StreamBytes-off) > maxTailBytes {
			if w, err = dir.ReadLogWindow(o.Monitor, &off, maxTailBytes, final); err != nil {
				return err
			}
			if w.Window {
				req.Offset = nil
			}
		}
	}
	return nil
}

// tailOffset is the byte of the redacted stream where its last n lines
// begin (a last line without its newline counts as one). The end of the
// text is read as a window, which knows where it ends (a character not
// yet whole is held back); what lies before the window, in the stream
// itself (state.Dir.LineStartBefore). Windows growing back from the end
// made the text of the whole stream, several times over: --tail 1 of
// one 50 MB line took 3.3 s and 256 MB.
func tailOffset(dir *state.Dir, m *state.Monitor, n int, final bool) (int64, error) {
	if n == 0 {
		// Where the text ends, before a character not yet whole, which
		// is shown once it is.
		return dir.LogTextStart(m, math.MaxInt64, final)
	}
	w, err := dir.ReadLogWindow(m, nil, 64<<10, final)
	if err != nil {
		return 0, err
	}
	text := strings.TrimSuffix(w.Text, "\n")
	for i := len(text) - 1; i >= 0; i-- {
		if text[i] == '\n' {
			if n--; n == 0 {
				return w.StreamOffset(i + 1), nil
			}
		}
	}
	return dir.LineStartBefore(m, w.Offset, n)
}

// textBound is the most text n bytes of the stream can make: 3 bytes
// for each (U+FFFD for a byte that begins no character). A window of
// text counts its own bytes; a tail, a --since and the end of the log
// count the stream's.
func textBound(n int64) int64 {
	const most = int64(len(logtext.Replacement))
	if n > math.MaxInt64/most {
		return math.MaxInt64
	}
	return n * most
}

// sinceOffset is where output written since a time begins: at the start
// before the service started, at the end after the log's last write, and
// between, to the second, where the log's time marks place it (see
// state.LogOffsetAt). A monitor without marks (made by an older procmon)
// can only say all or nothing.
func sinceOffset(env *Env, dir *state.Dir, o *proc.Observation, since string, final bool) (int64, error) {
	now := env.Now()
	t, err := parseSince(now, since)
	if err != nil {
		return 0, err
	}
	m := o.Monitor
	started := time.UnixMilli(m.StartedAtMs)
	if !t.After(started) {
		return 0, nil
	}
	fi, err := os.Lstat(filepath.Join(dir.MonitorDir(m.MonitorID), state.LogName))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, protocol.Errorf(protocol.CodeInternal, "log of %s: %w", m.MonitorID, err)
	}
	// The log's mtime is stamped by the kernel's coarse clock, up to a
	// tick behind the time a process reads: a line written just after t
	// may carry an mtime before it. So with time marks, nothing is newer
	// than t only from mtimeLag after the last write on; before that the
	// marks decide, to the second as everywhere else (more, never less).
	off, marked, err := dir.LogOffsetAt(m.MonitorID, t.UnixMilli(), fi.Size())
	if err != nil {
		return 0, err
	}
	// A mark counts stream bytes and may fall inside a character, as the
	// log's end may: start where that character does, so that it shows.
	last := fi.ModTime()
	if marked && !t.After(last.Add(mtimeLag())) {
		return dir.LogTextStart(m, off, final)
	}
	if t.After(last) {
		return dir.LogTextStart(m, math.MaxInt64, final)
	}
	return 0, protocol.Errorf(protocol.CodeInvalidRequest,
		"--since %s: procmon stores no time for each line, only that %s started %s ago and last wrote %s ago; --since can pick all of its output or only what comes next, so use --tail N for the last lines",
		since, labelOf(m.Name, m.MonitorID), shortDuration(now.Sub(started)), shortDuration(now.Sub(fi.ModTime()))).With("field", "since")
}

// mtimeLag bounds how far a file's mtime may lag behind the time a
// process read just before the write: two ticks of the coarse clock the
// kernel stamps it with (one, and one more for a tick delivered late).
func mtimeLag() time.Duration {
	var res unix.Timespec
	if err := unix.ClockGetres(unix.CLOCK_REALTIME_COARSE, &res); err != nil || res.Nano() <= 0 {
		return 20 * time.Millisecond // two ticks at the slowest tick rate, 100 Hz
	}
	return 2 * time.Duration(res.Nano())
}

// parseSince reads a duration ago (5m, 90s, 0s: from now on) or a time
// in RFC 3339.
func parseSince(now time.Time, since string) (time.Time, error) {
	wellFormed := durationSyntax().MatchString(since) && strings.ContainsAny(since, "0123456789")
	if wellFormed && !unitsDescend(since) {
		return time.Time{}, protocol.Errorf(protocol.CodeInvalidRequest, "--since %q: units out of order or given twice; write each once, largest first (like 1h30m)", since).With("field", "since")
	}
	if d, err := time.ParseDuration(since); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if n, err := strconv.ParseInt(since, 10, 64); err == nil && n >= 0 {
		// Seconds past what a Duration holds (292 years) are all of it.
		return now.Add(-time.Duration(min(n, math.MaxInt64/int64(time.Second))) * time.Second), nil
	}
	if t, err := time.Parse(time.RFC3339, since); err == nil {
		return t, nil
	}
	if wellFormed && !strings.HasPrefix(since, "-") {
		// Well formed and not negative, yet not read: past what a
		// duration holds (292 years), so all of it, as for a number of
		// seconds that large.
		return time.Unix(0, 0), nil
	}
	return time.Time{}, protocol.Errorf(protocol.CodeInvalidRequest, "--since %q: want a duration ago (30s, 5m, 1h) or a time like 2006-01-02T15:04:05Z", since).With("field", "since")
}
