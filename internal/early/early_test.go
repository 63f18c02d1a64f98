package early

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain runs this test binary, started as "__guardian" or "start" by
// the tests below, as the process init prepared: it reports what init
// did before main and exits.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case GuardianArg:
			os.Exit(fakeGuardian())
		case "start":
			os.Exit(fakeStart())
		}
	}
	os.Exit(m.Run())
}

// fakeGuardian says whether the signals were being caught before main,
// then proves that a SIGTERM to itself is caught rather than fatal, then
// waits for its stdin to close, as a guardian waits for its spec.
func fakeGuardian() int {
	fmt.Println("caught before main:", catching.Load())
	s := CatchSignals()
	<-s.TerminationCaught
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case sig := <-s.Termination:
		fmt.Println("received", sig)
	case <-time.After(30 * time.Second):
		fmt.Println("SIGTERM never arrived")
		return 3
	}
	<-s.AllCaught
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// fakeStart reports the guardian init launched, if any, with its command
// line, then abandons it.
func fakeStart() int {
	g := TakeLaunched()
	if g == nil {
		fmt.Println("no guardian")
		return 0
	}
	if TakeLaunched() != nil {
		fmt.Println("taken twice")
		return 3
	}
	// The launcher returns once the exec is under way, a moment before the
	// kernel has set the new command line.
	var cmdline []byte
	for deadline := time.Now().Add(30 * time.Second); len(cmdline) == 0; time.Sleep(time.Millisecond) {
		var err error
		if cmdline, err = os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", g.PID)); err != nil || time.Now().After(deadline) {
			fmt.Println("no command line:", err)
			return 3
		}
	}
	fmt.Printf("guardian %q\n", strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00"))
	g.Abandon()
	// Abandon waited: the pid is no longer ours, not even a zombie.
	if err := syscall.Kill(g.PID, 0); !errors.Is(err, syscall.ESRCH) {
		fmt.Println("guardian still there after Abandon:", err)
		return 3
	}
	return 0
}

// rerun runs this test binary with args and env and returns its output.
func rerun(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out.Bytes())
	}
	return out.String()
}

func TestGuardianCatchesSignalsFromInit(t *testing.T) {
	out := rerun(t, nil, GuardianArg, "/nowhere", "m_x")
	for _, want := range []string{"caught before main: true", "received terminated"} {
		if !strings.Contains(out, want) {
			t.Errorf("guardian said %q, want %q in it", out, want)
		}
	}
}

func TestStartLaunchesGuardianFromInit(t *testing.T) {
	made := t.TempDir()
	if err := os.Mkdir(filepath.Join(made, "monitors"), 0o700); err != nil {
		t.Fatal(err)
	}
	launched := regexp.MustCompile(`^guardian \["procmon" "__guardian" "` + regexp.QuoteMeta(made) + `" "m_[0-9a-z]{26}"\]\n$`)
	for _, tc := range []struct {
		name     string
		stateDir string
		args     []string
		launch   bool
	}{
		{"a start", made, []string{"start", "--", "sleep", "1"}, true},
		{"a start with flags", made, []string{"start", "--name", "web", "--", "sleep", "--help"}, true},
		{"a start that asks for help", made, []string{"start", "--name", "web", "--help"}, false},
		{"a start that asks for help, short", made, []string{"start", "-h"}, false},
		{"a state directory not made yet", filepath.Join(made, "new"), []string{"start", "--", "sleep", "1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := rerun(t, []string{"PROCMON_STATE_DIR=" + tc.stateDir}, tc.args...)
			if tc.launch && !launched.MatchString(out) {
				t.Errorf("said %q, want a guardian launched for %s", out, made)
			}
			if !tc.launch && out != "no guardian\n" {
				t.Errorf("said %q, want no guardian", out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(made, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a state directory was made before main: %v", err)
	}
}

func TestStateDir(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
		err  error
	}{
		{map[string]string{"PROCMON_STATE_DIR": "/s/./x/", "XDG_STATE_HOME": "/x", "HOME": "/h"}, "/s/x", nil},
		{map[string]string{"PROCMON_STATE_DIR": "rel/s"}, filepath.Join(wd, "rel/s"), nil},
		{map[string]string{"XDG_STATE_HOME": "/x", "HOME": "/h"}, "/x/procmon", nil},
		{map[string]string{"XDG_STATE_HOME": "x"}, filepath.Join(wd, "x/procmon"), nil},
		{map[string]string{"HOME": "/h"}, "/h/.local/state/procmon", nil},
		{map[string]string{}, "", ErrNoStateDir},
	} {
		got, err := StateDir(func(k string) string { return tc.env[k] })
		if got != tc.want || err != tc.err {
			t.Errorf("StateDir(%v) = %q, %v; want %q, %v", tc.env, got, err, tc.want, tc.err)
		}
	}
}

// TestImportsStayEarly keeps this package's init where the package
// comment says it runs: among the first, which a dependency with a later
// init (reflection, path/filepath, x/sys/unix, the rest of procmon) would
// undo without failing anything else.
func TestImportsStayEarly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		// Packages fault and ids import nothing this one does not (fault,
		// built for the fault tests, only os and syscall).
		case dep == "reflect", dep == "fmt", dep == "path/filepath", dep == "golang.org/x/sys/unix",
			strings.HasPrefix(dep, "procmon/") && dep != "procmon/internal/early" && dep != "procmon/internal/fault" && dep != "procmon/internal/ids":
			t.Errorf("package early depends on %s, whose init runs late", dep)
		}
	}
	if !strings.Contains(string(out), "procmon/internal/early") {
		t.Errorf("go list -deps did not list the package itself:\n%s", out)
	}
}
