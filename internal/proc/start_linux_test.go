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

	"procmon/internal/early"
	"procmon/internal/ids"
	"procmon/internal/state"
)

// TestMain lets startGuardian, which runs its own executable, start this
// test binary as a guardian.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == GuardianArg {
		os.Exit(RunGuardian(os.Args[2:], os.Stdin, os.Stdout))
	}
	if pid := os.Getenv(printTicksEnv); pid != "" {
		os.Exit(printTicks(pid))
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

// startTestGuardian launches a guardian for a new monitor in a new state
// directory.
func startTestGuardian(t *testing.T) (*state.Dir, string, *pendingGuardian) {
	t.Helper()
	dir, err := state.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	id := ids.NewID("m_")
	pg, err := startGuardian(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	return dir, id, pg
}

// launchByHand starts a guardian whose launcher side the test plays, and
// sends it a spec for argv (sleep by default) once the monitor's directory
// is durable.
func launchByHand(t *testing.T, argv ...string) (*state.Dir, string, *pendingGuardian) {
	t.Helper()
	dir, id, pg := startTestGuardian(t)
	pg.done = true // the test plays handoff and abandon
	t.Cleanup(func() { pg.g.Handoff.Close() })
	if <-pg.made; pg.madeErr != nil {
		t.Fatal(pg.madeErr)
	}
	spec := testSpec(dir, id)
	if len(argv) > 0 {
		spec.Argv = argv
	}
	data, err := spec.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pg.g.Spec.Write(data); err != nil {
		t.Fatal(err)
	}
	return dir, id, pg
}

// awaitOneChild returns the guardian's one child once it has spawned it.
func awaitOneChild(t *testing.T, pg *pendingGuardian) int {
	t.Helper()
	for deadline := time.Now().Add(patience); ; time.Sleep(5 * time.Millisecond) {
		if c := children(pg.g.PID); len(c) == 1 {
			return c[0]
		} else if time.Now().After(deadline) {
			t.Fatalf("the guardian has children %v, want one, %v after the slot was durable", c, patience)
		}
	}
}

// TestGuardianSpawnsOnlyOnceTheSlotIsDurable: a guardian with its spec,
// in a directory that names it (its maker), spawns nothing until the
// launcher says the command slot is durable, and a launcher that closes
// the pipe instead ends it quietly, with nothing spawned and nothing left.
func TestGuardianSpawnsOnlyOnceTheSlotIsDurable(t *testing.T) {
	dir, id, pg := launchByHand(t)
	ticks, _ := StartTicks(pg.g.PID)
	if mk, err := dir.LoadMaker(id); err != nil || mk.GuardianPID != pg.g.PID || mk.GuardianStartTicks != ticks || mk.BootID != state.BootID() {
		t.Fatalf("maker %+v (%v): want guardian %d (%d) in this boot", mk, err, pg.g.PID, ticks)
	}
	time.Sleep(100 * time.Millisecond) // time enough to spawn, were it allowed
	if c := children(pg.g.PID); len(c) > 0 {
		t.Fatalf("the guardian spawned %v before the slot was durable", c)
	}
	pg.g.Spec.Close()
	line, _ := bufio.NewReader(pg.g.Handoff).ReadBytes('\n')
	if len(line) > 0 {
		t.Errorf("an abandoned guardian answered %q", line)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pg.g.PID, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
		t.Errorf("abandoned guardian: %v, exit status %d", err, ws.ExitStatus())
	}
	if _, err := os.Stat(dir.MonitorDir(id)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the abandoned guardian left its directory: %v", err)
	}
}

// TestGuardianWaitsForDurableDirectory: once the slot is durable the
// guardian spawns the child, but it writes no record before it is told
// that the monitor's directory is durable; when the launcher closes the
// pipe instead, the child is killed and nothing is left, guardian, child
// or directory.
func TestGuardianWaitsForDurableDirectory(t *testing.T) {
	// The service leaves a grandchild that left its group: it must go too.
	dir, id, pg := launchByHand(t, "sh", "-c", "setsid sleep 1000 & exec sleep 1000")
	if _, err := pg.g.Spec.Write([]byte{slotDurable}); err != nil {
		t.Fatal(err)
	}
	child := awaitOneChild(t, pg)
	var tree []procStat
	for deadline := time.Now().Add(patience); len(tree) < 2; time.Sleep(5 * time.Millisecond) {
		if tree = scanDescendants(pg.g.PID); time.Now().After(deadline) {
			t.Fatalf("the service's tree is %v, want it and its setsid grandchild", tree)
		}
	}
	time.Sleep(50 * time.Millisecond) // time enough to write it, were it allowed
	if _, err := os.Stat(filepath.Join(dir.MonitorDir(id), state.RecordName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a record was written before the directory was durable: %v", err)
	}

	pg.g.Spec.Close()
	line, _ := bufio.NewReader(pg.g.Handoff).ReadBytes('\n')
	var h handoff
	if err := json.Unmarshal(line, &h); err != nil || h.Monitor != nil || h.Error == nil {
		t.Fatalf("handoff %q (%v): want an error", line, err)
	}
	pg.g.Wait()
	if err := unix.Kill(child, 0); err != unix.ESRCH {
		t.Errorf("child %d is still there after the start failed: %v", child, err)
	}
	for _, p := range tree {
		if Matches(p.pid, p.startTicks) {
			t.Errorf("process %d of the service's tree survived the failed start", p.pid)
			unix.Kill(p.pid, unix.SIGKILL)
		}
	}
	if _, err := os.Stat(dir.MonitorDir(id)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the failed start left its directory: %v", err)
	}
}

// TestHandoffAfterDurableDirectory runs a start through Handoff: the
// record exists when it returns, and a SIGTERM to the guardian ends
// custody with nothing left.
func TestHandoffAfterDurableDirectory(t *testing.T) {
	dir, id, pg := startTestGuardian(t)
	defer pg.abandon()
	if err := pg.send(testSpec(dir, id)); err != nil {
		t.Fatal(err)
	}
	m, err := pg.handoff()
	if err != nil {
		t.Fatal(err)
	}
	stored, err := dir.LoadMonitor(id)
	if err != nil || stored.PID != m.PID || stored.Phase != state.PhaseRunning {
		t.Fatalf("stored record %+v (%v), handed off pid %d", stored, err, m.PID)
	}
	unix.Kill(pg.g.PID, unix.SIGTERM)
	pg.g.Wait()
	if err := unix.Kill(m.PID, 0); err != unix.ESRCH {
		t.Errorf("child %d is still there after its guardian drained: %v", m.PID, err)
	}
	final, err := dir.LoadMonitor(id)
	if err != nil || final.Receipt == nil || !final.Receipt.GroupEmptyVerified {
		t.Fatalf("record after SIGTERM: %+v (%v)", final, err)
	}
}

// TestPrepareDoesTheGuardiansLookups: prepare resolves argv[0] as the
// guardian would and reads the guardian's start time; the guardian runs
// that program and its record names the guardian by that time. A program
// prepare cannot find is left for the guardian to refuse.
func TestPrepareDoesTheGuardiansLookups(t *testing.T) {
	dir, id, pg := startTestGuardian(t)
	defer pg.abandon()
	spec := testSpec(dir, id)
	pg.prepare(&spec)
	path, err := lookPath(spec.Argv[0], spec.Env, spec.Cwd)
	if err != nil {
		t.Fatal(err)
	}
	ticks, err := StartTicks(pg.g.PID)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Path != path || spec.GuardianStartTicks != ticks {
		t.Fatalf("prepare gave path %q, start time %d; want %q, %d", spec.Path, spec.GuardianStartTicks, path, ticks)
	}
	missing := Spec{Argv: []string{"no-such-program-anywhere"}, Env: spec.Env, Cwd: spec.Cwd}
	if pg.prepare(&missing); missing.Path != "" {
		t.Errorf("prepare resolved a missing program to %q", missing.Path)
	}

	if err := pg.send(spec); err != nil {
		t.Fatal(err)
	}
	m, err := pg.handoff()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		unix.Kill(pg.g.PID, unix.SIGTERM)
		pg.g.Wait()
		if err := unix.Kill(m.PID, 0); err != unix.ESRCH {
			t.Errorf("child %d is still there after its guardian drained: %v", m.PID, err)
		}
	}()
	stored, err := dir.LoadMonitor(id)
	if err != nil {
		t.Fatal(err)
	}
	if stored.GuardianPID != pg.g.PID || stored.GuardianStartTicks != ticks {
		t.Errorf("record names guardian %d started at %d, want %d at %d", stored.GuardianPID, stored.GuardianStartTicks, pg.g.PID, ticks)
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(m.PID) + "/exe")
	real, _ := filepath.EvalSymlinks(path)
	if err != nil || exe != real {
		t.Errorf("the child runs %q (%v), want %q", exe, err, real)
	}
}

// TestGuardianOutlivesItsLauncher: a launcher that dies before the
// handoff (its end of the handoff pipe closed) takes nothing with it: the
// guardian writes into the closed pipe, keeps custody, and answers a
// SIGTERM with a drained, verified receipt.
func TestGuardianOutlivesItsLauncher(t *testing.T) {
	dir, id, pg := launchByHand(t)
	pg.g.Handoff.Close()
	if _, err := pg.g.Spec.Write([]byte{slotDurable, dirDurable}); err != nil {
		t.Fatal(err)
	}
	pg.g.Spec.Close()
	var m *state.Monitor
	for deadline := time.Now().Add(patience); m == nil || m.Phase != state.PhaseRunning; time.Sleep(5 * time.Millisecond) {
		m, _ = dir.LoadMonitor(id)
		if time.Now().After(deadline) {
			t.Fatalf("no running record %v after the launcher left", patience)
		}
	}
	time.Sleep(100 * time.Millisecond) // past the handoff's write into the closed pipe
	var ws unix.WaitStatus
	if pid, err := unix.Wait4(pg.g.PID, &ws, unix.WNOHANG, nil); pid != 0 || err != nil {
		t.Fatalf("the guardian died with its launcher: %v, status %v", err, ws)
	}
	unix.Kill(pg.g.PID, unix.SIGTERM)
	if _, err := unix.Wait4(pg.g.PID, &ws, 0, nil); err != nil || !ws.Exited() {
		t.Fatalf("guardian: %v, status %v", err, ws)
	}
	final, err := dir.LoadMonitor(id)
	if err != nil || final.Receipt == nil || !final.Receipt.GroupEmptyVerified || final.Receipt.Reason != "guardian_SIGTERM" {
		t.Fatalf("record after SIGTERM: %+v (%v)", final.Receipt, err)
	}
	if err := unix.Kill(m.PID, 0); err != unix.ESRCH {
		t.Errorf("child %d is still there after its guardian drained: %v", m.PID, err)
	}
}

// TestSignalBeforeHandoffDrainsAfterIt: a SIGHUP that reaches a guardian
// with a child but no handoff yet is held until custody is handed off,
// then drains it to a receipt: never a guardian dead with its record
// written and no receipt.
func TestSignalBeforeHandoffDrainsAfterIt(t *testing.T) {
	dir, id, pg := launchByHand(t)
	if _, err := pg.g.Spec.Write([]byte{slotDurable}); err != nil {
		t.Fatal(err)
	}
	awaitOneChild(t, pg)
	unix.Kill(pg.g.PID, unix.SIGHUP)
	if _, err := pg.g.Spec.Write([]byte{dirDurable}); err != nil {
		t.Fatal(err)
	}
	pg.g.Spec.Close()
	h, err := readHandoff(bufio.NewReader(pg.g.Handoff))
	if err != nil || h.Monitor == nil {
		t.Fatalf("handoff %+v (%v): want the running record", h, err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pg.g.PID, &ws, 0, nil); err != nil || !ws.Exited() {
		t.Fatalf("guardian: %v, status %v", err, ws)
	}
	final, err := dir.LoadMonitor(id)
	if err != nil || final.Receipt == nil || final.Receipt.Reason != "guardian_SIGHUP" || !final.Receipt.GroupEmptyVerified {
		t.Fatalf("receipt after SIGHUP: %+v (%v)", final.Receipt, err)
	}
	if err := unix.Kill(h.Monitor.PID, 0); err != unix.ESRCH {
		t.Errorf("child %d is still there after its guardian drained: %v", h.Monitor.PID, err)
	}
}

// TestAdoptRefusesAnotherLaunch: a guardian launched for another
// state directory, or with an id that is not a monitor id, is not taken
// but abandoned, and gone once adoptGuardian returns.
func TestAdoptRefusesAnotherLaunch(t *testing.T) {
	dir, err := state.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ stateDir, id string }{
		{filepath.Join(t.TempDir(), "other"), ids.NewID("m_")},
		{dir.Path, "m_../../x"},
	} {
		g, err := early.LaunchGuardian(tc.stateDir, tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if pg, err := adoptGuardian(dir, g); err == nil {
			pg.abandon()
			t.Fatalf("guardian launched for %s %s was adopted for %s", tc.stateDir, tc.id, dir.Path)
		}
		// Abandoned means reaped: the pid is no longer ours.
		if err := unix.Kill(g.PID, 0); err != unix.ESRCH {
			t.Errorf("guardian %d still there after a refused adoption: %v", g.PID, err)
		}
	}
	if ids, err := dir.MonitorIDs(); err != nil || len(ids) != 0 {
		t.Errorf("monitors %v (%v), want none", ids, err)
	}
}
