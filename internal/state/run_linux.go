package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"procmon/internal/ids"
	"procmon/internal/protocol"
)

// DefaultRun is the run used when none is selected.
const DefaultRun = "default"

// Tools are the tools a run grants, all of them unless it was created
// with fewer: the five monitor tools of the seed, and execute_command
// (procmon exec), which the seed's role grants beside them.
var Tools = []string{StartTool, WaitTool, StatusTool, LogsTool, CancelTool, ExecTool}

// The tools, named as the seed names them. A command that acts on a
// monitor checks the grant of the monitor's run, the others the selected
// run's.
const (
	StartTool  = "start_process"
	WaitTool   = "wait_process"
	StatusTool = "process_status"
	LogsTool   = "process_logs"
	CancelTool = "cancel_process"
	ExecTool   = "execute_command" // procmon exec
)

// Run is one agent invocation: the settings frozen when it was created,
// its grants, its owner and whether it has ended.
type Run struct {
	RunID             string   `json:"run_id"`
	CreatedAtMs       int64    `json:"created_at_ms"`
	Policy            Settings `json:"policy"`
	Tools             []string `json:"tools"`
	NativeCheckpoints bool     `json:"native_checkpoints"`
	Owner             *Owner   `json:"owner,omitempty"`
	EndedAtMs         *int64   `json:"ended_at_ms,omitempty"`
	EndReason         string   `json:"end_reason,omitempty"`
}

// Owner identifies the process a run is bound to; the start time defeats
// pid reuse.
type Owner struct {
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
}

// Allows reports whether the run grants a tool.
func (r *Run) Allows(tool string) bool {
	for _, t := range r.Tools {
		if t == tool {
			return true
		}
	}
	return false
}

// validID reports whether id is prefix followed by 20 to 32 of [0-9a-z]:
// never a path, never anything a shell or a file system would read twice.
func validID(id, prefix string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || len(rest) < 20 || len(rest) > 32 {
		return false
	}
	for _, c := range []byte(rest) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

// ValidRunID reports whether id can name a run (and so is never a path).
func ValidRunID(id string) error {
	if id != DefaultRun && !validID(id, "r_") {
		return protocol.Errorf(protocol.CodeInvalidRequest, "run id %q is not valid: want \"default\" or r_ followed by 20 to 32 of [0-9a-z]", id).With("field", "run_id")
	}
	return nil
}

func (d *Dir) runDir(id string) string { return filepath.Join(d.Path, runsDir, id) }

const runName = "run.json"

// CreateRun durably stores a new run with a zero budget. The run is built
// in a temp directory and renamed into place, so a concurrent reader sees
// either no run or a whole one; when two creators race, one wins and the
// other gets fs.ErrExist.
func (d *Dir) CreateRun(r *Run) error {
	if err := ValidRunID(r.RunID); err != nil {
		return err
	}
	if r.Tools == nil {
		// A run that grants no tool holds an empty list: tools is an
		// array in every answer about the run, never null.
		r.Tools = []string{}
	}
	parent := filepath.Join(d.Path, runsDir)
	parentFD, err := openDir(d.Path, parent)
	if err != nil {
		return err
	}
	defer unix.Close(parentFD)
	tmpName := ids.NewID(tempPrefix + r.RunID + "-")
	if err := unix.Mkdirat(parentFD, tmpName, 0o700); err != nil {
		return fmt.Errorf("create run %s: %w", r.RunID, err)
	}
	tmp := filepath.Join(parent, tmpName)
	defer os.RemoveAll(tmp)
	if err := createBudget(d.Path, tmp, budget{}); err != nil {
		return err
	}
	if err := writeRecord(d.Path, tmp, runName, "run", r, true); err != nil {
		return err
	}
	if err := unix.Renameat(parentFD, tmpName, parentFD, r.RunID); err != nil {
		if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) {
			return fs.ErrExist
		}
		return fmt.Errorf("create run %s: %w", r.RunID, err)
	}
	if err := unix.Fsync(parentFD); err != nil {
		return fmt.Errorf("fsync directory %s: %w", parent, err)
	}
	return nil
}

// LoadRun reads a run; an unknown run is unknown_run.
func (d *Dir) LoadRun(id string) (*Run, error) {
	if err := ValidRunID(id); err != nil {
		return nil, err
	}
	var r Run
	err := readRecord(d.Path, d.runDir(id), runName, "run", &r)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, d.unknownRun(id)
	}
	if err != nil {
		return nil, err
	}
	if r.Tools == nil {
		// Written by a procmon that stored a run granting no tool as null.
		r.Tools = []string{}
	}
	return &r, nil
}

// UpdateRun applies fn to the stored run under its lock and stores it.
func (d *Dir) UpdateRun(id string, fn func(*Run) error) (*Run, error) {
	if err := ValidRunID(id); err != nil {
		return nil, err
	}
	var out *Run
	err := withLock(d.Path, d.runDir(id), func() error {
		r, err := d.LoadRun(id)
		if err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
		out = r
		return writeRecord(d.Path, d.runDir(id), runName, "run", r, true)
	})
	if errors.Is(err, fs.ErrNotExist) {
		// The run's directory, where its lock lives, is not there.
		return nil, d.unknownRun(id)
	}
	return out, err
}

func (d *Dir) unknownRun(id string) error {
	return protocol.Errorf(protocol.CodeUnknownRun, "no run %q in %s", id, d.Path).With("run_id", id)
}

// RunIDs lists the runs in the state directory, sorted.
func (d *Dir) RunIDs() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(d.Path, runsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // a state directory not made yet (Look)
	}
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if ValidRunID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	sort.Strings(ids)
	return ids, nil
}
