package proc

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"time"

	"procmon/internal/protocol"
	"procmon/internal/state"
	"procmon/internal/wait"
)

// WaitTarget is monitor m of dir as a wait sees it, and logs --follow:
// its log, its custody at each look (now is the clock the custody is
// judged by) and the guardian's change notices.
func WaitTarget(dir *state.Dir, m *state.Monitor, now func() time.Time) wait.Target {
	id := m.MonitorID
	return wait.Target{
		Dir:     dir.MonitorDir(id),
		OpenLog: func() (*os.File, error) { return dir.OpenLog(m) },
		Observe: func() (wait.Custody, error) {
			o, err := Observe(dir, id)
			if err != nil {
				return wait.Custody{}, err
			}
			return CustodyOf(o, now()), nil
		},
		Changes: func(ctx context.Context) (<-chan struct{}, io.Closer, error) {
			return WatchChanges(ctx, dir, m)
		},
	}
}

// HoldFiles readies t for cond, a file condition on m: cond is checked
// against the run's rules, and files are read beneath the root the
// guardian has held since the start, never by the path (see wait.Target).
func HoldFiles(t *wait.Target, dir *state.Dir, m *state.Monitor, cond wait.Condition) error {
	rules, err := fileRules(dir, m)
	if err != nil {
		return err
	}
	if err := cond.Validate(rules); err != nil {
		return err
	}
	t.RootPath = m.Cwd
	t.HoldRoot = func(ctx context.Context) (int, error) { return ComponentRoot(ctx, dir, m) }
	return nil
}

// fileRules are what a file condition on m is checked against, lexically.
// Root and state directory are resolved, so that a state directory
// reached through a symlinked path is still recognized beneath the root.
// A root whose path no longer resolves (renamed or deleted since the
// start) is checked as recorded: the wait itself then answers unavailable
// without reading anything.
func fileRules(dir *state.Dir, m *state.Monitor) (wait.Rules, error) {
	root, err := filepath.EvalSymlinks(m.Cwd)
	if err != nil {
		root = filepath.Clean(m.Cwd)
	}
	stateDir, err := filepath.EvalSymlinks(dir.Path)
	if err != nil {
		return wait.Rules{}, protocol.Errorf(protocol.CodeInternal, "state directory: %w", err)
	}
	r, err := dir.LoadRun(m.RunID)
	if err != nil {
		return wait.Rules{}, err
	}
	return wait.Rules{Root: root, StateDir: stateDir, PrivatePaths: r.Policy.Private()}, nil
}

// CustodyOf is what a wait, or a follow of the logs, needs of an
// observation at now. A receipt whose custody could not be proven ends
// nothing a wait can rely on.
// Custody without a receipt lapses at the end of the ownership window the
// record shows: Observe says when a running monitor is past it, and the
// same rule holds of a settling one here, whose guardian set its window
// to cover the whole drain (a guardian stopped while it drains answers
// nothing and writes nothing, and a wait must not wait for it forever).
func CustodyOf(o *Observation, now time.Time) wait.Custody {
	c := wait.Custody{
		Status:      o.Status,
		Terminal:    o.Terminal(),
		OutputEnded: o.OutputEnded(),
		Unverified:  o.Status == state.StatusNeedsReconciliation,
		Why:         o.Why,
	}
	if r := o.Monitor.Receipt; r != nil {
		c.Reason, c.ExitCode, c.Signal = r.Reason, r.ExitCode, r.Signal
		if r.Custody == state.CustodyUnverified {
			c.Terminal, c.Unverified = false, true
			c.Why = "reconcile could not prove custody of its group"
		}
	}
	if c.Terminal || c.Unverified {
		return c
	}
	// On the clock windows are judged by; now's monotonic reading keeps
	// Lapses on it too.
	switch left := o.Monitor.WindowLeftMs(nowMs(), state.MonoNowMs()); {
	case left >= 0:
		c.Lapses = now.Add(time.Duration(left+1) * time.Millisecond)
	case o.Status == state.StatusSettling:
		c.Unverified = true
		c.Why = "the ownership window expired while the guardian settled, without a receipt"
	}
	// A running monitor past its recorded window is one whose live
	// guardian told Observe it holds custody but could not store its
	// heartbeat: the re-check looks again.
	return c
}
