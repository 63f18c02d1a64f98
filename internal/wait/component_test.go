//go:build linux

package wait

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// componentSetup makes a component root "comp" beside a directory
// "elsewhere" that holds the file a wait looks for, as an attacker would
// lay them out.
func componentSetup(t *testing.T) (comp, elsewhere string) {
	t.Helper()
	base := t.TempDir()
	comp, elsewhere = filepath.Join(base, "comp"), filepath.Join(base, "elsewhere")
	writeFile(t, filepath.Join(comp, "keep"), "")
	writeFile(t, filepath.Join(elsewhere, "ready.json"), `{"ready": true}`)
	return comp, elsewhere
}

// wantComponentRefused fails unless the wait was refused for reason
// without reading a file.
func wantComponentRefused(t *testing.T, ev Evidence, outcome, reason string) {
	t.Helper()
	wantOutcome(t, ev, outcome)
	if o := ev.Observation; o.Refusal != reason || o.SHA256 != "" || o.Size != nil || o.Why == "" || !contains(o.RefusalsSeen, reason) {
		t.Fatalf("observation %+v; want refusal %q with no file read", o, reason)
	}
}

// The attacks on the component root after the start: each is noticed by
// a wait that began before it, and by one that begins after, and no file
// from elsewhere is ever read.
func TestEvaluateFileComponentSwapped(t *testing.T) {
	attacks := []struct {
		name   string
		reason string
		attack func(t *testing.T, comp, elsewhere string)
	}{
		{"renamed", ReasonComponentMoved, func(t *testing.T, comp, _ string) {
			mustRename(t, comp, comp+".moved")
		}},
		{"renamed, a symlink in its place", ReasonComponentReplaced, func(t *testing.T, comp, elsewhere string) {
			mustRename(t, comp, comp+".moved")
			if err := os.Symlink(elsewhere, comp); err != nil {
				t.Fatal(err)
			}
		}},
		{"renamed, another directory in its place", ReasonComponentReplaced, func(t *testing.T, comp, elsewhere string) {
			mustRename(t, comp, comp+".moved")
			mustRename(t, elsewhere, comp)
		}},
		{"deleted", ReasonComponentDeleted, func(t *testing.T, comp, _ string) {
			if err := os.RemoveAll(comp); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			// A wait that holds the root when the attack comes.
			comp, elsewhere := componentSetup(t)
			m := newFakeMonitor(t, running)
			ev := evaluate(t, context.Background(), fileCond("ready.json"), m.target(comp), Options{Timeout: failAfter},
				func() { a.attack(t, comp, elsewhere) })
			wantComponentRefused(t, ev, OutcomeUnavailable, a.reason)

			// A wait that begins after it, with the root held since the
			// start: the guardian's descriptor.
			comp, elsewhere = componentSetup(t)
			fd, err := OpenRoot(comp)
			if err != nil {
				t.Fatal(err)
			}
			a.attack(t, comp, elsewhere)
			target := m.target(comp)
			target.HoldRoot = func(context.Context) (int, error) { return fd, nil }
			ev = evaluate(t, context.Background(), fileCond("ready.json"), target, Options{Timeout: failAfter})
			wantComponentRefused(t, ev, OutcomeUnavailable, a.reason)
		})
	}
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// A component renamed back in place of a look-alike is the same directory
// again: the held root is what counts, not the path.
func TestEvaluateFileComponentStillInPlace(t *testing.T) {
	comp, _ := componentSetup(t)
	writeFile(t, filepath.Join(comp, "ready.json"), "yes")
	m := newFakeMonitor(t, running)
	ev := evaluate(t, context.Background(), fileCond("ready.json"), m.target(comp), Options{Timeout: failAfter})
	wantOutcome(t, ev, OutcomeSatisfied)
}

// Without a root held since the start, no file is read: unavailable while
// the monitor runs, process_ended once it has ended (there is no guardian
// left to prove the root), with the reason named.
func TestEvaluateFileRootUnproven(t *testing.T) {
	comp, _ := componentSetup(t)
	writeFile(t, filepath.Join(comp, "ready.json"), "yes")

	m := newFakeMonitor(t, running)
	target := m.target(comp)
	target.HoldRoot = func(context.Context) (int, error) { return -1, errors.New("no guardian answers") }
	ev := evaluate(t, context.Background(), fileCond("ready.json"), target, Options{Timeout: failAfter})
	wantComponentRefused(t, ev, OutcomeUnavailable, ReasonComponentUnproven)

	held := false
	ended := newFakeMonitor(t, exited3)
	target = ended.target(comp)
	target.HoldRoot = func(context.Context) (int, error) { held = true; return OpenRoot(comp) }
	ev = evaluate(t, context.Background(), fileCond("ready.json"), target, Options{})
	wantComponentRefused(t, ev, OutcomeProcessEnded, ReasonComponentUnproven)
	if held || ev.Observation.ExitCode == nil || *ev.Observation.ExitCode != 3 {
		t.Fatalf("ended monitor: root asked for %v, observation %+v", held, ev.Observation)
	}
}

// A guardian that does not hand the root over before the wait's timeout
// makes the wait time out, not refuse.
func TestEvaluateFileRootLate(t *testing.T) {
	comp, _ := componentSetup(t)
	m := newFakeMonitor(t, running)
	target := m.target(comp)
	target.HoldRoot = func(ctx context.Context) (int, error) { <-ctx.Done(); return -1, ctx.Err() }
	ev := evaluate(t, context.Background(), fileCond("ready.json"), target, Options{Timeout: 100 * time.Millisecond})
	wantOutcome(t, ev, OutcomeTimeout)
}
