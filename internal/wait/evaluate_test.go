//go:build linux

package wait

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// noRecheck keeps the safety re-check out of a test, so that only inotify
// can wake the wait: a test that passes with it proves the wake-up was an
// event.
const noRecheck = time.Hour

var (
	running    = Custody{Status: "running"}
	exitCode3  = 3
	exited3    = Custody{Status: "exited", Terminal: true, Reason: "exited", ExitCode: &exitCode3}
	unverified = Custody{Status: "needs_reconciliation", Unverified: true, Why: "the guardian is gone"}
)

// fakeMonitor is a monitor directory with a log, whose custody the test
// decides.
type fakeMonitor struct {
	dir string
	log string

	mu      sync.Mutex
	custody Custody
	looks   int
}

func newFakeMonitor(t *testing.T, c Custody) *fakeMonitor {
	t.Helper()
	dir := t.TempDir()
	m := &fakeMonitor{dir: dir, log: filepath.Join(dir, "output.log"), custody: c}
	if err := os.WriteFile(m.log, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *fakeMonitor) observe() (Custody, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.looks++
	return m.custody, nil
}

// setCustody changes custody without touching any file, as a guardian that
// dies does.
func (m *fakeMonitor) setCustody(c Custody) {
	m.mu.Lock()
	m.custody = c
	m.mu.Unlock()
}

// end changes custody and replaces the record, as a guardian writing its
// receipt does.
func (m *fakeMonitor) end(t *testing.T, c Custody) {
	t.Helper()
	m.setCustody(c)
	tmp := filepath.Join(m.dir, ".record.tmp")
	if err := os.WriteFile(tmp, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(m.dir, "record.json")); err != nil {
		t.Fatal(err)
	}
}

func (m *fakeMonitor) print(t *testing.T, s string) {
	t.Helper()
	f, err := os.OpenFile(m.log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func (m *fakeMonitor) target(root string) Target {
	t := Target{Dir: m.dir, OpenLog: func() (*os.File, error) { return os.Open(m.log) }, Observe: m.observe}
	if root != "" {
		// As a guardian would hand it over: opened at once, held since.
		t.RootPath = root
		t.HoldRoot = func(context.Context) (int, error) { return OpenRoot(root) }
	}
	return t
}

type result struct {
	ev  Evidence
	err error
}

// evaluate runs Evaluate in the background, calling each of steps after
// one look that did not end the wait (the first after the first look, and
// so on), and returns its result.
func evaluate(t *testing.T, ctx context.Context, c Condition, target Target, opt Options, steps ...func()) Evidence {
	t.Helper()
	ev, err := evaluateErr(t, ctx, c, target, opt, steps...)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	return ev
}

func evaluateErr(t *testing.T, ctx context.Context, c Condition, target Target, opt Options, steps ...func()) (Evidence, error) {
	t.Helper()
	if opt.Recheck == 0 {
		opt.Recheck = noRecheck
	}
	looks := 0
	opt.looked = func() {
		if looks < len(steps) {
			steps[looks]()
		}
		looks++
	}
	done := make(chan result, 1)
	go func() {
		ev, err := Evaluate(ctx, c, target, opt)
		done <- result{ev, err}
	}()
	select {
	case r := <-done:
		return r.ev, r.err
	case <-time.After(failAfter):
		t.Fatalf("Evaluate did not return within %v", failAfter)
		return Evidence{}, nil
	}
}

func wantOutcome(t *testing.T, ev Evidence, outcome string) {
	t.Helper()
	if ev.Outcome != outcome {
		t.Fatalf("outcome %q, want %q; observation %+v", ev.Outcome, outcome, ev.Observation)
	}
}

func outputCond(text string) Condition { return Condition{Kind: KindOutput, Text: text} }

func TestEvaluateOutputPrintedBefore(t *testing.T) {
	m := newFakeMonitor(t, running)
	m.print(t, "first line\nListening on 8000\n")
	ev := evaluate(t, context.Background(), outputCond("Listening on 8000"), m.target(""), Options{})
	wantOutcome(t, ev, OutcomeSatisfied)
	if o := ev.Observation; o.MatchOffset == nil || *o.MatchOffset != 11 || o.Status != "running" || o.LogTail != nil {
		t.Fatalf("observation %+v", o)
	}
}

func TestEvaluateOutputSplitAcrossWrites(t *testing.T) {
	m := newFakeMonitor(t, running)
	m.print(t, "boot\nListen")
	ev := evaluate(t, context.Background(), outputCond("Listening on 8000"), m.target(""), Options{},
		func() { m.print(t, "ing on ") },
		func() { m.print(t, "8000\n") })
	wantOutcome(t, ev, OutcomeSatisfied)
	if o := ev.Observation; *o.MatchOffset != 5 {
		t.Fatalf("match offset %d, want 5", *o.MatchOffset)
	}
}

func TestEvaluateOutputReadsEachByteOnce(t *testing.T) {
	m := newFakeMonitor(t, running)
	chunk := strings.Repeat("x", 1000) + "\n"
	var steps []func()
	for range 5 {
		steps = append(steps, func() { m.print(t, chunk) })
	}
	steps = append(steps, func() { m.end(t, exited3) })
	ev := evaluate(t, context.Background(), outputCond("never"), m.target(""), Options{}, steps...)
	wantOutcome(t, ev, OutcomeProcessEnded)
	if got := *ev.Observation.ScannedBytes; got != 5*int64(len(chunk)) {
		t.Fatalf("scanned %d bytes, want %d", got, 5*len(chunk))
	}
}

// bigLog makes the fake monitor's log size bytes of zeros (sparse), then
// tail.
func (m *fakeMonitor) bigLog(t *testing.T, size int64, tail string) {
	t.Helper()
	if err := os.Truncate(m.log, size); err != nil {
		t.Fatal(err)
	}
	m.print(t, tail)
}

// testBudget is what one look reads in these tests (Options.lookBudget):
// a log many looks long stays small.
const testBudget = 64 << 10

// steppingClock is a clock that moves a second each time it is read.
func steppingClock() func() time.Time {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
}

// TestEvaluateLongLogSeesItsTimeout: a log longer than one look reads
// (lookBudget) is read on between looks, so the wait's timeout is seen
// while it reads: it used to read the whole log first (6 GB held a wait
// with a 1 s timeout for 8 s). The clock moves a second each time it is
// read, so the timeout has passed at the loop's first look.
func TestEvaluateLongLogSeesItsTimeout(t *testing.T) {
	m := newFakeMonitor(t, running)
	m.bigLog(t, 16*testBudget, "")
	clock := steppingClock()
	ev := evaluate(t, context.Background(), outputCond("never"), m.target(""), Options{Timeout: time.Second, Now: clock, lookBudget: testBudget})
	wantOutcome(t, ev, OutcomeTimeout)
	if got := *ev.Observation.ScannedBytes; got > 2*testBudget {
		t.Fatalf("scanned %d bytes of %d before its timeout, want at most two looks' (%d)", got, 16*testBudget, 2*testBudget)
	}
}

// TestEvaluateLongLogOfAnEndedMonitor: a monitor that has ended is not
// process_ended while its log is still being read in parts, nor timed
// out (a timeout says the service keeps running): the text at its end is
// found, and a text not in it is process_ended.
func TestEvaluateLongLogOfAnEndedMonitor(t *testing.T) {
	m := newFakeMonitor(t, exited3)
	m.bigLog(t, 3*testBudget, "ready\n")
	clock := steppingClock()
	ev := evaluate(t, context.Background(), outputCond("ready"), m.target(""), Options{Timeout: time.Second, Now: clock, lookBudget: testBudget})
	wantOutcome(t, ev, OutcomeSatisfied)
	if o := ev.Observation; *o.MatchOffset != 3*testBudget {
		t.Fatalf("match offset %d, want %d", *o.MatchOffset, 3*testBudget)
	}
	ev = evaluate(t, context.Background(), outputCond("never"), m.target(""), Options{Timeout: time.Second, Now: clock, lookBudget: testBudget})
	wantOutcome(t, ev, OutcomeProcessEnded)
	if got, want := *ev.Observation.ScannedBytes, 3*testBudget+int64(len("ready\n")); got != want {
		t.Fatalf("scanned %d bytes, want the whole log's %d", got, want)
	}
}

func TestEvaluateOutputWinsOverEnd(t *testing.T) {
	m := newFakeMonitor(t, exited3)
	m.print(t, "ready\n")
	ev := evaluate(t, context.Background(), outputCond("ready"), m.target(""), Options{})
	wantOutcome(t, ev, OutcomeSatisfied)
	if o := ev.Observation; o.Status != "exited" || *o.ExitCode != 3 {
		t.Fatalf("observation %+v", o)
	}
}

func TestEvaluateProcessEnded(t *testing.T) {
	m := newFakeMonitor(t, running)
	m.print(t, "starting\n")
	ev := evaluate(t, context.Background(), outputCond("ready"), m.target(""), Options{},
		func() {
			m.print(t, "fatal: port in use\n")
			m.end(t, exited3)
		})
	wantOutcome(t, ev, OutcomeProcessEnded)
	o := ev.Observation
	if o.Status != "exited" || o.ExitCode == nil || *o.ExitCode != 3 || o.Reason != "exited" || o.MatchOffset != nil {
		t.Fatalf("observation %+v", o)
	}
	if want := []string{"starting", "fatal: port in use"}; strings.Join(o.LogTail, "|") != strings.Join(want, "|") {
		t.Fatalf("log tail %q, want %q", o.LogTail, want)
	}
}

func TestEvaluateExit(t *testing.T) {
	m := newFakeMonitor(t, running)
	ev := evaluate(t, context.Background(), Condition{Kind: KindExit}, m.target(""), Options{},
		func() { m.end(t, exited3) })
	wantOutcome(t, ev, OutcomeSatisfied)
	if o := ev.Observation; *o.ExitCode != 3 || o.LogTail != nil {
		t.Fatalf("observation %+v", o)
	}
}

func TestEvaluateUnavailableForEveryKind(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "ready"), "yes")
	for _, c := range []Condition{outputCond("ready"), {Kind: KindExit}, fileCond("ready")} {
		m := newFakeMonitor(t, unverified)
		m.print(t, "ready\n")
		ev := evaluate(t, context.Background(), c, m.target(root), Options{})
		wantOutcome(t, ev, OutcomeUnavailable)
		if o := ev.Observation; o.Why == "" || o.MatchOffset != nil || o.SHA256 != "" || o.ExitCode != nil {
			t.Fatalf("%s: observation %+v", c.Kind, o)
		}
	}
}

// A guardian that dies (or stops renewing) changes nothing a watch sees;
// the slow re-check is what notices.
func TestEvaluateRecheckNoticesLostCustody(t *testing.T) {
	m := newFakeMonitor(t, running)
	ev := evaluate(t, context.Background(), Condition{Kind: KindExit}, m.target(""), Options{Recheck: 20 * time.Millisecond},
		func() { m.setCustody(unverified) })
	wantOutcome(t, ev, OutcomeUnavailable)
}

func TestEvaluateTimeout(t *testing.T) {
	m := newFakeMonitor(t, running)
	m.print(t, "still booting\n")
	ev := evaluate(t, context.Background(), outputCond("ready"), m.target(""), Options{Timeout: 50 * time.Millisecond})
	wantOutcome(t, ev, OutcomeTimeout)
	if o := ev.Observation; o.Status != "running" || o.ElapsedMs < 50 || len(o.LogTail) != 1 {
		t.Fatalf("observation %+v", o)
	}
}

func TestEvaluateCancelled(t *testing.T) {
	m := newFakeMonitor(t, running)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := evaluateErr(t, ctx, outputCond("ready"), m.target(""), Options{}, cancel)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Evaluate after cancel: %v, want context.Canceled", err)
	}
}

func TestEvaluateRefusesBadCondition(t *testing.T) {
	m := newFakeMonitor(t, running)
	_, err := Evaluate(context.Background(), Condition{Kind: "port"}, m.target(""), Options{})
	if err == nil {
		t.Fatal("Evaluate accepted a port condition")
	}
}

// The file's directories appear only after the wait began, and the file
// is published by rename: every step is seen through a watch on the
// deepest directory that exists at the time.
func TestEvaluateFileInNewDirectories(t *testing.T) {
	m := newFakeMonitor(t, running)
	root := t.TempDir()
	mkdir := func(p string) {
		if err := os.Mkdir(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ev := evaluate(t, context.Background(), fileCond("a/b/ready.json"), m.target(root), Options{},
		func() { mkdir("a") },
		func() { mkdir("a/b") },
		func() {
			writeFile(t, filepath.Join(root, "a/b/.ready.tmp"), `{"ready": true}`)
			if err := os.Rename(filepath.Join(root, "a/b/.ready.tmp"), filepath.Join(root, "a/b/ready.json")); err != nil {
				t.Fatal(err)
			}
		})
	wantOutcome(t, ev, OutcomeSatisfied)
	o := ev.Observation
	if o.Path != "a/b/ready.json" || o.SHA256 != digestOf(`{"ready": true}`) || *o.Size != 15 || o.Refusal != "" {
		t.Fatalf("observation %+v", o)
	}
}

func TestEvaluateFileRefusalsNamed(t *testing.T) {
	m := newFakeMonitor(t, running)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "real.json"), "x")
	if err := os.Symlink("real.json", filepath.Join(root, "ready.json")); err != nil {
		t.Fatal(err)
	}
	ev := evaluate(t, context.Background(), fileCond("ready.json"), m.target(root), Options{},
		func() { os.Remove(filepath.Join(root, "ready.json")) },
		func() { m.end(t, exited3) })
	wantOutcome(t, ev, OutcomeProcessEnded)
	o := ev.Observation
	if o.Refusal != ReasonAbsent || len(o.RefusalsSeen) != 1 || o.RefusalsSeen[0] != ReasonSymlink || *o.ExitCode != 3 {
		t.Fatalf("observation %+v", o)
	}
}

// A file that is appended to while the wait reads it is never evidence:
// each read during which it grew is refused as unstable, and the wait is
// satisfied only by a read of the finished file.
func TestEvaluateFileNeverSatisfiedMidWrite(t *testing.T) {
	m := newFakeMonitor(t, running)
	root, _ := testRoot(t)
	name := filepath.Join(root, "build.log")
	writeFile(t, name, "part 1\n")
	const appends = 3
	reads := 0
	opt := Options{checkFile: func(rootFD int, c Condition) FileObservation {
		return checkFile(rootFD, c, func() {
			reads++
			if reads <= appends {
				f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Error(err)
					return
				}
				f.WriteString("more\n")
				f.Close()
			}
		})
	}}
	ev := evaluate(t, context.Background(), fileCond("build.log"), m.target(root), opt)
	wantOutcome(t, ev, OutcomeSatisfied)
	final := "part 1\n" + strings.Repeat("more\n", appends)
	o := ev.Observation
	if reads != appends+1 || *o.Size != int64(len(final)) || o.SHA256 != digestOf(final) {
		t.Fatalf("after %d reads: observation %+v, want the finished file", reads, o)
	}
	if len(o.RefusalsSeen) != 1 || o.RefusalsSeen[0] != ReasonUnstable {
		t.Fatalf("refusals seen %q, want unstable", o.RefusalsSeen)
	}
}

// The same with a real writer racing the wait: with a digest, only the
// complete file satisfies, however the writes and reads interleave.
func TestEvaluateFileDigestOnlyWhenComplete(t *testing.T) {
	m := newFakeMonitor(t, running)
	root := t.TempDir()
	name := filepath.Join(root, "artifact.bin")
	chunk := strings.Repeat("0123456789abcdef", 4096)
	const chunks = 20
	final := strings.Repeat(chunk, chunks)
	writeFile(t, name, "")
	go func() {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		for range chunks {
			f.WriteString(chunk)
			time.Sleep(time.Millisecond)
		}
	}()
	c := Condition{Kind: KindFile, Path: "artifact.bin", SHA256: digestOf(final)}
	ev := evaluate(t, context.Background(), c, m.target(root), Options{})
	wantOutcome(t, ev, OutcomeSatisfied)
	if o := ev.Observation; *o.Size != int64(len(final)) || o.SHA256 != c.SHA256 {
		t.Fatalf("observation %+v", o)
	}
}

// A service that keeps printing wakes the wait on every write; the file is
// read again only when something towards it changed.
func TestEvaluateFileNotRereadForLogWrites(t *testing.T) {
	m := newFakeMonitor(t, running)
	root := t.TempDir()
	checks := 0
	opt := Options{checkFile: func(rootFD int, c Condition) FileObservation {
		checks++
		return CheckFile(rootFD, c)
	}}
	print := func() { m.print(t, "request served\n") }
	ev := evaluate(t, context.Background(), fileCond("ready"), m.target(root), opt,
		print, print, print,
		func() { writeFile(t, filepath.Join(root, "ready"), "yes") })
	wantOutcome(t, ev, OutcomeSatisfied)
	if checks != 2 {
		t.Fatalf("file checked %d times, want 2 (the first look, then its creation)", checks)
	}
}

// closer is a subscription that records being closed.
type closer struct{ closed bool }

func (c *closer) Close() error { c.closed = true; return nil }

// withNotices makes target take its changes from a fake guardian's notices.
func withNotices(target Target, notices chan struct{}, sub *closer) Target {
	target.Changes = func(context.Context) (<-chan struct{}, io.Closer, error) { return notices, sub, nil }
	return target
}

// With the guardian's notices a wait makes no inotify watch at all (the
// directory here does not even exist), and a notice wakes it.
func TestEvaluateWakesOnGuardianNotices(t *testing.T) {
	m := newFakeMonitor(t, running)
	target := m.target("")
	target.Dir = filepath.Join(m.dir, "no-such-directory")
	notices, sub := make(chan struct{}, 1), &closer{}
	ev := evaluate(t, context.Background(), outputCond("Listening on 8000"), withNotices(target, notices, sub), Options{},
		func() { m.print(t, "Listening"); notices <- struct{}{} },
		func() { m.print(t, " on 8000\n"); notices <- struct{}{} },
	)
	wantOutcome(t, ev, OutcomeSatisfied)
	if !sub.closed {
		t.Fatal("the subscription was not closed")
	}
}

// When the notices end without deciding the wait (the guardian is gone;
// a reconcile writes the receipt later), the wait watches the directory.
func TestEvaluateWatchesDirectoryAfterNoticesEnd(t *testing.T) {
	m := newFakeMonitor(t, running)
	notices := make(chan struct{}, 1)
	ev := evaluate(t, context.Background(), Condition{Kind: KindExit}, withNotices(m.target(""), notices, &closer{}), Options{},
		func() { close(notices) },
		func() { m.end(t, exited3) },
	)
	wantOutcome(t, ev, OutcomeSatisfied)
	if o := ev.Observation; o.ExitCode == nil || *o.ExitCode != 3 {
		t.Fatalf("observation %+v", o)
	}
}

// A failed subscription leaves the wait to the directory watch.
func TestEvaluateWithoutGuardianWatchesDirectory(t *testing.T) {
	m := newFakeMonitor(t, running)
	target := m.target("")
	target.Changes = func(context.Context) (<-chan struct{}, io.Closer, error) { return nil, nil, errors.New("no guardian") }
	ev := evaluate(t, context.Background(), outputCond("ready"), target, Options{},
		func() { m.print(t, "ready\n") },
	)
	wantOutcome(t, ev, OutcomeSatisfied)
}

// lapsingCustody is the custody of a monitor whose guardian stalled: it
// shows running until its window ends at lapses, and unverified after,
// with no file changed and no notice sent.
func lapsingCustody(lapses time.Time) func() (Custody, error) {
	return func() (Custody, error) {
		if time.Now().After(lapses) {
			return Custody{Status: "needs_reconciliation", Unverified: true, Why: "the ownership window expired"}, nil
		}
		return Custody{Status: "running", Lapses: lapses}, nil
	}
}

// A guardian that stalls renews nothing and tells nobody: the wait looks
// again when the window it saw ends, without any event or re-check.
func TestEvaluateLooksWhenCustodyLapses(t *testing.T) {
	for _, c := range []Condition{outputCond("ready"), {Kind: KindExit}, fileCond("ready")} {
		m := newFakeMonitor(t, running)
		target := m.target(t.TempDir())
		lapses := time.Now().Add(200 * time.Millisecond)
		target.Observe = lapsingCustody(lapses)
		ev := evaluate(t, context.Background(), c, target, Options{Timeout: failAfter})
		wantOutcome(t, ev, OutcomeUnavailable)
		if late := time.Since(lapses); late > failAfter/2 {
			t.Fatalf("%s: unavailable %v after the window lapsed", c.Kind, late)
		}
	}
}

// A guardian that stalls does not answer a subscription either: it is
// waited for only until its window lapses, then the wait answers.
func TestEvaluateStalledGuardianHoldsNoWait(t *testing.T) {
	for _, c := range []Condition{outputCond("ready"), {Kind: KindExit}, fileCond("ready")} {
		m := newFakeMonitor(t, running)
		target := m.target(t.TempDir())
		target.Observe = lapsingCustody(time.Now().Add(200 * time.Millisecond))
		target.Changes = func(ctx context.Context) (<-chan struct{}, io.Closer, error) {
			<-ctx.Done() // a stopped guardian answers nothing
			return nil, nil, ctx.Err()
		}
		ev := evaluate(t, context.Background(), c, target, Options{Timeout: failAfter})
		wantOutcome(t, ev, OutcomeUnavailable)
	}
}

// Output printed before the wait, and an end already reached, are answered
// from the first look: a stalled guardian, which answers no subscription,
// does not hold them until its window lapses and custody with it.
func TestEvaluateStalledGuardianHoldsNoEvidence(t *testing.T) {
	for _, tc := range []struct {
		c       Condition
		custody Custody
		outcome string
	}{
		{outputCond("ready"), running, OutcomeSatisfied},
		{Condition{Kind: KindExit}, exited3, OutcomeSatisfied},
		{outputCond("never printed"), exited3, OutcomeProcessEnded},
	} {
		m := newFakeMonitor(t, tc.custody)
		m.print(t, "ready\n")
		target := m.target("")
		if !tc.custody.Terminal {
			target.Observe = lapsingCustody(time.Now().Add(failAfter))
		}
		target.Changes = func(ctx context.Context) (<-chan struct{}, io.Closer, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		}
		ev := evaluate(t, context.Background(), tc.c, target, Options{})
		wantOutcome(t, ev, tc.outcome)
	}
}
