package state

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"procmon/internal/ids"
	"procmon/internal/protocol"
)

// fakeInfo is a FileInfo with a chosen mode and owner, so the ownership
// rule is tested even when the tests run as root.
type fakeInfo struct {
	mode fs.FileMode
	uid  uint32
}

func (f fakeInfo) Name() string       { return "state" }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() fs.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fakeInfo) Sys() any           { return &syscall.Stat_t{Uid: f.uid} }

func TestCheckOwnership(t *testing.T) {
	const me = 1000
	cases := []struct {
		name string
		info fakeInfo
		ok   bool
	}{
		{"private dir", fakeInfo{fs.ModeDir | 0o700, me}, true},
		{"readable by others", fakeInfo{fs.ModeDir | 0o755, me}, true},
		{"group-writable", fakeInfo{fs.ModeDir | 0o770, me}, false},
		{"world-writable", fakeInfo{fs.ModeDir | 0o707, me}, false},
		{"owned by someone else", fakeInfo{fs.ModeDir | 0o700, me + 1}, false},
		{"owned by root", fakeInfo{fs.ModeDir | 0o700, 0}, false},
		{"a symlink", fakeInfo{fs.ModeSymlink | 0o777, me}, false},
		{"a file", fakeInfo{0o600, me}, false},
	}
	for _, c := range cases {
		err := CheckOwnership("/s", c.info, me)
		if (err == nil) != c.ok {
			t.Errorf("%s: got %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !protocol.HasCode(err, protocol.CodeStateUnsafe) {
			t.Errorf("%s: code of %v is not state_unsafe", c.name, err)
		}
	}
	// The advice fits the directory: a private one of the user's is made
	// private again, a shared one like /tmp is left alone.
	for _, c := range []struct {
		mode      fs.FileMode
		want, not string
	}{
		{fs.ModeDir | 0o770, "mode 0770 lets group or others write it; run: chmod 700 /s", ""},
		{fs.ModeDir | fs.ModeSticky | 0o777, "mode 1777 lets group or others write it (it is shared, like /tmp); point PROCMON_STATE_DIR at a directory of your own", "chmod"},
	} {
		err := CheckOwnership("/s", fakeInfo{c.mode, me}, me)
		if err == nil || !strings.Contains(err.Error(), c.want) || c.not != "" && strings.Contains(err.Error(), c.not) {
			t.Errorf("mode %v: got %v, want %q", c.mode, err, c.want)
		}
	}
}

func TestOpenRefusesUnsafeDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("new state dir mode %v, %v; want 0700", fi.Mode(), err)
	}
	os.Chmod(dir, 0o777)
	if _, err := Open(dir); !protocol.HasCode(err, protocol.CodeStateUnsafe) {
		t.Fatalf("world-writable dir: got %v", err)
	}
	link := filepath.Join(t.TempDir(), "link")
	os.Chmod(dir, 0o700)
	os.Symlink(dir, link)
	if _, err := Open(link); !protocol.HasCode(err, protocol.CodeStateUnsafe) {
		t.Fatalf("symlinked dir: got %v", err)
	}
}

// Look makes nothing: a state directory that is not there reads as
// empty, and one that is there is checked as Open checks it.
func TestLookMakesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	d, err := Look(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := d.MonitorIDs(); err != nil || len(ids) != 0 {
		t.Errorf("monitors %v, %v: want none", ids, err)
	}
	if ids, err := d.RunIDs(); err != nil || len(ids) != 0 {
		t.Errorf("runs %v, %v: want none", ids, err)
	}
	if _, err := d.LoadMonitor("m_" + "aaaaaaaaaaaaaaaaaaaaaaaaaa"); !protocol.HasCode(err, protocol.CodeUnknownMonitor) {
		t.Errorf("load a monitor: got %v, want unknown_monitor", err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Look made the state directory: %v", err)
	}

	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	if _, err := Look(dir); !protocol.HasCode(err, protocol.CodeStateUnsafe) {
		t.Fatalf("world-writable dir: got %v", err)
	}
	os.Chmod(dir, 0o700)
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(dir, link)
	if _, err := Look(link); !protocol.HasCode(err, protocol.CodeStateUnsafe) {
		t.Fatalf("symlinked dir: got %v", err)
	}
}

func TestRecordChecksum(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	id := "m_" + "abcdefghijklmnopqrstuvwxyz"
	if err := d.CreateMonitorDir(id, Maker{}); err != nil {
		t.Fatal(err)
	}
	m := &Monitor{MonitorID: id, RunID: DefaultRun, Argv: []string{"x"}, PID: 6, Phase: PhaseRunning}
	f, err := d.OpenFirstRecord(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SaveFirstMonitor(f, m); err != nil {
		t.Fatal(err)
	}
	if got, err := d.LoadMonitor(id); err != nil || got.PID != 6 {
		t.Fatalf("load the first record: %+v, %v", got, err)
	}
	m.PID = 7
	if err := d.SaveMonitor(m, true); err != nil {
		t.Fatal(err)
	}
	got, err := d.LoadMonitor(id)
	if err != nil || got.PID != 7 {
		t.Fatalf("load: %+v, %v", got, err)
	}
	path := filepath.Join(d.MonitorDir(id), RecordName)
	data, _ := os.ReadFile(path)
	for i := range data {
		damaged := append([]byte(nil), data...)
		damaged[i] ^= 0x01
		os.WriteFile(path, damaged, 0o600)
		if m, err := d.LoadMonitor(id); err == nil && m.PID == 7 && m.MonitorID == id {
			// A flip inside insignificant whitespace or key spelling the
			// decoder cannot see would still need the checksum to differ.
			t.Fatalf("byte %d flipped: record still trusted", i)
		}
	}
	entries, _ := os.ReadDir(d.MonitorDir(id))
	for _, e := range entries {
		if isTemp(e.Name()) {
			t.Fatalf("temp file left behind: %s", e.Name())
		}
	}
}

func TestMonitorIDNeverAPath(t *testing.T) {
	for _, id := range []string{"", "m_", "../m_aaaaaaaaaaaaaaaaaaaaaaaa", "m_aaaaaaaaaaaaaaaaaaaa/..", "m_AAAAAAAAAAAAAAAAAAAAAAAA", "m_aaaaaaaaaaaaaaaaaaa", "m_" + string(make([]byte, 26))} {
		if ValidMonitorID(id) == nil {
			t.Errorf("%q accepted", id)
		}
	}
	if err := ValidMonitorID(ids.NewID("m_")); err != nil {
		t.Errorf("NewID: %v", err)
	}
}

// A monitor directory is removed only while it holds no record: once the
// running handoff is durable, the record is the evidence reconcile needs.
func TestRemoveMonitorDirKeepsARecord(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	started, recorded := ids.NewID("m_"), ids.NewID("m_")
	for _, id := range []string{started, recorded} {
		if err := d.CreateMonitorDir(id, Maker{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.SaveMonitor(&Monitor{MonitorID: recorded, RunID: DefaultRun, Phase: PhaseRunning}, true); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{started, recorded} {
		if err := d.RemoveMonitorDir(id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(d.MonitorDir(started)); !os.IsNotExist(err) {
		t.Errorf("directory without a record: %v, want it removed", err)
	}
	if _, err := d.LoadMonitor(recorded); err != nil {
		t.Errorf("directory with a record was removed: %v", err)
	}
	if ids, _ := d.MonitorIDs(); len(ids) != 1 || ids[0] != recorded {
		t.Errorf("monitors left: %v, want only %s", ids, recorded)
	}
}

// A foreground command's trace keeps its escaped sessions beside its
// maker: none until some are saved, and the trace goes whole with them.
func TestTraceEscapes(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	id := ids.NewID("m_")
	if err := d.CreateMonitorDir(id, Maker{GuardianPID: 2, Session: 3}); err != nil {
		t.Fatal(err)
	}
	if e, err := d.LoadTraceEscapes(id); err != nil || len(e.EscapedSessions) != 0 {
		t.Fatalf("a new trace's escapes: %+v, %v; want none", e, err)
	}
	want := &TraceEscapes{EscapedSessions: []EscapedSession{{SID: 7, Witnesses: []Witness{{PID: 7, StartTicks: 70}, {PID: 8, StartTicks: 71}}}}, EscapedSessionsTruncated: true}
	if err := d.SaveTraceEscapes(id, want); err != nil {
		t.Fatal(err)
	}
	got, err := d.LoadTraceEscapes(id)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("escapes read back: %+v, %v; want %+v", got, err, want)
	}
	if _, err := d.LoadMonitor(id); !protocol.HasCode(err, protocol.CodeUnknownMonitor) {
		t.Errorf("a trace with escapes reads as a monitor: %v", err)
	}
	if err := d.RemoveMonitorDir(id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.MonitorDir(id)); !os.IsNotExist(err) {
		t.Errorf("trace with escapes: %v, want it removed", err)
	}
}

// The first record is written over the temp file made with the directory:
// padded to its size when it fits, grown when it does not.
func TestFirstRecordOfAnySize(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	for _, argLen := range []int{1, firstRecordSize} {
		id := ids.NewID("m_")
		if err := d.CreateMonitorDir(id, Maker{}); err != nil {
			t.Fatal(err)
		}
		if err := d.SyncMonitorDir(id); err != nil {
			t.Fatal(err)
		}
		arg := strings.Repeat("a", argLen)
		f, err := d.OpenFirstRecord(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.SaveFirstMonitor(f, &Monitor{MonitorID: id, RunID: DefaultRun, Argv: []string{arg}, Phase: PhaseRunning}); err != nil {
			t.Fatal(err)
		}
		got, err := d.LoadMonitor(id)
		if err != nil || len(got.Argv) != 1 || got.Argv[0] != arg {
			t.Fatalf("argument of %d bytes: load %v", argLen, err)
		}
		fi, err := os.Stat(filepath.Join(d.MonitorDir(id), RecordName))
		if err != nil {
			t.Fatal(err)
		}
		if argLen < 100 && fi.Size() != firstRecordSize {
			t.Errorf("small first record is %d bytes, want padded to %d", fi.Size(), firstRecordSize)
		}
		if argLen >= firstRecordSize && fi.Size() <= firstRecordSize {
			t.Errorf("large first record is %d bytes: cut to the temp file's size", fi.Size())
		}
		if entries, _ := os.ReadDir(d.MonitorDir(id)); len(entries) != 2 || entries[0].Name() != CustodyName || entries[1].Name() != RecordName {
			t.Errorf("directory holds %v after the first record, want only %s and %s: the temp file is renamed", entries, CustodyName, RecordName)
		}
	}
}
