package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// withoutWNOWAIT runs the rest of its command line (a command of this test
// binary) where waitid with WNOWAIT fails with EINVAL, as in a sandbox
// that lacks it: a seccomp filter on the thread that execs, which every
// process started from there inherits.
func withoutWNOWAIT() {
	runtime.LockOSThread() // the filter is the calling thread's
	if err := denyWNOWAIT(); err != nil {
		fmt.Fprintln(os.Stderr, "withoutwnowait:", err)
		os.Exit(125)
	}
	exe, err := os.Executable()
	if err == nil {
		err = syscall.Exec(exe, os.Args[1:], os.Environ())
	}
	fmt.Fprintln(os.Stderr, "withoutwnowait:", err)
	os.Exit(125)
}

// auditArch is the seccomp architecture of the machines the filter is
// written for.
var auditArch = map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}

func denyWNOWAIT() error {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("no seccomp filter written for %s", runtime.GOARCH)
	}
	const (
		offNr    = 0        // seccomp_data.nr
		offArch  = 4        // seccomp_data.arch
		offArg3  = 16 + 3*8 // seccomp_data.args[3], low word (little-endian)
		ld       = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq      = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset     = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret      = unix.BPF_RET | unix.BPF_K
		retAllow = unix.SECCOMP_RET_ALLOW
	)
	filter := []unix.SockFilter{
		{Code: ld, K: offArch},
		{Code: jeq, K: arch, Jf: 5}, // another ABI: allow
		{Code: ld, K: offNr},
		{Code: jeq, K: unix.SYS_WAITID, Jf: 3},
		{Code: ld, K: offArg3},
		{Code: jset, K: unix.WNOWAIT, Jf: 1},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EINVAL)},
		{Code: ret, K: retAllow},
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("install seccomp filter: %w", err)
	}
	return nil
}

// TestStartRefusedWithoutWNOWAIT: where waitid cannot observe an exit
// without reaping, start refuses with nonreaping_unavailable (exit 1) and
// leaves no guardian, no service and no monitor directory; the same state
// directory starts a service once waitid works.
func TestStartRefusedWithoutWNOWAIT(t *testing.T) {
	if _, ok := auditArch[runtime.GOARCH]; !ok {
		t.Skipf("no seccomp filter written for %s", runtime.GOARCH)
	}
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")

	c := procmon("start", "--", "sleeper")
	c.Args = append([]string{"withoutwnowait"}, c.Args...)
	out, err := c.Output()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("start without WNOWAIT: %v, want exit status 1\n%s", err, out)
	}
	var resp struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("response %q: %v", out, err)
	}
	if resp.Error.Code != "nonreaping_unavailable" || !strings.Contains(resp.Error.Message, "WNOWAIT") {
		t.Fatalf("start without WNOWAIT answered %s", out)
	}
	if g := guardiansOf(stateDir); len(g) > 0 {
		t.Errorf("guardians left: %v", g)
	}
	if entries, _ := os.ReadDir(filepath.Join(stateDir, "monitors")); len(entries) > 0 {
		t.Errorf("%d monitor directories left", len(entries))
	}

	id := startMonitor(t, procmon, "start", "--", "sleeper")
	runProcmon(t, procmon, "cancel", id)
	assertNothingLeft(t, stateDir)
}
