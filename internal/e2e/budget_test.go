package e2e

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentStartsNeverExceedBudget races 30 starts from 30 processes
// against a command limit of 10: exactly 10 start, with ordinals 1 to 10.
func TestConcurrentStartsNeverExceedBudget(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	storeSettings(t, procmon, hostSettings{graceSeconds: 30, maxOutputBytes: 1000000, commandLimit: 10})
	const starts = 30
	type result struct {
		out  []byte
		exit int
	}
	results := make([]result, starts)
	var wg sync.WaitGroup
	for i := range starts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := procmon("start")
			c.Stdin = strings.NewReader(`{"request": {"argv": ["sleeper"]}}`)
			var out bytes.Buffer
			c.Stdout = &out
			c.Run()
			results[i] = result{out.Bytes(), c.ProcessState.ExitCode()}
		}()
	}
	wg.Wait()

	var ordinals []int
	var ids []string
	for _, r := range results {
		var resp struct {
			MonitorID      string `json:"monitor_id"`
			CommandOrdinal int    `json:"command_ordinal"`
			Error          *struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.out, &resp); err != nil {
			t.Fatalf("start printed %q: %v", r.out, err)
		}
		switch {
		case resp.Error == nil && r.exit == 0:
			ordinals = append(ordinals, resp.CommandOrdinal)
			ids = append(ids, resp.MonitorID)
		case resp.Error != nil && resp.Error.Code == "command_budget_exhausted" && r.exit == 3:
		default:
			t.Errorf("unexpected start result: exit %d %s", r.exit, r.out)
		}
	}
	sort.Ints(ordinals)
	want := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if len(ordinals) != len(want) {
		t.Fatalf("%d starts succeeded, want 10 (ordinals %v)", len(ordinals), ordinals)
	}
	for i := range want {
		if ordinals[i] != want[i] {
			t.Fatalf("ordinals %v, want %v", ordinals, want)
		}
	}
	for _, id := range ids {
		if out, err := procmon("cancel", id).CombinedOutput(); err != nil || !bytes.Contains(out, []byte(`"group_empty_verified":true`)) {
			t.Errorf("cancel %s: %v %s", id, err, out)
		}
	}
	assertNothingLeft(t, stateDir)
}
