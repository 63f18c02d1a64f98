package state

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"procmon/internal/protocol"
)

// TestRunGrantingNoToolKeepsAList: a run created with an empty tools list
// grants nothing, and says so with [] in its answer and its record, never
// null (which the run's schema refuses); a record written as null before
// reads back as [].
func TestRunGrantingNoToolKeepsAList(t *testing.T) {
	d := openTestDir(t)
	if err := d.SaveSettings(ExampleSettings()); err != nil {
		t.Fatal(err)
	}
	r, err := d.CreateNewRun(NewRun{Tools: []string{}}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(r); !bytes.Contains(b, []byte(`"tools":[]`)) {
		t.Fatalf("new run: %s, want tools []", b)
	}
	if r.Allows(StartTool) {
		t.Fatal("a run with no tools allows start_process")
	}
	raw, err := os.ReadFile(filepath.Join(d.runDir(r.RunID), runName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"tools":[]`)) {
		t.Fatalf("stored run: %s, want tools []", raw)
	}

	if _, err := d.UpdateRun(r.RunID, func(r *Run) error { r.Tools = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	loaded, err := d.LoadRun(r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(loaded); !bytes.Contains(b, []byte(`"tools":[]`)) {
		t.Fatalf("run stored with tools null reads as %s, want tools []", b)
	}

	all, err := d.CreateNewRun(NewRun{}, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Tools) != len(Tools) {
		t.Fatalf("run without tools given grants %v, want all of %v", all.Tools, Tools)
	}
}

// TestUnknownRunIsUnknownRun: every way of reaching a run that does not
// exist says unknown_run, updating it (run end) as well as reading it.
func TestUnknownRunIsUnknownRun(t *testing.T) {
	d := openTestDir(t)
	id := "r_" + strings.Repeat("0", 26)
	if _, err := d.LoadRun(id); !protocol.HasCode(err, protocol.CodeUnknownRun) {
		t.Fatalf("load: %v, want unknown_run", err)
	}
	if _, err := d.UpdateRun(id, func(*Run) error { return nil }); !protocol.HasCode(err, protocol.CodeUnknownRun) {
		t.Fatalf("update: %v, want unknown_run", err)
	}
}
