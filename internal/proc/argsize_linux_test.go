package proc

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
)

// TestCheckSizeAgreesWithExecve: a command that checkSize refuses is one
// that execve refuses as too long, and one just under each bound runs.
// Checked against the kernel itself, with /bin/true.
func TestCheckSizeAgreesWithExecve(t *testing.T) {
	execve := func(c Command) error {
		cmd := exec.Command("/bin/true")
		cmd.Args = append([]string{"/bin/true"}, c.Argv[1:]...)
		cmd.Env = c.Environ()
		return cmd.Run()
	}
	long := func(n int) string { return strings.Repeat("a", n) }
	// Many arguments of 100 KB: past the limit for any stack limit, as
	// it is at most 6 MiB.
	var many []string
	for range 70 {
		many = append(many, long(100000))
	}
	for _, c := range []struct {
		name  string
		cmd   Command
		field string // "" when it must run
	}{
		{"argument at the bound", Command{Argv: []string{"true", long(maxArgLen - 1)}}, ""},
		{"argument past it", Command{Argv: []string{"true", long(maxArgLen)}}, "argv"},
		{"variable at the bound", Command{Argv: []string{"true"}, Env: map[string]string{"V": long(maxArgLen - 3)}}, ""},
		{"variable past it", Command{Argv: []string{"true"}, Env: map[string]string{"V": long(maxArgLen - 2)}}, "env"},
		{"too much in all", Command{Argv: append([]string{"true"}, many...)}, "argv"},
	} {
		c.cmd.Cwd = "/"
		err := c.cmd.check()
		ran := execve(c.cmd)
		if c.field == "" {
			if err != nil || ran != nil {
				t.Errorf("%s: check %v, execve %v; want both to pass", c.name, err, ran)
			}
			continue
		}
		if !protocol.HasCode(err, protocol.CodeInvalidRequest) || protocol.AsError(err).Details["field"] != c.field {
			t.Errorf("%s: check answered %v, want invalid_request naming %s", c.name, err, c.field)
		}
		// The size of what was refused may be a secret's: it is not told.
		if err != nil && strings.Contains(err.Error(), strconv.Itoa(maxArgLen)) {
			t.Errorf("%s: the refusal tells the size: %v", c.name, err)
		}
		if !errors.Is(ran, unix.E2BIG) {
			t.Errorf("%s: execve answered %v, want E2BIG: the check refused a command that runs", c.name, ran)
		}
	}
}
