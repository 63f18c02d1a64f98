package proc

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

// rootServer serves the control socket of monitor id in a temporary state
// directory, as a guardian holding root would; this test process plays the
// guardian. It returns the state directory and the monitor as recorded.
//
// served has a value each time the server has closed a connection it
// accepted: a client's close does not wait for the server, which may
// accept a refused connection only after its client has gone, so a count
// of this process's descriptors means something only once served says so.
func rootServer(t *testing.T, root *componentRoot) (*state.Dir, *state.Monitor, <-chan struct{}) {
	t.Helper()
	dir := &state.Dir{Path: t.TempDir()}
	const id = "m_00000000000000000000component"
	mdir := dir.MonitorDir(id)
	if err := os.MkdirAll(mdir, 0o700); err != nil {
		t.Fatal(err)
	}
	g := &guardian{dir: dir, monitorID: id, root: root}
	ctl, err := g.listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{}, 16)
	go func() {
		for {
			conn, err := ctl.l.AcceptUnix()
			if err != nil {
				return
			}
			g.handle(conn)
			conn.Close()
			select {
			case served <- struct{}{}:
			default: // a test that does not count descriptors
			}
		}
	}()
	t.Cleanup(ctl.close)
	ticks, err := StartTicks(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return dir, &state.Monitor{MonitorID: id, GuardianPID: os.Getpid(), GuardianStartTicks: ticks}, served
}

func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// wantFDs fails unless, once the server has closed the one connection
// made since (served), the process has want open descriptors. A count
// that only had to come back to want in time could pass a leak while the
// server's end was still open, and took a count made while a refused
// connection's server end was open for a lasting one.
func wantFDs(t *testing.T, want int, served <-chan struct{}, after string) {
	t.Helper()
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatalf("the server did not close its end of the connection after %s", after)
	}
	if got := openFDs(t); got != want {
		t.Fatalf("%d descriptors open after %s, %d before", got, after, want)
	}
}

func sameDir(t *testing.T, fd int, path string) bool {
	t.Helper()
	var a, b unix.Stat_t
	if err := unix.Fstat(fd, &a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(path, &b); err != nil {
		t.Fatal(err)
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// The root a waiter receives is the directory held since the start, not
// whatever its path names now.
func TestComponentRootHandedOver(t *testing.T) {
	base := t.TempDir()
	comp := filepath.Join(base, "comp")
	if err := os.Mkdir(comp, 0o700); err != nil {
		t.Fatal(err)
	}
	held := holdComponentRoot(comp)
	if held.fd < 0 {
		t.Fatal(held.err)
	}
	defer unix.Close(held.fd)
	dir, m, served := rootServer(t, held)

	// The component is renamed and a symlink put in its place.
	if err := os.Rename(comp, comp+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base, comp); err != nil {
		t.Fatal(err)
	}
	before := openFDs(t)
	fd, err := ComponentRoot(context.Background(), dir, m)
	if err != nil {
		t.Fatalf("ComponentRoot: %v", err)
	}
	if !sameDir(t, fd, comp+".moved") || sameDir(t, fd, comp) {
		t.Fatal("the root handed over is not the directory held since the start")
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Fatalf("the received root is not close-on-exec (flags %#x, %v)", flags, err)
	}
	unix.Close(fd)
	wantFDs(t, before, served, "the handover")
}

// A root trusted only from the guardian the record names: a socket served
// by any other process (a planted one) gives nothing.
func TestComponentRootOnlyFromTheRecordedGuardian(t *testing.T) {
	held := holdComponentRoot(t.TempDir())
	defer unix.Close(held.fd)
	dir, m, served := rootServer(t, held)
	for _, other := range []*state.Monitor{
		{MonitorID: m.MonitorID, GuardianPID: os.Getppid(), GuardianStartTicks: m.GuardianStartTicks},
		{MonitorID: m.MonitorID, GuardianPID: m.GuardianPID, GuardianStartTicks: m.GuardianStartTicks + 1},
	} {
		before := openFDs(t)
		if fd, err := ComponentRoot(context.Background(), dir, other); !errors.Is(err, errNotTheGuardian) {
			if err == nil {
				unix.Close(fd)
			}
			t.Fatalf("ComponentRoot from pid %d with another start time: %v, want %v", other.GuardianPID, err, errNotTheGuardian)
		}
		wantFDs(t, before, served, "a refusal")
	}
}

// A guardian that could not open the root says so; no guardian at all is
// errNoGuardian.
func TestComponentRootRefusals(t *testing.T) {
	missing := holdComponentRoot(filepath.Join(t.TempDir(), "missing"))
	if missing.fd >= 0 || missing.err == nil {
		t.Fatalf("holdComponentRoot of a missing directory: %+v", missing)
	}
	dir, m, _ := rootServer(t, missing)
	var pe *protocol.Error
	if fd, err := ComponentRoot(context.Background(), dir, m); !errors.As(err, &pe) {
		if err == nil {
			unix.Close(fd)
		}
		t.Fatalf("ComponentRoot from a guardian holding no root: %v, want its refusal", err)
	}

	empty := &state.Dir{Path: t.TempDir()}
	if _, err := ComponentRoot(context.Background(), empty, m); !IsNoGuardian(err) {
		t.Fatalf("ComponentRoot with no guardian: %v, want no guardian", err)
	}
}

// A guardian that never answers holds the waiter no longer than its
// context.
func TestComponentRootGivesUp(t *testing.T) {
	dir := &state.Dir{Path: t.TempDir()}
	const id = "m_00000000000000000000component"
	mdir := dir.MonitorDir(id)
	if err := os.MkdirAll(mdir, 0o700); err != nil {
		t.Fatal(err)
	}
	g := &guardian{dir: dir, monitorID: id}
	ctl, err := g.listen() // listening, never accepting: a stopped guardian
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.close()
	ticks, _ := StartTicks(os.Getpid())
	m := &state.Monitor{MonitorID: id, GuardianPID: os.Getpid(), GuardianStartTicks: ticks}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ComponentRoot(ctx, dir, m)
	var ne net.Error
	if err == nil || (!errors.As(err, &ne) && !IsNoGuardian(err)) {
		t.Fatalf("ComponentRoot after its context ended: %v, want a timeout", err)
	}
}
