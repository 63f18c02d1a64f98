package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"procmon/internal/protocol"
)

func newTestRun(t *testing.T) (*Dir, string) {
	t.Helper()
	d, err := Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CreateRun(&Run{RunID: DefaultRun, Tools: Tools}); err != nil {
		t.Fatal(err)
	}
	return d, budgetPath(d.runDir(DefaultRun))
}

// slotCounts decodes each slot of the budget file on its own: -1 for a
// damaged slot.
func slotCounts(t *testing.T, path string) [slotCount]int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != slotSize*slotCount {
		t.Fatalf("budget file is %d bytes, want %d", len(data), slotSize*slotCount)
	}
	var out [slotCount]int64
	for i := range out {
		var b budget
		if decodeRecord(path, "budget", bytes.TrimRight(data[i*slotSize:(i+1)*slotSize], "\n"), &b) != nil {
			out[i] = -1
			continue
		}
		out[i] = b.Used
	}
	return out
}

func TestBudgetWritesAlternateSlots(t *testing.T) {
	d, path := newTestRun(t)
	if got := slotCounts(t, path); got != [2]int64{0, 0} {
		t.Fatalf("new budget slots %v, want [0 0]", got)
	}
	want := [][2]int64{{0, 1}, {2, 1}, {2, 3}, {4, 3}}
	for i, w := range want {
		n, err := d.TakeOrdinal(DefaultRun, nil, nil)
		if err != nil || n != int64(i+1) {
			t.Fatalf("take %d: got %d, %v", i+1, n, err)
		}
		// Each write leaves the previous count intact in the other slot.
		if got := slotCounts(t, path); got != w {
			t.Fatalf("after take %d: slots %v, want %v", i+1, got, w)
		}
	}
	if used, err := d.BudgetUsed(DefaultRun); err != nil || used != 4 {
		t.Fatalf("used %d, %v; want 4", used, err)
	}
}

func TestBudgetTornSlotBurnsAnOrdinal(t *testing.T) {
	d, path := newTestRun(t)
	for range 3 {
		if _, err := d.TakeOrdinal(DefaultRun, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A crash in the middle of writing ordinal 4 to slot 0 (which held 2).
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Only the sector holding the checksum reached the disk.
	slot, _ := encodeBudgetSlot(budget{Used: 4})
	f.WriteAt(slot[40:60], 40)
	f.Close()
	if got := slotCounts(t, path); got != [2]int64{-1, 3} {
		t.Fatalf("torn slots %v, want [-1 3]", got)
	}
	// The torn slot cannot say whether 4 was handed out: it counts as used.
	if used, err := d.BudgetUsed(DefaultRun); err != nil || used != 4 {
		t.Fatalf("used after a torn write: %d, %v; want 4", used, err)
	}
	// 4 is burnt into the torn slot, then 5 taken in the other.
	if n, err := d.TakeOrdinal(DefaultRun, nil, nil); err != nil || n != 5 {
		t.Fatalf("take after a torn write: %d, %v; want 5", n, err)
	}
	if got := slotCounts(t, path); got != [2]int64{4, 5} {
		t.Fatalf("slots %v, want [4 5]", got)
	}
}

// damageSlot is one way a slot's page can be damaged: by a torn write, by
// the medium, or by hand.
type damageSlot func(t *testing.T, slot []byte)

var slotDamages = map[string]damageSlot{
	"torn write of the next count": func(t *testing.T, slot []byte) {
		next, _ := encodeBudgetSlot(budget{Used: 99})
		copy(slot[:len(slot)/2], next)
		copy(slot[40:60], next[40:60])
	},
	"bit flipped in the count": func(t *testing.T, slot []byte) {
		i := bytes.Index(slot, []byte(`"used":`))
		slot[i+7] ^= 0x01
	},
	"bit flipped in the checksum": func(t *testing.T, slot []byte) {
		i := bytes.Index(slot, []byte(`"checksum":"`))
		slot[i+12] ^= 0x01
	},
	"zeroed":    func(t *testing.T, slot []byte) { clear(slot) },
	"blank":     func(t *testing.T, slot []byte) { copy(slot, bytes.Repeat([]byte{'\n'}, len(slot))) },
	"garbage":   func(t *testing.T, slot []byte) { copy(slot, bytes.Repeat([]byte("\xff{"), len(slot)/2)) },
	"half gone": func(t *testing.T, slot []byte) { clear(slot[len(slot)/3:]) },
	"another kind of record": func(t *testing.T, slot []byte) {
		rec, _ := encodeRecord("run", budget{Used: 1})
		copy(slot, bytes.Repeat([]byte{'\n'}, len(slot)))
		copy(slot, rec)
	},
	"another schema": func(t *testing.T, slot []byte) {
		slot[bytes.Index(slot, []byte(`"schema":`))+9] = '7'
	},
	"a negative count": func(t *testing.T, slot []byte) {
		bad, _ := encodeBudgetSlot(budget{Used: -2})
		copy(slot, bad)
	},
	"a count past any start": func(t *testing.T, slot []byte) {
		bad, _ := encodeBudgetSlot(budget{Used: 1<<63 - 1})
		copy(slot, bad)
	},
}

// One damaged slot never hands out an ordinal twice: whichever slot is
// damaged (the newest or the older), in whichever way, the next ordinals
// are new ones, or the budget is refused as state_corrupt.
func TestBudgetDamagedSlotNeverRepeatsAnOrdinal(t *testing.T) {
	for name, damage := range slotDamages {
		for _, taken := range []int{2, 3} { // slot 0, then slot 1 holds the newest
			for damaged := range slotCount {
				t.Run(fmt.Sprintf("%s/%d taken/slot %d", name, taken, damaged), func(t *testing.T) {
					d, path := newTestRun(t)
					handed := map[int64]bool{}
					for range taken {
						n, err := d.TakeOrdinal(DefaultRun, nil, nil)
						if err != nil {
							t.Fatal(err)
						}
						handed[n] = true
					}
					data, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					damage(t, data[damaged*slotSize:(damaged+1)*slotSize])
					if err := os.WriteFile(path, data, 0o600); err != nil {
						t.Fatal(err)
					}
					if used, err := d.BudgetUsed(DefaultRun); err == nil && used < int64(taken) {
						t.Fatalf("used %d after %d ordinals were handed out", used, taken)
					} else if err != nil && !protocol.HasCode(err, protocol.CodeStateCorrupt) {
						t.Fatalf("used: %v; want a count or state_corrupt", err)
					}
					for range 3 {
						n, err := d.TakeOrdinal(DefaultRun, nil, nil)
						if protocol.HasCode(err, protocol.CodeStateCorrupt) {
							return
						}
						if err != nil {
							t.Fatal(err)
						}
						if handed[n] || n <= int64(taken) {
							t.Fatalf("ordinal %d handed out again (had %v)", n, handed)
						}
						handed[n] = true
					}
					// Once the damaged slot is written over, the budget is
					// whole again and goes on one by one.
					if got := slotCounts(t, path); got[0] < 0 || got[1] < 0 || got[0]-got[1] > 1 || got[1]-got[0] > 1 {
						t.Fatalf("slots after recovery %v", got)
					}
				})
			}
		}
	}
}

// Two valid slots that no sequence of starts leaves (a slot rewritten by
// hand with a valid checksum) are not guessed between: state_corrupt.
func TestBudgetInconsistentSlotsAreRefused(t *testing.T) {
	d, path := newTestRun(t)
	for range 3 {
		if _, err := d.TakeOrdinal(DefaultRun, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	far, _ := encodeBudgetSlot(budget{Used: 9})
	f.WriteAt(far, 0) // slots [9 3]
	f.Close()
	before, _ := os.ReadFile(path)
	if n, err := d.TakeOrdinal(DefaultRun, nil, nil); !protocol.HasCode(err, protocol.CodeStateCorrupt) {
		t.Fatalf("take: %d, %v; want state_corrupt", n, err)
	}
	if _, err := d.BudgetUsed(DefaultRun); !protocol.HasCode(err, protocol.CodeStateCorrupt) {
		t.Fatalf("used: %v; want state_corrupt", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a refused budget was written to")
	}
}

func TestBudgetDamagedIsNeverTrusted(t *testing.T) {
	cases := map[string]func(path string) error{
		"both slots damaged": func(path string) error {
			return os.WriteFile(path, bytes.Repeat([]byte("x"), slotSize*slotCount), 0o600)
		},
		"truncated": func(path string) error { return os.Truncate(path, slotSize) },
		"grown":     func(path string) error { return os.Truncate(path, slotSize*slotCount+1) },
		"empty":     func(path string) error { return os.Truncate(path, 0) },
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			d, path := newTestRun(t)
			if err := damage(path); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			if n, err := d.TakeOrdinal(DefaultRun, nil, nil); !protocol.HasCode(err, protocol.CodeStateCorrupt) {
				t.Fatalf("take: %d, %v; want state_corrupt", n, err)
			}
			_, err := d.BudgetUsed(DefaultRun)
			if !protocol.HasCode(err, protocol.CodeStateCorrupt) {
				t.Fatalf("used: %v; want state_corrupt", err)
			}
			// It says what is wrong in words: an empty budget said
			// "cannot be read: EOF".
			if strings.Contains(err.Error(), "EOF") {
				t.Errorf("used: %v", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Fatal("a damaged budget was written to")
			}
		})
	}
}

func TestBudgetLimitWritesNothing(t *testing.T) {
	d, path := newTestRun(t)
	limit := int64(2)
	for want := int64(1); want <= limit; want++ {
		if n, err := d.TakeOrdinal(DefaultRun, &limit, nil); err != nil || n != want {
			t.Fatalf("take: %d, %v; want %d", n, err, want)
		}
	}
	before, _ := os.ReadFile(path)
	if _, err := d.TakeOrdinal(DefaultRun, &limit, nil); !protocol.HasCode(err, protocol.CodeCommandBudgetExhausted) {
		t.Fatalf("past the limit: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a refused take wrote the budget")
	}
}

// A run made before the two-slot budget keeps its count: its first start
// migrates it, and the legacy file goes.
func TestLegacyBudgetIsMigrated(t *testing.T) {
	d, path := newTestRun(t)
	dir := d.runDir(DefaultRun)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := writeRecord(d.Path, dir, legacyBudgetName, "budget", budget{Used: 5}, true); err != nil {
		t.Fatal(err)
	}
	if used, err := d.BudgetUsed(DefaultRun); err != nil || used != 5 {
		t.Fatalf("used before migration: %d, %v; want 5", used, err)
	}
	limit := int64(6)
	if n, err := d.TakeOrdinal(DefaultRun, &limit, nil); err != nil || n != 6 {
		t.Fatalf("first take after the upgrade: %d, %v; want 6", n, err)
	}
	if _, err := d.TakeOrdinal(DefaultRun, &limit, nil); !protocol.HasCode(err, protocol.CodeCommandBudgetExhausted) {
		t.Fatalf("past the limit after migration: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, legacyBudgetName)); !os.IsNotExist(err) {
		t.Fatalf("legacy budget left: %v", err)
	}
	if got := slotCounts(t, path); got != [2]int64{5, 6} {
		t.Fatalf("migrated slots %v, want [5 6]", got)
	}
}

// whileSyncing sees the ordinal that is returned, already written; an
// error from it is TakeOrdinal's, and the ordinal is used up all the same.
func TestTakeOrdinalWhileSyncing(t *testing.T) {
	d, path := newTestRun(t)
	var seen int64
	n, err := d.TakeOrdinal(DefaultRun, nil, func(ordinal int64) error {
		seen = ordinal
		if got := slotCounts(t, path); got[1] != ordinal {
			t.Errorf("ordinal %d not yet written when whileSyncing runs: slots %v", ordinal, got)
		}
		return nil
	})
	if err != nil || n != 1 || seen != 1 {
		t.Fatalf("take: %d, %v; whileSyncing saw %d", n, err, seen)
	}
	refused := errors.New("the launcher could not send the spec")
	if _, err := d.TakeOrdinal(DefaultRun, nil, func(int64) error { return refused }); err != refused {
		t.Fatalf("whileSyncing's error: got %v", err)
	}
	if n, err := d.TakeOrdinal(DefaultRun, nil, nil); err != nil || n != 3 {
		t.Fatalf("take after a failed one: %d, %v; want 3", n, err)
	}
}
