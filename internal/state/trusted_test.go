package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"unsafe"

	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
)

// The trust rules, with any uid: the tests run as root in CI, where a
// file of another user cannot be planted without privileges to drop.
func TestCheckEntry(t *testing.T) {
	const me = 1000
	cases := []struct {
		name string
		st   unix.Stat_t
		want entryKind
		ok   bool
	}{
		{"private file", unix.Stat_t{Mode: unix.S_IFREG | 0o600, Uid: me, Nlink: 1}, kindFile, true},
		{"readable file", unix.Stat_t{Mode: unix.S_IFREG | 0o644, Uid: me, Nlink: 1}, kindFile, true},
		{"private dir", unix.Stat_t{Mode: unix.S_IFDIR | 0o700, Uid: me, Nlink: 2}, kindDir, true},
		{"group-writable file", unix.Stat_t{Mode: unix.S_IFREG | 0o620, Uid: me, Nlink: 1}, kindFile, false},
		{"world-writable file", unix.Stat_t{Mode: unix.S_IFREG | 0o606, Uid: me, Nlink: 1}, kindFile, false},
		{"world-writable dir", unix.Stat_t{Mode: unix.S_IFDIR | 0o777, Uid: me, Nlink: 2}, kindDir, false},
		{"sticky world-writable dir", unix.Stat_t{Mode: unix.S_IFDIR | 0o1777, Uid: me, Nlink: 2}, kindDir, false},
		{"file of another user", unix.Stat_t{Mode: unix.S_IFREG | 0o600, Uid: me + 1, Nlink: 1}, kindFile, false},
		{"file of root", unix.Stat_t{Mode: unix.S_IFREG | 0o600, Uid: 0, Nlink: 1}, kindFile, false},
		{"dir of another user", unix.Stat_t{Mode: unix.S_IFDIR | 0o700, Uid: me + 1, Nlink: 2}, kindDir, false},
		{"hard-linked file", unix.Stat_t{Mode: unix.S_IFREG | 0o600, Uid: me, Nlink: 2}, kindFile, false},
		{"FIFO for a file", unix.Stat_t{Mode: unix.S_IFIFO | 0o600, Uid: me, Nlink: 1}, kindFile, false},
		{"socket for a file", unix.Stat_t{Mode: unix.S_IFSOCK | 0o600, Uid: me, Nlink: 1}, kindFile, false},
		{"device for a file", unix.Stat_t{Mode: unix.S_IFCHR | 0o600, Uid: me, Nlink: 1}, kindFile, false},
		{"dir for a file", unix.Stat_t{Mode: unix.S_IFDIR | 0o700, Uid: me, Nlink: 2}, kindFile, false},
		{"file for a dir", unix.Stat_t{Mode: unix.S_IFREG | 0o600, Uid: me, Nlink: 1}, kindDir, false},
		{"symlink", unix.Stat_t{Mode: unix.S_IFLNK | 0o777, Uid: me, Nlink: 1}, kindFile, false},
	}
	for _, c := range cases {
		err := checkEntry("/s/x", &c.st, me, c.want)
		if (err == nil) != c.ok {
			t.Errorf("%s: got %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && (!protocol.HasCode(err, protocol.CodeStateUnsafe) || protocol.AsError(err).Details["path"] != "/s/x") {
			t.Errorf("%s: %v is not state_unsafe naming the path", c.name, err)
		}
	}
}

// outsideWatch records every access to a directory outside the state
// directory: an open, a read, a write, a new entry.
type outsideWatch struct {
	fd  int
	dir string
}

func watchOutside(t *testing.T, dir string) *outsideWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_ALL_EVENTS); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return &outsideWatch{fd, dir}
}

// touched lists what happened in the directory since the last call.
func (w *outsideWatch) touched() []string {
	var out []string
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(w.fd, buf)
		if n <= 0 || err != nil {
			return out
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafePointer(&buf[off]))
			name := bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], "\x00")
			out = append(out, fmt.Sprintf("%s: mask %#x", filepath.Join(w.dir, string(name)), ev.Mask))
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// bounded runs op, failing the test if it has not returned within a
// generous bound (a FIFO that was opened blocks forever), and returns its
// error and how long it took.
func bounded(t *testing.T, what string, op func() error) (error, time.Duration) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case err := <-done:
		return err, time.Since(start)
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not return within 20s: it is blocked on what was planted", what)
		return nil, 0
	}
}

// trustFixture is a state directory with settings, a run, two monitors
// with records and output logs, and a directory outside it holding the
// files that planted links point to.
type trustFixture struct {
	d           *Dir
	outside     string
	bad, good   string // monitor ids
	outsideFile string // a valid record and log text, outside
}

const outsideText = "OUTSIDE-THE-STATE-DIRECTORY"

func newTrustFixture(t *testing.T) *trustFixture {
	t.Helper()
	base := t.TempDir()
	d, err := Open(filepath.Join(base, "state"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SaveSettings(ExampleSettings()); err != nil {
		t.Fatal(err)
	}
	if err := d.CreateRun(&Run{RunID: DefaultRun, Tools: Tools}); err != nil {
		t.Fatal(err)
	}
	f := &trustFixture{d: d, outside: filepath.Join(base, "outside"),
		bad: "m_" + "aaaaaaaaaaaaaaaaaaaaaaaaaa", good: "m_" + "bbbbbbbbbbbbbbbbbbbbbbbbbb"}
	for _, id := range []string{f.bad, f.good} {
		if err := os.Mkdir(d.MonitorDir(id), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := d.SaveMonitor(&Monitor{MonitorID: id, RunID: DefaultRun, Argv: []string{"x"}, Phase: PhaseRunning}, false); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d.MonitorDir(id), LogName), []byte("inside\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(f.outside, 0o700); err != nil {
		t.Fatal(err)
	}
	// The outside file is a valid record of the bad monitor, so only the
	// link, never the content, can give it away.
	rec, _ := os.ReadFile(filepath.Join(d.MonitorDir(f.bad), RecordName))
	f.outsideFile = filepath.Join(f.outside, "planted")
	if err := os.WriteFile(f.outsideFile, append(rec, outsideText...), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// closed closes what an open under test opened, and returns its error.
func closed(f *os.File, err error) error {
	if err == nil {
		f.Close()
	}
	return err
}

// A plant replaces one entry of the state directory.
type plant func(t *testing.T, f *trustFixture, path string)

func replaceWith(t *testing.T, path string, make func() error) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := make(); err != nil {
		t.Fatal(err)
	}
}

var filePlants = map[string]plant{
	"symlink out": func(t *testing.T, f *trustFixture, path string) {
		replaceWith(t, path, func() error { return os.Symlink(f.outsideFile, path) })
	},
	"dangling symlink out": func(t *testing.T, f *trustFixture, path string) {
		replaceWith(t, path, func() error { return os.Symlink(filepath.Join(f.outside, "new"), path) })
	},
	"FIFO": func(t *testing.T, f *trustFixture, path string) {
		replaceWith(t, path, func() error { return unix.Mkfifo(path, 0o600) })
	},
	"hard link out": func(t *testing.T, f *trustFixture, path string) {
		replaceWith(t, path, func() error { return os.Link(f.outsideFile, path) })
	},
	"directory": func(t *testing.T, f *trustFixture, path string) {
		replaceWith(t, path, func() error { return os.Mkdir(path, 0o700) })
	},
	"world-writable": func(t *testing.T, f *trustFixture, path string) {
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			os.WriteFile(path, nil, 0o600)
		}
		if err := os.Chmod(path, 0o666); err != nil {
			t.Fatal(err)
		}
	},
	"another user's": func(t *testing.T, f *trustFixture, path string) {
		if os.Geteuid() != 0 {
			t.Skip("planting a file of another user needs root")
		}
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			os.WriteFile(path, nil, 0o600)
		}
		if err := os.Lchown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	},
}

// sparse8G is a plant only records get: the size bound is theirs.
func sparse8G(t *testing.T, f *trustFixture, path string) {
	replaceWith(t, path, func() error {
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			return err
		}
		return os.Truncate(path, 8<<30)
	})
}

// Every file procmon reads or writes in the state directory, planted in
// every way: each use is refused with state_unsafe or state_corrupt naming
// the path, in bounded time, without touching anything outside, and the
// other monitor still reads.
func TestPlantedFilesAreRefused(t *testing.T) {
	type target struct {
		path   func(f *trustFixture) string
		record bool // a record: also planted as an 8 GiB sparse file
		uses   map[string]func(f *trustFixture) error
	}
	rec := func(f *trustFixture) string { return filepath.Join(f.d.MonitorDir(f.bad), RecordName) }
	targets := map[string]target{
		"settings.json": {func(f *trustFixture) string { return filepath.Join(f.d.Path, settingsName) }, true, map[string]func(f *trustFixture) error{
			"load": func(f *trustFixture) error { _, _, err := f.d.LoadSettings(); return err },
		}},
		"run.json": {func(f *trustFixture) string { return filepath.Join(f.d.runDir(DefaultRun), runName) }, true, map[string]func(f *trustFixture) error{
			"load": func(f *trustFixture) error { _, err := f.d.LoadRun(DefaultRun); return err },
			"update": func(f *trustFixture) error {
				_, err := f.d.UpdateRun(DefaultRun, func(*Run) error { return nil })
				return err
			},
		}},
		"budget": {func(f *trustFixture) string { return budgetPath(f.d.runDir(DefaultRun)) }, true, map[string]func(f *trustFixture) error{
			"take": func(f *trustFixture) error { _, err := f.d.TakeOrdinal(DefaultRun, nil, nil); return err },
			"used": func(f *trustFixture) error { _, err := f.d.BudgetUsed(DefaultRun); return err },
		}},
		"record.json": {rec, true, map[string]func(f *trustFixture) error{
			"load": func(f *trustFixture) error { _, err := f.d.LoadMonitor(f.bad); return err },
			"update": func(f *trustFixture) error {
				_, err := f.d.UpdateMonitor(f.bad, func(*Monitor) error { return nil })
				return err
			},
		}},
		"output.log": {func(f *trustFixture) string { return filepath.Join(f.d.MonitorDir(f.bad), LogName) }, false, map[string]func(f *trustFixture) error{
			"window": func(f *trustFixture) error {
				w, err := f.d.ReadLogWindow(&Monitor{MonitorID: f.bad}, nil, 1<<20, true)
				if err == nil && bytes.Contains([]byte(w.Text), []byte(outsideText)) {
					t.Errorf("the log window shows the outside file")
				}
				return err
			},
			"append": func(f *trustFixture) error { return closed(f.d.OpenLogForAppend(f.bad)) },
		}},
		"guardian.log": {func(f *trustFixture) string { return filepath.Join(f.d.MonitorDir(f.bad), GuardianLogName) }, false, map[string]func(f *trustFixture) error{
			"open": func(f *trustFixture) error { return closed(f.d.OpenGuardianLog(f.bad)) },
		}},
		"monitor lock": {func(f *trustFixture) string { return filepath.Join(f.d.MonitorDir(f.bad), lockName) }, false, map[string]func(f *trustFixture) error{
			"lock": func(f *trustFixture) error { return f.d.WithMonitorLock(f.bad, func() error { return nil }) },
			"update": func(f *trustFixture) error {
				_, err := f.d.UpdateMonitor(f.bad, func(*Monitor) error { return nil })
				return err
			},
		}},
		"run lock": {func(f *trustFixture) string { return filepath.Join(f.d.runDir(DefaultRun), lockName) }, false, map[string]func(f *trustFixture) error{
			"take": func(f *trustFixture) error { _, err := f.d.TakeOrdinal(DefaultRun, nil, nil); return err },
		}},
		"settings lock": {func(f *trustFixture) string { return filepath.Join(f.d.Path, lockName) }, false, map[string]func(f *trustFixture) error{
			"save": func(f *trustFixture) error { return f.d.SaveSettings(ExampleSettings()) },
		}},
	}
	var slowest time.Duration
	var slowestWhat string
	for tname, tg := range targets {
		plants := map[string]plant{}
		for k, v := range filePlants {
			plants[k] = v
		}
		if tg.record {
			plants["8 GiB sparse"] = sparse8G
		}
		for pname, p := range plants {
			for uname, use := range tg.uses {
				what := fmt.Sprintf("%s/%s/%s", tname, pname, uname)
				t.Run(what, func(t *testing.T) {
					f := newTrustFixture(t)
					path := tg.path(f)
					p(t, f, path)
					watch := watchOutside(t, f.outside)
					err, took := bounded(t, what, func() error { return use(f) })
					if took > slowest {
						slowest, slowestWhat = took, what
					}
					pe := protocol.AsError(err)
					if err == nil || (pe.Code != protocol.CodeStateUnsafe && pe.Code != protocol.CodeStateCorrupt) {
						t.Fatalf("got %v, want state_unsafe or state_corrupt", err)
					}
					if pe.Details["path"] != path && pe.Details["path"] != filepath.Dir(path) {
						t.Errorf("%v names %v, not %s", err, pe.Details["path"], path)
					}
					if touched := watch.touched(); len(touched) > 0 {
						t.Errorf("outside the state directory was touched: %v", touched)
					}
					if _, err := f.d.LoadMonitor(f.good); err != nil && tname != "settings.json" && tname != "run.json" && tname != "budget" && tname != "run lock" && tname != "settings lock" {
						t.Errorf("the other monitor no longer reads: %v", err)
					}
				})
			}
		}
	}
	t.Logf("slowest refusal: %v (%s)", slowest, slowestWhat)
}

// Every directory on the way, planted: a link out, a FIFO or a file in
// its place, or group- or world-writable.
func TestPlantedDirectoriesAreRefused(t *testing.T) {
	dirs := map[string]func(f *trustFixture) string{
		"runs":        func(f *trustFixture) string { return filepath.Join(f.d.Path, runsDir) },
		"monitors":    func(f *trustFixture) string { return filepath.Join(f.d.Path, monitorsDir) },
		"run dir":     func(f *trustFixture) string { return f.d.runDir(DefaultRun) },
		"monitor dir": func(f *trustFixture) string { return f.d.MonitorDir(f.bad) },
	}
	plants := map[string]plant{
		"symlink out": func(t *testing.T, f *trustFixture, path string) {
			copyDir := filepath.Join(f.outside, "copy")
			if err := os.Rename(path, copyDir); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(copyDir, path); err != nil {
				t.Fatal(err)
			}
		},
		"FIFO": func(t *testing.T, f *trustFixture, path string) {
			replaceWith(t, path, func() error { return unix.Mkfifo(path, 0o600) })
		},
		"file": func(t *testing.T, f *trustFixture, path string) {
			replaceWith(t, path, func() error { return os.WriteFile(path, nil, 0o600) })
		},
		"world-writable": func(t *testing.T, f *trustFixture, path string) {
			if err := os.Chmod(path, 0o777); err != nil {
				t.Fatal(err)
			}
		},
		"group-writable": func(t *testing.T, f *trustFixture, path string) {
			if err := os.Chmod(path, 0o770); err != nil {
				t.Fatal(err)
			}
		},
		"another user's": func(t *testing.T, f *trustFixture, path string) {
			if os.Geteuid() != 0 {
				t.Skip("planting a directory of another user needs root")
			}
			if err := os.Lchown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		},
	}
	uses := map[string]func(f *trustFixture) error{
		"open":         func(f *trustFixture) error { _, err := Open(f.d.Path); return err },
		"look":         func(f *trustFixture) error { _, err := Look(f.d.Path); return err },
		"load run":     func(f *trustFixture) error { _, err := f.d.LoadRun(DefaultRun); return err },
		"take":         func(f *trustFixture) error { _, err := f.d.TakeOrdinal(DefaultRun, nil, nil); return err },
		"load monitor": func(f *trustFixture) error { _, err := f.d.LoadMonitor(f.bad); return err },
		"save monitor": func(f *trustFixture) error { return f.d.SaveMonitor(&Monitor{MonitorID: f.bad}, false) },
		"read log": func(f *trustFixture) error {
			_, err := f.d.ReadLogWindow(&Monitor{MonitorID: f.bad}, nil, 100, true)
			return err
		},
		"create run": func(f *trustFixture) error { return f.d.CreateRun(&Run{RunID: "r_" + "cccccccccccccccccccccccccc"}) },
		"hold monitor dir": func(f *trustFixture) error {
			fd, err := f.d.OpenMonitorDir(f.bad)
			if err == nil {
				unix.Close(fd)
			}
			return err
		},
		"guardian log": func(f *trustFixture) error { return closed(f.d.OpenGuardianLog(f.bad)) },
	}
	// Which uses go through which directory.
	through := map[string][]string{
		"runs":        {"open", "look", "load run", "take", "create run"},
		"monitors":    {"open", "look", "load monitor", "save monitor", "read log", "hold monitor dir", "guardian log"},
		"run dir":     {"load run", "take"},
		"monitor dir": {"load monitor", "save monitor", "read log", "hold monitor dir", "guardian log"},
	}
	for dname, dpath := range dirs {
		for pname, p := range plants {
			for _, uname := range through[dname] {
				what := fmt.Sprintf("%s/%s/%s", dname, pname, uname)
				t.Run(what, func(t *testing.T) {
					f := newTrustFixture(t)
					p(t, f, dpath(f))
					watch := watchOutside(t, f.outside)
					err, _ := bounded(t, what, func() error { return uses[uname](f) })
					if !protocol.HasCode(err, protocol.CodeStateUnsafe) {
						t.Fatalf("got %v, want state_unsafe", err)
					}
					if pname == "symlink out" && !strings.Contains(err.Error(), "it is a symbolic link") {
						t.Errorf("%v does not say it is a link", err)
					}
					if touched := watch.touched(); len(touched) > 0 {
						t.Errorf("outside the state directory was touched: %v", touched)
					}
				})
			}
		}
	}
}

// A planted monitor entry is listed, so that reading it says what is
// wrong, and the others still read.
func TestPlantedMonitorIsListed(t *testing.T) {
	f := newTrustFixture(t)
	mdir := f.d.MonitorDir(f.bad)
	if err := os.RemoveAll(mdir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.outside, mdir); err != nil {
		t.Fatal(err)
	}
	ids, err := f.d.MonitorIDs()
	if err != nil || len(ids) != 2 {
		t.Fatalf("ids %v, %v; want both monitors", ids, err)
	}
	if _, err := f.d.LoadMonitor(f.bad); !protocol.HasCode(err, protocol.CodeStateUnsafe) {
		t.Fatalf("planted monitor: %v, want state_unsafe", err)
	}
	if _, err := f.d.LoadMonitor(f.good); err != nil {
		t.Fatalf("the other monitor: %v", err)
	}
}

func unsafePointer(b *byte) unsafe.Pointer { return unsafe.Pointer(b) }
