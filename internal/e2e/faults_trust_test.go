//go:build faultpoints

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"procmon/internal/state"
)

// TestFaultsPlantedGuardianLog plants the guardian's own log while the
// guardian is stopped between its first record and its handoff, just
// before it opens that log: as a hard link to a file outside the state
// directory, and as a symbolic link to one. The guardian writes through
// neither (its stderr is let go), keeps custody, and the file outside is
// untouched. Opened by its path, the hard link took the guardian's stderr
// to the file outside.
func TestFaultsPlantedGuardianLog(t *testing.T) {
	plants := map[string]func(outside, path string) error{
		"hard link": os.Link,
		"symlink":   os.Symlink,
	}
	for name, plant := range plants {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			l := newFaultLab(t, 30, 20)
			outside := filepath.Join(t.TempDir(), "outside")
			const text = "a file of the user's\n"
			if err := os.WriteFile(outside, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			c := l.command("guardian:after_record", "start", "--", "sleeper")
			end := l.background(c)
			guardian := guardianOf(t, c.Process.Pid)
			if err := awaitStopped(guardian); err != nil {
				t.Fatal(err)
			}
			ids := l.monitors()
			if len(ids) != 1 {
				t.Fatalf("monitors %v: want the one recorded", ids)
			}
			path := filepath.Join((&state.Dir{Path: l.state}).MonitorDir(ids[0]), state.GuardianLogName)
			if err := plant(outside, path); err != nil {
				t.Fatal(err)
			}
			unix.Kill(guardian, unix.SIGCONT)
			if r, _ := end(); r.Get("status").String() != state.StatusRunning {
				t.Fatalf("start answered %s: want running", r.Raw)
			}

			fd2 := filepath.Join("/proc", strconv.Itoa(guardian), "fd", "2")
			if got, err := os.Readlink(fd2); err != nil || got != os.DevNull {
				t.Errorf("the guardian's stderr is %q (%v), want %s", got, err, os.DevNull)
			}
			if fi, err := os.Stat(fd2); err == nil {
				if out, err := os.Stat(outside); err == nil && os.SameFile(fi, out) {
					t.Errorf("the guardian's stderr is the file outside the state directory")
				}
			}
			if s := l.status(ids[0]).Get("status").String(); s != state.StatusRunning {
				t.Errorf("status %q: want running", s)
			}
			l.settle()
			if b, err := os.ReadFile(outside); err != nil || !bytes.Equal(b, []byte(text)) {
				t.Errorf("the file outside now holds %q (%v)", b, err)
			}
		})
	}
}
