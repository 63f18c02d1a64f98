//go:build faultpoints

package e2e

import (
	"bytes"
	"io"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// TestFaultsStartInterruptedOnATerminal: a start interrupted once its
// guardian has handed off drains what it started, and on a terminal shows
// its receipt as cancel does, then the error, which points at no
// details.result (a person cannot see it). An interrupt can come too late to count
// (see TestFaultsStartInterruptedOnceHandedOff): such a start shows the
// running service, which is cancelled, and the next start is tried.
func TestFaultsStartInterruptedOnATerminal(t *testing.T) {
	l := newFaultLab(t, 30, 100)
	for i := 0; ; i++ {
		if i == 5 {
			t.Fatal("5 interrupted starts in a row were too late to count")
		}
		c := l.command("start:before_handoff", "start", "--", "sleeper")
		c.Env = append(c.Env, "NO_COLOR=1", "TERM=xterm")
		ptm, tty, err := pty.Open()
		if err != nil {
			t.Fatal(err)
		}
		c.Stdin, c.Stdout, c.Stderr = tty, tty, tty
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		err = c.Start()
		tty.Close()
		if err != nil {
			t.Fatal(err)
		}
		shown := make(chan []byte, 1)
		go func() {
			b, _ := io.ReadAll(ptm) // EIO once start has exited
			shown <- b
		}()
		if err := awaitStopped(c.Process.Pid); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // the guardian hands off meanwhile
		unix.Kill(c.Process.Pid, unix.SIGINT)
		unix.Kill(c.Process.Pid, unix.SIGCONT)
		c.Wait()
		screen := bytes.ReplaceAll(<-shown, []byte("\r\n"), []byte("\n"))
		ptm.Close()
		if id := regexp.MustCompile(`m_[0-9a-z]+`).Find(screen); c.ProcessState.ExitCode() == 0 && id != nil {
			l.run("cancel", string(id)) // too late to count
			continue
		}
		want := regexp.MustCompile(`^(m_[0-9a-z]+)  cancelled \(SIGTERM\)\n` +
			`(?:  .*\n)*  reason interrupted, .*group empty \(verified\), output drained\n(?:  .*\n)*` +
			`procmon: start of sleeper was interrupted: (m_[0-9a-z]+) was drained \(wait_interrupted\)\n$`)
		m := want.FindSubmatch(screen)
		if c.ProcessState.ExitCode() != 130 || m == nil || !bytes.Equal(m[1], m[2]) {
			l.settle()
			t.Fatalf("the interrupted start exited %d and showed %q; want it to match %s", c.ProcessState.ExitCode(), screen, want)
		}
		if s := l.status(string(m[1])); s.Get("reason").String() != "interrupted" || !s.Get("receipt.group_empty_verified").Bool() {
			l.settle()
			t.Fatalf("status of the drained monitor: %s", s.Raw)
		}
		break
	}
	l.settle()
}
