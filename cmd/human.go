//go:build linux

package cmd

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"procmon/internal/protocol"
	"procmon/internal/state"
	"procmon/internal/wait"
)

// This file is the view a person reads: what every command prints instead
// of its JSON response when stdout is a terminal (or with -o text). The
// JSON path never comes here: respond branches once, on globals.human, and
// everything below only reads the same response values the JSON encodes.

// Output formats of -o/--format.
const (
	formatJSON = "json"
	formatText = "text"
)

// chooseFormat decides, once per command line, whether the answer is for
// a person. -o/--format, --json and --pretty (which asks for JSON) force
// it; otherwise a terminal on stdout means a person.
func chooseFormat(env *Env, g *globals) error {
	switch g.format {
	case "":
		g.human = env.StdoutIsTerminal && !g.json && !g.pretty
	case formatJSON:
		g.human = false
	case formatText, "table":
		if g.json || g.pretty {
			flag := map[bool]string{true: "--json", false: "--pretty"}[g.json]
			return protocol.Errorf(protocol.CodeInvalidRequest, "%s and -o %s contradict each other; give one", flag, g.format).With("field", "format")
		}
		g.human = true
	default:
		return protocol.Errorf(protocol.CodeInvalidRequest, "-o/--format %q: want json or text", g.format).With("field", "format")
	}
	return nil
}

// viewWidth is how many cells a row of a table may take: the width of
// the terminal on stdout; else $COLUMNS, as watch sets it for the command
// it runs; else 80 on a terminal that does not say. In a pipe (-o text)
// without $COLUMNS it is 0, any width: the text goes to a file, a pager
// or grep, which want it whole.
func viewWidth(env *Env) int {
	if f, ok := env.Stdout.(*os.File); ok {
		if n := terminalColumns(f); n > 0 {
			return n
		}
	}
	if n, err := strconv.Atoi(env.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if env.StdoutIsTerminal {
		return 80
	}
	return 0
}

// palette colours a person's view: on a terminal only, never with
// NO_COLOR set (https://no-color.org) or on a terminal that says it
// draws no colour (TERM=dumb), never when forced into a pipe.
// palette is how a view writes to w: on, with colour; screen, to a
// terminal, where a service's own text goes through screenText.
type palette struct{ on, screen bool }

func colours(env *Env, w io.Writer) palette {
	terminal := env.StdoutIsTerminal
	if w != env.Stdout {
		f, ok := w.(*os.File)
		terminal = ok && isTerminal(f)
	}
	if env.Getenv("NO_COLOR") != "" || env.Getenv("TERM") == "dumb" {
		return palette{screen: terminal}
	}
	return palette{on: terminal, screen: terminal}
}

// text is a service's own text (its output, a line of it) as the view
// shows it: on a terminal, with its control characters made visible.
func (p palette) text(s string) string {
	if p.screen {
		return screenText(s)
	}
	return s
}

func (p palette) paint(code, s string) string {
	if !p.on || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p palette) bold(s string) string { return p.paint("1", s) }
func (p palette) dim(s string) string  { return p.paint("2", s) }
func (p palette) red(s string) string  { return p.paint("31", s) }

// status colours a status by what it asks of a person: green runs, yellow
// is in between, red needs a look, plain has ended as asked.
func (p palette) status(s string) string {
	switch s {
	case state.StatusRunning, wait.OutcomeSatisfied:
		return p.paint("32", s)
	case state.StatusSettling, wait.OutcomeTimeout:
		return p.paint("33", s)
	case state.StatusNeedsReconciliation, state.StatusTimedOut, state.StatusOutputLimit, wait.OutcomeUnavailable, wait.OutcomeProcessEnded:
		return p.paint("31", s)
	}
	return s
}

// render writes the person's view of a response. A response with no view
// of its own is shown as indented JSON.
func render(env *Env, g *globals, v any) error {
	w := env.Stdout
	p := colours(env, w)
	now := env.Now()
	var b strings.Builder
	switch r := v.(type) {
	case *startResponse:
		viewStart(&b, p, r)
	case *monitorView:
		viewMonitor(&b, p, now, r)
	case listResponse:
		viewList(&b, p, now, r, viewWidth(env))
	case *logsResponse:
		// The text as it was printed; what is cut goes to stderr, so the
		// text itself stays the service's own.
		if _, err := io.WriteString(w, p.text(r.Text)); err != nil {
			return err
		}
		if r.OutputTruncated {
			fmt.Fprintln(env.Stderr, colours(env, env.Stderr).dim(truncationNote(r)))
		}
		if r.HeldBytes > 0 {
			fmt.Fprintln(env.Stderr, colours(env, env.Stderr).dim("("+heldNote(r.HeldBytes)+")"))
		}
		return nil
	case *receiptView:
		viewReceipt(&b, p, *r)
	case receiptView: // reconcile's
		viewReceipt(&b, p, r)
	case *cancelManyResponse:
		for _, rv := range r.Monitors {
			viewReceipt(&b, p, rv)
		}
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "%s  %s: %s\n", e.MonitorID, p.red(string(e.Error.Code)), e.Error.Message)
		}
		if len(r.Monitors)+len(r.Errors) == 0 {
			b.WriteString("nothing to cancel: no live monitor in the run\n")
		}
	case *waitResponse:
		viewWait(&b, p, r)
	case *execResponse:
		viewExec(&b, p, r)
	case configureResponse:
		viewConfigure(&b, p, r)
	case runView:
		// run new: a new run is used only once selected.
		viewRun(&b, p, now, &r)
		fmt.Fprintf(&b, "%s\n", p.dim("  select it: export PROCMON_RUN="+r.RunID+"   (or --run "+r.RunID+")"))
	case *runView:
		viewRun(&b, p, now, r)
		viewRunDetails(&b, r)
	case runListResponse:
		viewRunList(&b, now, r, viewWidth(env))
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "%s  %s: %s\n", e.RunID, p.red(string(e.Error.Code)), e.Error.Message)
		}
	case *runEndResponse:
		viewRunEnd(&b, p, r)
	default:
		return protocol.WriteJSON(w, v, true)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// viewRunEnd shows what ending the run did: the receipts of the monitors
// it drained, and only a count of those that had ended before, which
// may be every monitor the run ever started.
func viewRunEnd(b *strings.Builder, p palette, r *runEndResponse) {
	fmt.Fprintf(b, "run %s ended; it starts nothing more\n", r.RunID)
	endedBefore := 0
	for _, rv := range r.Monitors {
		if r.drained[rv.MonitorID] {
			viewReceipt(b, p, rv)
		} else {
			endedBefore++
		}
	}
	for _, e := range r.Errors {
		fmt.Fprintf(b, "%s  %s: %s\n", e.MonitorID, p.red(string(e.Error.Code)), e.Error.Message)
	}
	if endedBefore == 0 {
		if len(r.Monitors)+len(r.Errors) == 0 {
			b.WriteString("it had no monitors\n")
		}
		return
	}
	switch {
	case endedBefore == len(r.Monitors) && len(r.Errors) == 0:
		fmt.Fprintf(b, "nothing was running: %s had already ended", count(endedBefore, "monitor", "monitors"))
	case endedBefore == 1:
		b.WriteString("1 other had already ended")
	default:
		fmt.Fprintf(b, "%d others had already ended", endedBefore)
	}
	fmt.Fprintf(b, "%s\n", p.dim("; procmon list --run "+r.RunID+" shows them"))
}

// count is n things, in words.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// viewExec is a foreground command's result as a person reads it: what it
// printed, as it printed it, then how it ended.
func viewExec(b *strings.Builder, p palette, r *execResponse) {
	b.WriteString(p.text(r.Text))
	if r.Text != "" && !strings.HasSuffix(r.Text, "\n") {
		b.WriteString("\n")
	}
	if r.OutputTruncated {
		fmt.Fprintf(b, "%s\n", p.dim("(output cut: "+strings.Join(r.Truncation, ", ")+"; the window shows its end)"))
	}
	fmt.Fprintf(b, "%s after %s: %s (command %d of run %s)\n", p.status(statusText(r.Status, r.ExitCode, r.Signal, r.Reason)),
		shortDuration(time.Duration(r.DurationMs)*time.Millisecond), shellQuote(r.Argv), r.CommandOrdinal, r.RunID)
	fmt.Fprintf(b, "  %s\n", receiptSummary(r.Receipt))
}

// reportError is the person's view of an error: one line on stderr that
// says what happened and what to do next (see advise).
func reportError(env *Env, pe *protocol.Error) {
	p := colours(env, env.Stderr)
	msg := strings.Join(strings.Fields(pe.Message), " ")
	fmt.Fprintf(env.Stderr, "%s %s %s\n", p.red("procmon:"), msg, p.dim("("+string(pe.Code)+")"))
}

func viewStart(b *strings.Builder, p palette, r *startResponse) {
	fmt.Fprintf(b, "started %s (pid %d, command %d of run %s): %s\n",
		nameAndID(p, r.Name, r.MonitorID, " "), r.PID, r.CommandOrdinal, r.RunID, shellQuote(r.Argv))
	for _, w := range r.Warnings {
		fmt.Fprintf(b, "  warning: %s\n", w)
	}
}

// nameAndID is a monitor's name in bold and its id, or its id in bold
// when it has no name (its short id would only repeat the id's start).
func nameAndID(p palette, name, id, sep string) string {
	if name == "" {
		return p.bold(id)
	}
	return p.bold(nameText(name)) + sep + id
}

// labelOf is what a person calls a monitor: its name, else its short id.
func labelOf(name, id string) string {
	if name != "" {
		return nameText(name)
	}
	return shortID(id)
}

// nameText is a monitor's name as the views show it: quoted as it would
// be typed back, as an argument is (a record may hold a name that start
// no longer takes); "" for none.
func nameText(name string) string {
	if name == "" {
		return ""
	}
	return quoteArg(name)
}

// shortIDLen is how much of an id the views show: m_ and 8 characters
// tell apart thousands of monitors, and any unique prefix is accepted
// back (see resolveMonitorArg).
const shortIDLen = 10

func shortID(id string) string {
	if len(id) > shortIDLen {
		return id[:shortIDLen]
	}
	return id
}

// statusText is a status with what ended it: the exit code or signal, or
// the reason a monitor was stopped.
func statusText(status string, exitCode *int, signal *string, reason string) string {
	switch {
	case exitCode != nil:
		return fmt.Sprintf("%s (%d)", status, *exitCode)
	case signal != nil:
		return status + " (" + *signal + ")"
	case reason != "" && reason != status:
		return status + " (" + reason + ")"
	}
	return status
}

func viewMonitor(b *strings.Builder, p palette, now time.Time, v *monitorView) {
	status := statusText(v.Status, v.ExitCode, v.Signal, "")
	fmt.Fprintf(b, "%s  %s  started %s ago\n", nameAndID(p, v.Name, v.MonitorID, "  "), p.status(status), age(now, v.StartedAtMs))
	row := func(k, format string, a ...any) { fmt.Fprintf(b, "  %-9s "+format+"\n", append([]any{k}, a...)...) }
	row("argv", "%s", shellQuote(v.Argv))
	row("cwd", "%s", quoteArg(v.Cwd))
	if v.Receipt == nil && v.guardianPID > 0 {
		row("pid", "%d (group %d), guardian %d", v.PID, v.PGID, v.guardianPID)
	} else {
		row("pid", "%d (group %d)", v.PID, v.PGID)
	}
	row("run", "%s, command %d", v.RunID, v.CommandOrdinal)
	if v.LogBytes < v.CapturedBytes && (v.Receipt != nil || v.LogBytesLost > 0) {
		// Past the output cap, or lost to a full disk: the log keeps less
		// than was captured, and logs shows what it keeps. (A live
		// record's two counts may be a write apart.)
		row("output", "%s captured, %s stored", byteCount(v.CapturedBytes), byteCount(v.LogBytes))
	} else {
		row("output", "%s captured", byteCount(v.CapturedBytes))
	}
	if v.WorkDeadlineMs != nil && v.Receipt == nil {
		row("deadline", "in %s", until(now, *v.WorkDeadlineMs))
	}
	if v.Why != "" {
		row("why", "%s", v.Why)
	}
	if r := v.Receipt; r != nil {
		row("ended", "%s ago: %s", age(now, r.FinishedAtMs), receiptSummary(*r))
	}
	for _, e := range []string{v.LogError, v.StateError} {
		if e != "" {
			row("error", "%s", p.red(e))
		}
	}
	switch v.Status {
	case state.StatusRunning:
		fmt.Fprintf(b, "%s\n", p.dim("  next: procmon logs -f "+shortID(v.MonitorID)+"   procmon cancel "+shortID(v.MonitorID)))
	case state.StatusNeedsReconciliation:
		fmt.Fprintf(b, "%s\n", p.dim("  next: procmon reconcile "+v.MonitorID))
	}
}

// refusalWords says in words why a file was not taken as evidence; the
// reason itself follows, as the JSON has it. (The component root's
// reasons come with a why of their own.)
var refusalWords = map[string]string{
	wait.ReasonSymlink:        "the path is or goes through a symbolic link, which is not followed",
	wait.ReasonNotRegular:     "it is not a regular file",
	wait.ReasonHardlinked:     "it has another hard link",
	wait.ReasonUnstable:       "it changed while it was read",
	wait.ReasonDigestMismatch: "its sha256 is not the one asked for",
	wait.ReasonTooLarge:       fmt.Sprintf("it is larger than a wait reads (%d MiB)", wait.MaxFileSize>>20),
}

// receiptSummary says in words what a receipt proves.
func receiptSummary(r state.Receipt) string {
	var parts []string
	parts = append(parts, "reason "+r.Reason)
	for _, s := range r.Signals {
		what := "processes"
		if s.Targets == 1 {
			what = "process"
		}
		parts = append(parts, fmt.Sprintf("sent %s to %d %s", s.Signal, s.Targets, what))
	}
	if r.GroupEmptyVerified {
		parts = append(parts, "group empty (verified)")
	} else {
		parts = append(parts, "group NOT verified empty")
	}
	if r.OutputDrained {
		parts = append(parts, "output drained")
	}
	if len(r.KillUnconfirmed) > 0 {
		parts = append(parts, fmt.Sprintf("kill unconfirmed for pids %v", r.KillUnconfirmed))
	}
	if r.Containment != "" && r.Containment != "complete" {
		parts = append(parts, "containment "+r.Containment)
	}
	if r.Custody != "" && r.Custody != state.CustodyGuardian {
		parts = append(parts, "custody "+r.Custody)
	}
	return strings.Join(parts, ", ")
}

func viewReceipt(b *strings.Builder, p palette, r receiptView) {
	who := p.bold(r.MonitorID)
	if r.name != "" {
		who = p.bold(nameText(r.name)) + " " + r.MonitorID
	}
	if r.Receipt == nil {
		fmt.Fprintf(b, "%s  no receipt\n", who)
		return
	}
	fmt.Fprintf(b, "%s  %s\n", who, p.status(statusText(r.Status, r.ExitCode, r.Signal, r.Reason)))
	if r.endedBefore {
		fmt.Fprintf(b, "  %s\n", p.dim("it had ended already: this is its receipt, and nothing was signalled now"))
	}
	fmt.Fprintf(b, "  %s\n", receiptSummary(*r.Receipt))
	if r.StateError != "" {
		fmt.Fprintf(b, "  error: %s\n", p.red(r.StateError))
	}
}

func viewList(b *strings.Builder, p palette, now time.Time, r listResponse, width int) {
	ids := make([]string, 0, len(r.Monitors))
	for _, row := range r.Monitors {
		ids = append(ids, row.MonitorID)
	}
	short := uniquePrefixes(ids, shortIDLen)
	// The run is a column only when the rows are of every run: a run's own
	// listing would repeat its id, 28 cells of a run new made, on every
	// row, and leave a name or command a few cells.
	allRuns := r.RunID == ""
	t := table{
		header:   []string{"MONITOR", "STATUS", "NAME", "AGE", "ARGV"},
		cuttable: []bool{false, false, true, false, true},
		painted:  1,
	}
	if allRuns {
		t.header = slices.Insert(t.header, 1, "RUN")
		t.cuttable = slices.Insert(t.cuttable, 1, false)
		t.painted = 2
	}
	for i, row := range r.Monitors {
		var cells []string
		var paint func(string) string
		if row.Error != nil {
			cells, paint = []string{short[i], string(row.Error.Code), "-", "-", row.Error.Message}, p.red
		} else {
			v := row.monitorView
			cells = []string{short[i], statusText(v.Status, v.ExitCode, v.Signal, ""), dash(nameText(v.Name)), age(now, v.StartedAtMs), shellQuote(v.Argv)}
			if p.on {
				paint = func(s string) string { return p.status(v.Status) + s[len(v.Status):] }
			}
		}
		if allRuns {
			run := "-"
			if row.Error == nil {
				run = row.RunID
			}
			cells = slices.Insert(cells, 1, run)
		}
		t.add(cells, paint)
	}
	t.write(b, width)
	switch {
	case len(r.Monitors) > 0:
	case r.startRefused != "":
		// Not a start, which would be refused: what enables one.
		fmt.Fprintf(b, "%s\n", p.dim("no monitors: "+r.startRefused))
	default:
		fmt.Fprintf(b, "%s\n", p.dim("no monitors; start one with: procmon start COMMAND [ARGS...]"))
	}
}

// table aligns columns by the cells they take on a terminal, so that
// neither colour codes nor wide characters shift a column. Only one
// column, the status, is painted: its row's paint, if any.
type table struct {
	header []string
	// cuttable marks the columns of free text (a command line, a name),
	// which may be cut to fit a row on the terminal; ids, statuses and
	// times never are.
	cuttable []bool
	rows     [][]string
	paints   []func(string) string
	painted  int // the column a row's paint is for
}

func (t *table) add(cells []string, paint func(string) string) {
	t.rows = append(t.rows, cells)
	t.paints = append(t.paints, paint)
}

// columnGap is the space between two columns.
const columnGap = "  "

// write writes the table with rows of at most width cells (any width for
// 0): a row that would not fit has its free text cut, rather than wrap
// and break every column after it.
func (t *table) write(b *strings.Builder, width int) {
	widths := make([]int, len(t.header))
	for _, r := range append([][]string{t.header}, t.rows...) {
		for i, c := range r {
			widths[i] = max(widths[i], cellWidth(c))
		}
	}
	if width > 0 {
		t.fit(widths, width)
	}
	line := func(cells []string, paint func(string) string) {
		for i, c := range cells {
			c = cutToWidth(c, widths[i])
			pad := strings.Repeat(" ", widths[i]-cellWidth(c))
			if i == t.painted && paint != nil {
				c = paint(c)
			}
			if i == len(cells)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c + pad + columnGap)
		}
		b.WriteString("\n")
	}
	line(t.header, nil)
	for i, r := range t.rows {
		line(r, t.paints[i])
	}
}

// fit narrows the cuttable columns until a row takes at most width
// cells: always the widest of them (the command line, usually) and none
// below its title. When that is not enough (a terminal narrower than
// the ids and statuses), the rows wrap.
func (t *table) fit(widths []int, width int) {
	over := len(columnGap) * (len(widths) - 1)
	for _, w := range widths {
		over += w
	}
	over -= width
	for over > 0 {
		widest, next := -1, 0
		for i, w := range widths {
			if i >= len(t.cuttable) || !t.cuttable[i] || w <= cellWidth(t.header[i]) {
				continue
			}
			if widest < 0 || w > widths[widest] {
				if widest >= 0 {
					next = max(next, widths[widest])
				}
				widest = i
			} else {
				next = max(next, w)
			}
		}
		if widest < 0 {
			return
		}
		// Down to the next widest (or the title) in one step; columns
		// equally wide are narrowed by turns.
		cut := min(over, max(1, widths[widest]-max(next, cellWidth(t.header[widest]))))
		widths[widest] -= cut
		over -= cut
	}
}

// uniquePrefixes shortens each id to at least least characters and as many
// more as it takes to tell it from every other id listed.
func uniquePrefixes(ids []string, least int) []string {
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	need := map[string]int{}
	for i, id := range sorted {
		n := least
		for _, other := range []int{i - 1, i + 1} {
			if other >= 0 && other < len(sorted) && sorted[other] != id {
				n = max(n, commonPrefix(id, sorted[other])+1)
			}
		}
		need[id] = n
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id[:min(need[id], len(id))]
	}
	return out
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func viewWait(b *strings.Builder, p palette, r *waitResponse) {
	o := r.Observation
	elapsed := time.Duration(o.ElapsedMs) * time.Millisecond
	fmt.Fprintf(b, "%s after %s: %s on %s\n", p.status(r.Outcome), shortDuration(elapsed), conditionText(r.Condition), r.MonitorID)
	switch {
	case o.MatchOffset != nil:
		fmt.Fprintf(b, "  matched at byte %d of the output\n", *o.MatchOffset)
	case o.SHA256 != "":
		fmt.Fprintf(b, "  %s: %s, sha256 %s\n", o.Path, byteCount(derefInt64(o.Size)), o.SHA256)
	}
	if o.ScannedBytes != nil && o.MatchOffset == nil {
		fmt.Fprintf(b, "  %s of output read, not matched\n", byteCount(*o.ScannedBytes))
	}
	switch {
	case o.LogBytesLost > 0:
		fmt.Fprintf(b, "  %s of output could not be stored (the text may be in it): %s\n", byteCount(o.LogBytesLost), o.LogError)
	case o.LogError != "":
		fmt.Fprintf(b, "  the log could not be written: %s\n", o.LogError)
	}
	if o.HeldBytes > 0 {
		fmt.Fprintf(b, "  %s; the text may be among them\n", heldNote(o.HeldBytes))
	}
	fmt.Fprintf(b, "  status %s\n", p.status(statusText(o.Status, o.ExitCode, o.Signal, o.Reason)))
	if o.Why != "" {
		fmt.Fprintf(b, "  why: %s\n", o.Why)
	}
	switch words, ok := refusalWords[o.Refusal]; {
	case o.Refusal == wait.ReasonAbsent:
		fmt.Fprintf(b, "  %s: not there\n", o.Path)
	case ok:
		fmt.Fprintf(b, "  refused: %s (%s)\n", words, o.Refusal)
	case o.Refusal != "":
		fmt.Fprintf(b, "  refused: %s\n", o.Refusal)
	}
	if len(o.LogTail) > 0 {
		fmt.Fprintf(b, "  last lines:\n")
		for _, l := range o.LogTail {
			fmt.Fprintf(b, "    %s\n", p.text(l))
		}
	}
	if r.Outcome == wait.OutcomeTimeout {
		fmt.Fprintf(b, "%s\n", p.dim("  the service keeps running: procmon logs "+shortID(r.MonitorID)))
	}
}

func conditionText(c wait.Condition) string {
	switch c.Kind {
	case wait.KindOutput:
		return "output " + strconv.Quote(c.Text)
	case wait.KindFile:
		return "file " + c.Path
	}
	return c.Kind
}

func derefInt64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func viewConfigure(b *strings.Builder, p palette, r configureResponse) {
	if r.MonitorsEnabled {
		fmt.Fprintf(b, "monitors %s; settings in %s\n", p.paint("32", "enabled"), r.StateDir)
	} else {
		fmt.Fprintf(b, "monitors %s; settings in %s\n", p.red("disabled"), r.StateDir)
	}
	viewPolicy(b, r.Settings)
}

// viewPolicy shows the limits of settings, stored or frozen into a run.
func viewPolicy(b *strings.Builder, settings state.Settings) {
	sb := settings.Sandbox
	limit := func(n *int64, unit string) string {
		if n == nil {
			return "none"
		}
		if *n == 1 {
			unit = strings.TrimSuffix(unit, "s")
		}
		return strconv.FormatInt(*n, 10) + unit
	}
	// Durations as --timeout takes them and the flags' defaults show them
	// (30s, 10m, 1h30m).
	deadline := func(n *int64) string {
		if n == nil {
			return "none"
		}
		return formatSeconds(*n)
	}
	wd := "none"
	if sb.WorkDuration != nil {
		wd = deadline(sb.WorkDuration.TimeoutSeconds)
	}
	fmt.Fprintf(b, "  work deadline per run   %s\n", wd)
	fmt.Fprintf(b, "  deadline per service    %s\n", deadline(sb.MonitorTimeoutSeconds))
	fmt.Fprintf(b, "  output per service      %s\n", limit(sb.MaxOutputBytes, " bytes"))
	fmt.Fprintf(b, "  starts per run          %s\n", limit(sb.CommandLimit, ""))
	fmt.Fprintf(b, "  owner grace             %s\n", formatSeconds(settings.OwnerGraceSeconds()))
}

// viewRunDetails is what run show adds to the run's line: its grants, its
// owner and the policy it froze.
func viewRunDetails(b *strings.Builder, r *runView) {
	fmt.Fprintf(b, "  tools                   %s\n", strings.Join(r.Tools, ", "))
	owner := "none (it ends with procmon run end)"
	if o := r.Owner; o != nil {
		owner = fmt.Sprintf("pid %d (its exit ends the run)", o.PID)
	}
	fmt.Fprintf(b, "  owner                   %s\n", owner)
	if r.NativeCheckpoints {
		b.WriteString("  native checkpoints      yes: monitors are refused\n")
	}
	viewPolicy(b, r.Policy)
}

func viewRun(b *strings.Builder, p palette, now time.Time, r *runView) {
	limit := "no limit"
	if l := r.Policy.Sandbox.CommandLimit; l != nil {
		limit = "of " + strconv.FormatInt(*l, 10)
	}
	fmt.Fprintf(b, "run %s  %s  created %s ago, %d starts used %s\n", p.bold(r.RunID), runActivity(r), age(now, r.CreatedAtMs), r.BudgetUsed, limit)
}

// viewRunList is a table of runs, one a row, so that an ended run (whose
// status says why) shifts no column of the next.
func viewRunList(b *strings.Builder, now time.Time, r runListResponse, width int) {
	if len(r.Runs) == 0 {
		if len(r.Errors) == 0 {
			b.WriteString("no runs yet; the first start makes the run \"default\"\n")
		}
		return
	}
	t := table{header: []string{"RUN", "STATUS", "AGE", "STARTS"}}
	for i := range r.Runs {
		run := &r.Runs[i]
		t.add([]string{run.RunID, runActivity(run), age(now, run.CreatedAtMs), runStarts(run)}, nil)
	}
	t.write(b, width)
}

func runActivity(r *runView) string {
	if r.EndedAtMs != nil {
		return "ended (" + r.EndReason + ")"
	}
	return "active"
}

// runStarts is how much of its budget of starts a run has used.
func runStarts(r *runView) string {
	if l := r.Policy.Sandbox.CommandLimit; l != nil {
		return fmt.Sprintf("%d of %d", r.BudgetUsed, *l)
	}
	return fmt.Sprintf("%d, no limit", r.BudgetUsed)
}

// truncationNote says why a logs answer is not the whole output: the
// window it shows, and output the log could not store, in words, with
// any other reason as the JSON names it.
func truncationNote(r *logsResponse) string {
	var notes, other []string
	for _, t := range r.Truncation {
		switch t {
		case state.TruncWindow:
			notes = append(notes, fmt.Sprintf("showing bytes %d to %d of %d; more with --offset or --tail", r.Offset, r.NextOffset, r.StreamBytes))
		case state.TruncLogLost:
			notes = append(notes, fmt.Sprintf("the log could not store the last %s of the output: %s", byteCount(r.LogBytesLost), r.LogError))
		default:
			other = append(other, t)
		}
	}
	if len(other) > 0 {
		notes = append(notes, "output cut: "+strings.Join(other, ", "))
	}
	return "(" + strings.Join(notes, "; ") + ")"
}

// heldNote says that the redactor holds back the last n bytes of the
// output, and why. They are counted in bytes, never rounded: a hold is
// bounded by the longest needle and a rule's 4 KiB (package redact).
func heldNote(n int64) string {
	if n == 1 {
		return "the last byte of the output is held back until the service writes more: it may begin a credential"
	}
	return fmt.Sprintf("the last %d bytes of the output are held back until the service writes more: they may begin a credential", n)
}

// followEndNote is the line logs --follow leaves when it stops because
// the service has ended: how, as its receipt says (exited (0), cancelled
// (SIGTERM)), or, when its guardian is gone without one, what to do.
func followEndNote(v monitorView) string {
	label := labelOf(v.Name, v.MonitorID)
	if v.Receipt == nil {
		return fmt.Sprintf("(%s: %s, %s; next: procmon reconcile %s)", label, v.Status, v.Why, v.MonitorID)
	}
	return fmt.Sprintf("(%s ended: %s)", label, statusText(v.Status, v.ExitCode, v.Signal, v.Reason))
}

// age is how long ago a moment in ms was, as a person reads it: 42s,
// 3m12s, 2h5m, 3d4h.
func age(now time.Time, ms int64) string {
	return shortDuration(now.Sub(time.UnixMilli(ms)))
}

func until(now time.Time, ms int64) string {
	return shortDuration(time.UnixMilli(ms).Sub(now))
}

func shortDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// byteCount is a size as a person reads it.
func byteCount(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10) + " B"
	case n < 1000*1000:
		return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + " kB"
	case n < 1000*1000*1000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + " MB"
	}
	return strconv.FormatFloat(float64(n)/1e9, 'f', 1, 64) + " GB"
}

// shellQuote writes argv as a person would type it in a POSIX shell. A
// name is shown the same way (quoteArg), so that what a view prints can
// be typed back, and no control character in an argument or a name
// (a record may hold any) reaches the terminal as itself.
func shellQuote(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = quoteArg(a)
	}
	return strings.Join(out, " ")
}

func quoteArg(a string) string {
	if a == "" {
		return "''"
	}
	safe := true
	for _, r := range a {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_", r)) {
			safe = false
			break
		}
	}
	if safe {
		return a
	}
	if strings.IndexFunc(a, unseen) >= 0 || !utf8.ValidString(a) {
		return ansiCQuote(a)
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// unseen reports whether r does not show as itself: a control character,
// or a formatting one (a zero-width space, a direction override).
func unseen(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// ansiCQuote quotes a as bash, zsh and ksh read $'...': every control or
// formatting character and every byte that begins no UTF-8 character is
// written as an escape, so a tab cannot shift a column, a newline cannot start a
// row, and an escape sequence cannot drive the terminal, while the text
// still pastes back as the same argument.
func ansiCQuote(a string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(a); {
		r, size := utf8.DecodeRuneInString(a[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, a[i])
		case r == '\'' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == 0x1b:
			b.WriteString(`\e`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unseen(r) && r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		case unseen(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(a[i : i+size])
		}
		i += size
	}
	b.WriteString("'")
	return b.String()
}
