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
// damages only that slot: the other still holds the count before it.
//
// A damaged slot cannot say what it held. Torn by a crash, it held the
// count being written, whose ordinal was never handed out; damaged later,
// it may have held the newest count, whose ordinal was. So a damaged slot
// is taken to have held one more than the other slot: that ordinal is
// burnt (written into the damaged slot, durably, before the next one is
// taken), never handed out again. Two valid slots always differ by at
// most one; any other pair, or a count no start could reach, is
// state_corrupt.
const (
	budgetName = "budget"
	slotSize   = 4096
	slotCount  = 2
	budgetSize = slotSize * slotCount
)

// maxOrdinal is far above any command_limit and far from overflowing.
const maxOrdinal = 1 << 53

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

// createBudget writes a new budget file in dir, inside the state
// directory root, with the count in both slots and fsyncs it; the caller
// makes its directory entry durable.
func createBudget(root, dir string, b budget) error {
	slot, err := encodeBudgetSlot(b)
	if err != nil {
		return err
	}
	return writeFileAtomic(root, dir, budgetName, bytes.Repeat(slot, slotCount), true)
}

// budgetState is what the two slots of a budget say.
type budgetState struct {
	// used is the count to go on from: every ordinal up to it may have
	// been handed out.
	used int64
	// next is the offset of the slot the next count goes to.
	next int64
	// burn, when set, is the offset of a damaged slot that must hold used
	// (durably) before another ordinal is taken.
	burn *int64
}

// readBudget reads the two slots of f and says where to go on from; a
// budget that cannot be trusted is state_corrupt.
func readBudget(f *os.File) (budgetState, error) {
	corrupt := func(format string, args ...any) error {
		return protocol.Errorf(protocol.CodeStateCorrupt, "budget %s %s; it is not trusted. Inspect or remove the run by hand", f.Name(), fmt.Sprintf(format, args...)).With("path", f.Name())
	}
	data := make([]byte, budgetSize+1)
	n, err := io.ReadFull(f, data)
	if err != io.ErrUnexpectedEOF {
		if err == nil {
			return budgetState{}, corrupt("is longer than its two slots")
		}
		if err == io.EOF {
			return budgetState{}, corrupt("is empty, want %d bytes", budgetSize)
		}
		return budgetState{}, corrupt("cannot be read: %v", err)
	}
	if n != budgetSize {
		return budgetState{}, corrupt("is %d bytes, want %d", n, budgetSize)
	}
	var slots [slotCount]*budget
	var firstErr error
	for i := range slotCount {
		var s budget
		raw := bytes.TrimRight(data[i*slotSize:(i+1)*slotSize], "\n")
		err := decodeRecord(fmt.Sprintf("%s (slot %d)", f.Name(), i), "budget", raw, &s)
		if err == nil && (s.Used < 0 || s.Used > maxOrdinal) {
			err = corrupt("slot %d holds the count %d, which no start reaches", i, s.Used)
		}
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		slots[i] = &s
	}
	a, b := slots[0], slots[1]
	switch {
	case a == nil && b == nil:
		return budgetState{}, firstErr
	case a != nil && b != nil:
		if d := a.Used - b.Used; d < -1 || d > 1 {
			return budgetState{}, corrupt("holds %d and %d in its slots, which no sequence of starts leaves", a.Used, b.Used)
		}
		// The newer slot is the larger; on a tie (a new budget) slot 0.
		if b.Used > a.Used {
			return budgetState{used: b.Used, next: 0}, nil
		}
		return budgetState{used: a.Used, next: slotSize}, nil
	}
	valid, damaged := int64(0), int64(slotSize)
	good := a
	if a == nil {
		valid, damaged, good = slotSize, 0, b
	}
	// The damaged slot may have held good.Used+1, already handed out: it
	// is burnt into that slot, and the next count goes to the other.
	return budgetState{used: good.Used + 1, next: valid, burn: &damaged}, nil
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
	if err := ValidRunID(id); err != nil {
		return 0, err
	}
	var ordinal int64
	dir := d.runDir(id)
	err := withLock(d.Path, dir, func() error {
		if err := d.migrateLegacyBudget(dir); err != nil {
			return err
		}
		// Under the run's lock, which ending the run takes too: a start
		// either takes its slot before the run ends, and its monitor is
		// drained by the end, or is refused.
		if r, err := d.LoadRun(id); err != nil {
			return err
		} else if r.EndedAtMs != nil {
			return protocol.Errorf(protocol.CodeRunEnded, "run %s has ended and starts nothing more", id).With("run_id", id)
		}
		f, err := openFile(d.Path, dir, budgetName, unix.O_RDWR, 0, budgetSize)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return protocol.Errorf(protocol.CodeStateCorrupt, "run %s has no budget file in %s; it is not trusted", id, dir).With("run_id", id)
			}
			return err
		}
		defer f.Close()
		st, err := readBudget(f)
		if err != nil {
			return err
		}
		if limit != nil && st.used >= *limit {
			return BudgetExhausted(id, st.used, *limit)
		}
		if st.burn != nil {
			if err := writeBudgetSlot(f, id, budget{Used: st.used}, *st.burn); err != nil {
				return err
			}
			if err := unix.Fdatasync(int(f.Fd())); err != nil {
				return fmt.Errorf("fdatasync budget of run %s: %w", id, err)
			}
		}
		b := budget{Used: st.used + 1}
		if err := writeBudgetSlot(f, id, b, st.next); err != nil {
			return err
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

// writeBudgetSlot writes b into the slot at offset off of f.
func writeBudgetSlot(f *os.File, id string, b budget, off int64) error {
	slot, err := encodeBudgetSlot(b)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(slot, off); err != nil {
		return fmt.Errorf("write budget of run %s: %w", id, err)
	}
	return nil
}

// legacyBudgetName is the budget of runs made before the two-slot file:
// one record, replaced whole on every start.
const legacyBudgetName = "budget.json"

// migrateLegacyBudget turns a run's legacy budget into the two-slot file
// with the same count, durably, before the legacy file goes. The caller
// holds the run's lock, so no start takes a slot meanwhile.
func (d *Dir) migrateLegacyBudget(dir string) error {
	if f, err := openFile(d.Path, dir, budgetName, unix.O_RDONLY, 0, budgetSize); !errors.Is(err, fs.ErrNotExist) {
		if err == nil {
			f.Close()
		}
		return nil // the open that follows says what is wrong with it
	}
	var b budget
	if err := readRecord(d.Path, dir, legacyBudgetName, "budget", &b); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // neither file: the open that follows says so
		}
		return err
	}
	if err := createBudget(d.Path, dir, b); err != nil {
		return err
	}
	if err := removeTrusted(d.Path, dir, legacyBudgetName); err != nil {
		return fmt.Errorf("remove the legacy budget of %s: %w", dir, err)
	}
	return syncTrusted(d.Path, dir)
}

// BudgetExhausted is the refusal of a command in run id, which has used
// used of its limit command slots.
func BudgetExhausted(id string, used, limit int64) error {
	return protocol.Errorf(protocol.CodeCommandBudgetExhausted, "run %s has used %d of %d command slots", id, used, limit).
		With("run_id", id).With("used", used).With("command_limit", limit)
}

// BudgetUsed reports how many command slots a run has used.
func (d *Dir) BudgetUsed(id string) (int64, error) {
	if err := ValidRunID(id); err != nil {
		return 0, err
	}
	dir := d.runDir(id)
	f, err := openFile(d.Path, dir, budgetName, unix.O_RDONLY, 0, budgetSize)
	if errors.Is(err, fs.ErrNotExist) {
		// A run from before the two-slot file, not migrated yet: its first
		// start migrates it.
		var b budget
		if err := readRecord(d.Path, dir, legacyBudgetName, "budget", &b); err == nil {
			return b.Used, nil
		}
		return 0, err
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := readBudget(f)
	return st.used, err
}
