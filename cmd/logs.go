//go:build linux

package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"procmon/internal/fault"
	"procmon/internal/proc"
	"procmon/internal/protocol"
	"procmon/internal/state"
	"procmon/internal/wait"
)

type logsRequest struct {
	MonitorID string `json:"monitor_id"`
	MaxBytes  *int64 `json:"max_bytes,omitempty"`
	Offset    *int64 `json:"offset,omitempty"`
}

type logsResponse struct {
	MonitorID       string   `json:"monitor_id"`
	Status          string   `json:"status"`
	Text            string   `json:"text"`
	Offset          int64    `json:"offset"`
	NextOffset      int64    `json:"next_offset"`
	OutputBytes     int      `json:"output_bytes"`
	OutputSHA256    string   `json:"output_sha256"`
	CapturedBytes   int64    `json:"captured_bytes"`
	StreamBytes     int64    `json:"stream_bytes"`
	OutputTruncated bool     `json:"output_truncated"`
	Truncation      []string `json:"truncation"`
	LogError        string   `json:"log_error,omitempty"`
	LogBytesLost    int64    `json:"log_bytes_lost,omitempty"`
	HeldBytes       int64    `json:"held_bytes,omitempty"`
}

// defaultLogBytes is the window when the request names none.
const defaultLogBytes = 65536

func newLogsCmd(env *Env, g *globals) *cobra.Command {
	var maxBytes, offset int64
	var follow bool
	var name, tail, since string
	c := &cobra.Command{
		Use:   "logs [MONITOR_ID | NAME | --name NAME] [--tail N] [--since TIME] [--max-bytes N] [--offset N] [--follow]",
		Short: "Show a monitor's redacted output",
		Long: `Show a bounded snapshot of the monitor's output, with credentials already
redacted (a raw secret never reaches the disk). By default the last 65536
bytes; with --offset, from that byte of the redacted stream, and
next_offset continues with no gap or overlap. output_bytes and
output_sha256 describe exactly the returned text. output_truncated says
whether it is not the whole capture, and truncation lists why:
capture_limit (the output passed max_output_bytes), window (the window
cut it), incomplete_utf8 (a partial character at the end was held back,
as it is while the output may still grow: until the monitor ends or its
guardian is gone), log_lost (the log could not store all of the output,
as on a full disk: log_bytes_lost says how much). A window never splits
a character.
The text is the stream read as UTF-8, with each byte that begins no
character shown as U+FFFD (one for each byte, as wait --output reads it):
a window holds at most max_bytes bytes of that text, while offset and
next_offset count bytes of the stream. An --offset inside a character
starts the window where that character ends, and one past the end of the
stream where it ends (no text); offset says where.

  procmon logs m_… --max-bytes 4096
  procmon logs m_… --offset 0 --max-bytes 1048576   # then --offset <next_offset>
  procmon logs m_… --follow                         # stream text until it ends

By hand, as tail and docker logs do, the monitor named by its name or
by the start of its id (an argument that starts with m_ is an id):

  procmon logs --name web --tail 20     # the last 20 lines
  procmon logs -f web                   # the last 10 lines, then follow
  procmon logs -f --tail all m_3kq9     # everything, then follow
  procmon logs --since 2m web           # what web wrote in the last 2 minutes
  procmon logs -f --since 0s m_3kq9     # only what comes from now on

--tail and --since answer with the text from where they start to the end
of the output, up to 16 MiB of it (16777216 bytes of text); past that,
with its last 16 MiB, which truncation "window" and offset say. A start
is always where a character begins. --max-bytes instead reads that many
bytes of text from the start they chose.

--follow streams the text for a person until the service has ended
(Ctrl-C stops following; the service keeps running). On a terminal it
then says on stderr how the service ended, as its receipt has it
("(web ended: exited (0))"); stdout holds the text alone. It starts at
the last 10 lines unless --tail, --since or --offset says otherwise, and
shows them at once, whatever state the guardian is in. A guardian that
stops renewing custody (stopped, or stalled) moves the text no more until
it runs again: that is said once on stderr, with how to settle it, as
soon as custody lapses. A guardian that is gone ends the follow, which
says so on stderr, piped or not, and exits with 5 (needs_reconciliation)
rather than 0. It writes text only: asked for JSON
(--json, -o json) it refuses.
--since takes a duration ago (5m) or a time (2006-01-02T15:04:05Z07:00),
and starts at the output written since then, to the second: the guardian
marks the log's offset each second it writes (output.times), so --since
may show up to a second more than asked, never less.

On a terminal the text's control characters show as text (^[ for ESC,
^M for a carriage return not before a line feed, <U+009B>), so that a
service's output cannot drive the terminal: clear it, hide a line, write
the clipboard. Piped, or as JSON, the text is the service's, byte for byte.`,
		Args:              atMostOne("monitor_id", "monitor id or name"),
		ValidArgsFunction: completeMonitorIDs(env),
		RunE: func(c *cobra.Command, args []string) error {
			var req logsRequest
			if len(args) == 1 || name != "" {
				id, err := oneMonitorArg(env, g, args, name)
				if err != nil {
					return err
				}
				req.MonitorID = id
				if c.Flags().Changed("max-bytes") {
					req.MaxBytes = &maxBytes
				}
				if c.Flags().Changed("offset") {
					req.Offset = &offset
				}
			} else if err := flagForStdin(c, "max-bytes", "max_bytes", "offset", "offset"); err != nil {
				return err
			} else if err := readRequest(env, c, &req); err != nil {
				return err
			}
			if tail != "" || since != "" || follow && req.Offset == nil {
				if err := startFrom(env, c, &req, tail, since, follow); err != nil {
					return err
				}
			}
			if follow {
				if g.json || g.format == formatJSON {
					return protocol.Errorf(protocol.CodeInvalidRequest, "--follow streams text, not JSON; for JSON, read windows with --offset, each from the last response's next_offset").With("field", "format")
				}
				if c.Flags().Changed("max-bytes") {
					return protocol.Errorf(protocol.CodeInvalidRequest, "--follow streams the text to the end; --max-bytes sizes one window, so give one or the other").With("field", "max_bytes")
				}
				if err := checkLogsRequest(req); err != nil {
					return err
				}
				ended, err := followLogs(env, req)
				if errors.Is(err, errFollowInterrupted) {
					// Stopped as wait is (exit status 130), with nothing
					// more to say: the text on stdout is the service's.
					g.exitStatus = protocol.CodeWaitInterrupted.ExitStatus()
					return nil
				}
				if err == nil && ended != nil {
					if ended.Status == state.StatusNeedsReconciliation {
						// It ended for want of a guardian, not with the
						// monitor: a script tells the two apart by it.
						g.exitStatus = protocol.CodeNeedsReconciliation.ExitStatus()
					}
					switch {
					case g.human:
						// Said on stderr, so the text on stdout stays the
						// service's own.
						fmt.Fprintln(env.Stderr, colours(env, env.Stderr).dim(followEndNote(viewOf(ended))))
					case ended.Status == state.StatusNeedsReconciliation:
						// Its guardian is gone: piped too, the follow says
						// why it ended without a receipt, as it says a lapse.
						fmt.Fprintln(env.Stderr, colours(env, env.Stderr).dim(custodyLapsedNote(ended)))
					}
				}
				return err
			}
			resp, err := runLogs(env, req)
			if err != nil {
				return err
			}
			return respond(env, g, resp)
		},
	}
	c.Flags().Int64Var(&maxBytes, "max-bytes", defaultLogBytes, "window size in bytes (at least 4)")
	c.Flags().Int64Var(&offset, "offset", 0, "read from this byte of the redacted stream")
	c.Flags().BoolVarP(&follow, "follow", "f", false, "stream the output as text until the monitor ends")
	c.Flags().StringVarP(&tail, "tail", "n", "", "start at the last N lines, or all (with --follow: default 10)")
	c.Flags().StringVar(&since, "since", "", "start at output written since a duration ago (5m) or a time (RFC 3339)")
	addNameFlag(c, env, &name)
	return c
}

// checkLogsRequest refuses what no window can answer, for logs and
// --follow alike.
func checkLogsRequest(req logsRequest) error {
	if req.MonitorID == "" {
		return protocol.Errorf(protocol.CodeInvalidRequest, `field "monitor_id" is required`).With("field", "monitor_id")
	}
	if req.MaxBytes != nil && *req.MaxBytes < 4 {
		return protocol.Errorf(protocol.CodeInvalidRequest, `field "max_bytes" must be at least 4, room for one UTF-8 character`).With("field", "max_bytes")
	}
	if req.Offset != nil && *req.Offset < 0 {
		return protocol.Errorf(protocol.CodeInvalidRequest, `field "offset" must not be negative`).With("field", "offset")
	}
	return nil
}

func runLogs(env *Env, req logsRequest) (*logsResponse, error) {
	if err := checkLogsRequest(req); err != nil {
		return nil, err
	}
	maxBytes := int64(defaultLogBytes)
	if req.MaxBytes != nil {
		maxBytes = *req.MaxBytes
	}
	dir, o, err := observeFor(env, req.MonitorID, state.LogsTool)
	if err != nil {
		return nil, err
	}
	m := o.Monitor
	live := o.LiveCounters(context.Background(), dir)
	w, err := dir.ReadLogWindow(m, req.Offset, maxBytes, o.OutputEnded())
	if err != nil {
		return nil, err
	}
	resp := &logsResponse{
		MonitorID:     m.MonitorID,
		Status:        o.Status,
		Text:          w.Text,
		Offset:        w.Offset,
		NextOffset:    w.NextOffset,
		OutputBytes:   w.OutputBytes,
		OutputSHA256:  w.OutputSHA256,
		CapturedBytes: m.CapturedBytes,
		StreamBytes:   w.StreamBytes,
		Truncation:    []string{},
		LogError:      m.LogError,
		LogBytesLost:  m.LogBytesLost,
		HeldBytes:     live.Held,
	}
	if m.MaxOutputBytes != nil && m.CapturedBytes > *m.MaxOutputBytes {
		resp.Truncation = append(resp.Truncation, state.TruncCaptureLimit)
	}
	if w.Window {
		resp.Truncation = append(resp.Truncation, state.TruncWindow)
	}
	if w.IncompleteUTF8 {
		resp.Truncation = append(resp.Truncation, state.TruncIncompleteUTF8)
	}
	if m.LogBytesLost > 0 {
		resp.Truncation = append(resp.Truncation, state.TruncLogLost)
	}
	resp.OutputTruncated = len(resp.Truncation) > 0
	return resp, nil
}

// errFollowInterrupted is how followLogs says that Ctrl-C (or SIGTERM,
// SIGHUP) stopped it.
var errFollowInterrupted = errors.New("logs --follow interrupted")

// followLogs writes the redacted stream as text, from the start, until the
// monitor is terminal and its log read to the end, waking on the changes
// a wait wakes on. It returns the observation that ended it then; nil when
// its reader went away, and errFollowInterrupted when it was stopped.
//
// The text there is, and the notice of a lapsed custody, come at once,
// whatever state the guardian is in: the first look needs no answer from
// it. Only then does the follow subscribe to the guardian's notices, and
// looks again at once for what came in between.
func followLogs(env *Env, req logsRequest) (*proc.Observation, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	dir, o, err := observeFor(env, req.MonitorID, state.LogsTool)
	if err != nil {
		return nil, err
	}
	target := proc.WaitTarget(dir, o.Monitor, env.Now)
	var changes *wait.Changes
	defer func() {
		if changes != nil {
			changes.Close()
		}
	}()
	var offset int64
	if req.Offset != nil {
		offset = *req.Offset
	}
	out := env.Stdout
	if env.StdoutIsTerminal {
		screen := &screenWriter{w: out}
		defer screen.Flush()
		out = screen
	}
	// A guardian stopped or killed sends nothing and writes nothing: the
	// re-check still finds it gone, and a look at the moment the custody
	// last seen lapses finds that it lapsed, as a wait does.
	recheck := time.NewTicker(wait.DefaultRecheck)
	defer recheck.Stop()
	lapse := time.NewTimer(time.Hour)
	lapse.Stop()
	defer lapse.Stop()
	lapseSaid := false
	for {
		o, err := proc.Observe(dir, req.MonitorID)
		if err != nil {
			return nil, err
		}
		final := o.OutputEnded()
		if !final && o.Status == state.StatusNeedsReconciliation && !lapseSaid {
			// A guardian past its window lives: it drains once it runs
			// again, and the text goes on then. Until it does nothing
			// moves, which the person following is told once, on stderr.
			lapseSaid = true
			fmt.Fprintln(env.Stderr, colours(env, env.Stderr).dim(custodyLapsedNote(o)))
		}
		for {
			w, err := dir.ReadLogWindow(o.Monitor, &offset, 1<<20, final)
			if err != nil {
				return nil, err
			}
			if w.NextOffset < offset {
				// An --offset past the end: the text starts there once
				// the stream has come that far, as logs --offset shows.
				break
			}
			if _, err := out.Write([]byte(w.Text)); err != nil {
				return nil, nil // the reader went away
			}
			offset = w.NextOffset
			if w.NextOffset >= w.StreamBytes || w.IncompleteUTF8 {
				break
			}
		}
		if final {
			return o, nil
		}
		custody := proc.CustodyOf(o, env.Now())
		if changes == nil {
			// Subscribed to after the first look, and the look that
			// follows at once shows what came in between.
			fault.Point("logs:before_watch")
			if changes, err = followChanges(ctx, target, custody, env.Now()); err != nil {
				return nil, err
			}
			if ctx.Err() != nil {
				return nil, errFollowInterrupted
			}
			continue
		}
		if d := custody.Lapses.Sub(env.Now()); !custody.Lapses.IsZero() && d > 0 {
			lapse.Reset(d)
		} else {
			// A moment already past is left to the re-check: looking
			// again at once would find the same custody.
			lapse.Stop()
		}
		select {
		case _, ok := <-changes.C:
			if ctx.Err() != nil {
				return nil, errFollowInterrupted
			}
			if !ok {
				return nil, changes.Err()
			}
		case <-recheck.C:
		case <-lapse.C:
			// The window has lapsed unless it was renewed: look.
		case <-ctx.Done():
			return nil, errFollowInterrupted
		}
	}
}

// followChanges subscribes to the changes of a followed monitor, whose
// custody at now was custody. As a wait does, it asks no guardian whose
// custody is unverified, and waits for one that does not answer (stopped,
// wedged) no longer than until its custody lapses, nor longer than a
// re-check, so that the follow is never held by a guardian that cannot
// answer; the monitor's directory is watched instead. Whatever answers on
// the control socket is trusted only as the guardian its record names.
func followChanges(ctx context.Context, t wait.Target, custody wait.Custody, now time.Time) (*wait.Changes, error) {
	talk := wait.DefaultRecheck
	if !custody.Lapses.IsZero() {
		talk = min(talk, custody.Lapses.Sub(now))
	}
	if custody.Unverified || custody.OutputEnded || talk <= 0 {
		t.Changes = nil
	}
	guardianCtx, cancel := context.WithTimeout(ctx, talk)
	defer cancel()
	return wait.WatchChanges(ctx, guardianCtx, t)
}

// custodyLapsedNote is what a follow says on stderr of monitor o, whose
// custody lapsed: while its guardian lives (stopped, stalled), that the
// text stops until it runs again; once it is gone, that no more comes.
func custodyLapsedNote(o *proc.Observation) string {
	id := o.Monitor.MonitorID
	next := "its output stops until its guardian runs again"
	if o.OutputEnded() {
		next = "no guardian is left to write its output"
	}
	return fmt.Sprintf("procmon: custody of %s lapsed (%s): %s; procmon reconcile %s settles it", id, o.Why, next, id)
}
