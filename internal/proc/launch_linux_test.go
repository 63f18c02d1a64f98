package proc

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/state"
)

// TestMain lets StartGuardian, which runs its own executable, start this
// test binary as a guardian.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == GuardianArg {
		os.Exit(RunGuardian(os.Args[2:], os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

const patience = 30 * time.Second

func testSpec(dir *state.Dir, id string) Spec {
	return Spec{
		StateDir:     dir.Path,
		MonitorID:    id,
		RunID:        state.DefaultRun,
		Argv:         []string{"sleep", "1000"},
		Cwd:          "/",
		Env:          []string{"PATH=/usr/bin:/bin"},
		OwnerGraceMs: 60000,
	}
}

// children lists the pids of pid's children.
func children(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// TestGuardianWaitsForDurableDirectory plays the launcher's side of the
// spec pipe by hand: a guardian spawns the child as soon as it has the
// spec, but writes no record before it is told that the monitor's
// directory is durable; when the launcher closes the pipe instead, the
// child is killed and nothing is left, guardian, child or directory.
func TestGuardianWaitsForDurableDirectory(t *testing.T) {
	dir, err := state.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	id := state.NewID("m_")
	pg, err := StartGuardian(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	pg.done = true // this test plays Handoff
	defer pg.handR.Close()
	<-pg.made
	if pg.madeErr != nil {
		t.Fatal(pg.madeErr)
	}
	spec := testSpec(dir, id)
	data, err := spec.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pg.specW.Write(data); err != nil {
		t.Fatal(err)
	}

	var child int
	for deadline := time.Now().Add(patience); child == 0; time.Sleep(5 * time.Millisecond) {
		if c := children(pg.pid); len(c) == 1 {
			child = c[0]
		} else if time.Now().After(deadline) {
			t.Fatalf("the guardian spawned %v, want one child, %v after its spec", c, patience)
		}
	}
	// The child runs; the guardian waits for the word on the directory.
	time.Sleep(50 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir.MonitorDir(id), state.RecordName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a record was written before the directory was durable: %v", err)
	}

	pg.specW.Close()
	line, _ := bufio.NewReader(pg.handR).ReadBytes('\n')
	var h handoff
	if err := json.Unmarshal(line, &h); err != nil || h.Monitor != nil || h.Error == nil {
		t.Fatalf("handoff %q (%v): want an error", line, err)
	}
	pg.wait()
	if err := unix.Kill(child, 0); err != unix.ESRCH {
		t.Errorf("child %d is still there after the start failed: %v", child, err)
	}
	if _, err := os.Stat(dir.MonitorDir(id)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the failed start left its directory: %v", err)
	}
}

// TestHandoffAfterDurableDirectory runs a start through Handoff: the
// record exists when it returns, and a SIGTERM to the guardian ends
// custody with nothing left.
func TestHandoffAfterDurableDirectory(t *testing.T) {
	dir, err := state.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	id := state.NewID("m_")
	pg, err := StartGuardian(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Abandon()
	m, err := pg.Handoff(testSpec(dir, id))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := dir.LoadMonitor(id)
	if err != nil || stored.PID != m.PID || stored.Phase != state.PhaseRunning {
		t.Fatalf("stored record %+v (%v), handed off pid %d", stored, err, m.PID)
	}
	unix.Kill(pg.pid, unix.SIGTERM)
	pg.wait()
	if err := unix.Kill(m.PID, 0); err != unix.ESRCH {
		t.Errorf("child %d is still there after its guardian drained: %v", m.PID, err)
	}
	final, err := dir.LoadMonitor(id)
	if err != nil || final.Receipt == nil || !final.Receipt.GroupEmptyVerified {
		t.Fatalf("record after SIGTERM: %+v (%v)", final, err)
	}
}
