package state

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
)

// The command budget is the one record written on every start before
// anything is spawned, so it is stored for the cheapest durable write:
// an overwrite in place of blocks that already exist, made durable with
// fdatasync, which (unlike a new file renamed into place) commits no
// file system metadata.
//
// Overwriting in place is safe because the file holds two slots, each a
// whole checksummed record in its own page, and a write always goes to the
// slot that does not hold the newest count. A write torn by a crash
// damages only that slot: the other still holds the count before it, and
// that write had not returned, so no ordinal was ever handed out from it.
const (
	budgetName = "budget"
	slotSize   = 4096
	slotCount  = 2
)

// budget is a run's durable command-ordinal counter.
type budget struct {
	Used int64 `json:"used"`
}

// encodeBudgetSlot is one slot: the checksummed record padded with
// newlines to the slot's size.
func encodeBudgetSlot(b budget) ([]byte, error) {
	rec, err := encodeRecord("budget", b)
	if err != nil {
		return nil, err
	}
	if len(rec) > slotSize {
		return nil, fmt.Errorf("budget record of %d bytes does not fit its slot", len(rec))
	}
	slot := bytes.Repeat([]byte{'\n'}, slotSize)
	copy(slot, rec)
	return slot, nil
}

// createBudget writes a new budget file with the count in both slots and
// fsyncs it; the caller makes its directory entry durable.
func createBudget(dir string, b budget) error {
	slot, err := encodeBudgetSlot(b)
	if err != nil {
		return err
	}
	return writeFileAtomic(dir, budgetName, bytes.Repeat(slot, slotCount), true)
}

// readBudget returns the newest valid count in f and the slot to write
// the next one to (the other slot). Only when no slot is valid is the
// budget state_corrupt.
func readBudget(f *os.File) (b budget, next int64, err error) {
	data := make([]byte, slotSize*slotCount+1)
	n, err := io.ReadFull(f, data)
	if err != io.ErrUnexpectedEOF {
		if err == nil {
			err = errors.New("longer than its two slots")
		}
		return b, 0, protocol.Errorf(protocol.CodeStateCorrupt, "read budget %s: %v", f.Name(), err).With("path", f.Name())
	}
	if n != slotSize*slotCount {
		return b, 0, protocol.Errorf(protocol.CodeStateCorrupt, "budget %s is %d bytes, want %d; it is not trusted", f.Name(), n, slotSize*slotCount).With("path", f.Name())
	}
	newest := -1
	var firstErr error
	for i := range slotCount {
		var s budget
		raw := bytes.TrimRight(data[i*slotSize:(i+1)*slotSize], "\n")
		if err := decodeRecord(fmt.Sprintf("%s (slot %d)", f.Name(), i), "budget", raw, &s); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if newest < 0 || s.Used > b.Used {
			b, newest = s, i
		}
	}
	if newest < 0 {
		return b, 0, firstErr
	}
	return b, int64((newest+1)%slotCount) * slotSize, nil
}

// budgetPath is the budget file of the run directory dir.
func budgetPath(dir string) string { return filepath.Join(dir, budgetName) }

// TakeOrdinal durably takes the run's next command ordinal, or fails with
// command_budget_exhausted past limit (nil: no limit). The flock makes
// concurrent starts from many processes take distinct ordinals.
//
// whileSyncing, unless nil, is called with the ordinal once it is taken
// and before it is durable, under the run's lock: what it sends ahead
// must not act on the ordinal until TakeOrdinal has returned it. Its
// error is TakeOrdinal's; the ordinal is then used up all the same.
func (d *Dir) TakeOrdinal(id string, limit *int64, whileSyncing func(ordinal int64) error) (int64, error) {
	var ordinal int64
	dir := d.runDir(id)
	err := withLock(dir, func() error {
		if err := migrateLegacyBudget(dir); err != nil {
			return err
		}
		f, err := os.OpenFile(budgetPath(dir), os.O_RDWR, 0)
		if err != nil {
			return protocol.Errorf(protocol.CodeStateCorrupt, "open budget of run %s: %w", id, err).With("run_id", id)
		}
		defer f.Close()
		b, next, err := readBudget(f)
		if err != nil {
			return err
		}
		if limit != nil && b.Used >= *limit {
			return protocol.Errorf(protocol.CodeCommandBudgetExhausted, "run %s has used %d of %d command slots; start a new run (procmon run new) for more", id, b.Used, *limit).
				With("run_id", id).With("used", b.Used).With("command_limit", *limit)
		}
		b.Used++
		slot, err := encodeBudgetSlot(b)
		if err != nil {
			return err
		}
		if _, err := f.WriteAt(slot, next); err != nil {
			return fmt.Errorf("write budget of run %s: %w", id, err)
		}
		if whileSyncing != nil {
			if err := whileSyncing(b.Used); err != nil {
				return err
			}
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return fmt.Errorf("fdatasync budget of run %s: %w", id, err)
		}
		ordinal = b.Used
		return nil
	})
	return ordinal, err
}

// legacyBudgetName is the budget of runs made before the two-slot file:
// one record, replaced whole on every start.
const legacyBudgetName = "budget.json"

// migrateLegacyBudget turns a run's legacy budget into the two-slot file
// with the same count, durably, before the legacy file goes. The caller
// holds the run's lock, so no start takes a slot meanwhile.
func migrateLegacyBudget(dir string) error {
	legacy := filepath.Join(dir, legacyBudgetName)
	if _, err := os.Lstat(budgetPath(dir)); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var b budget
	if err := readRecord(legacy, "budget", &b); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // neither file: the open that follows says so
		}
		return err
	}
	if err := createBudget(dir, b); err != nil {
		return err
	}
	if err := os.Remove(legacy); err != nil {
		return fmt.Errorf("remove the legacy budget of %s: %w", dir, err)
	}
	return syncDir(dir)
}

// BudgetUsed reports how many command slots a run has used.
func (d *Dir) BudgetUsed(id string) (int64, error) {
	f, err := os.Open(budgetPath(d.runDir(id)))
	if errors.Is(err, fs.ErrNotExist) {
		// A run from before the two-slot file, not migrated yet: its first
		// start migrates it.
		var b budget
		if err := readRecord(filepath.Join(d.runDir(id), legacyBudgetName), "budget", &b); err == nil {
			return b.Used, nil
		}
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, err
		}
		return 0, protocol.Errorf(protocol.CodeStateCorrupt, "open budget of run %s: %w", id, err).With("run_id", id)
	}
	defer f.Close()
	b, _, err := readBudget(f)
	return b.Used, err
}
