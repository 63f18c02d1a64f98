package e2e

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestTooLongArgumentUsesNoSlot: a start or an exec with an argument that
// execve would refuse as too long is invalid_request (exit 2) naming
// argv, before it takes a slot; the next command takes the first one.
func TestTooLongArgumentUsesNoSlot(t *testing.T) {
	assertRefusedWithoutSlot(t, map[string]any{"argv": []string{"printer", strings.Repeat("a", 128<<10)}}, "argv", nil)
}

// TestTooMuchSecretUsesNoSlot: a start or an exec whose secrets, with the
// values of its secret variables, are more than procmon compiles for one
// command is invalid_request (exit 2) naming the variables, and neither
// the values nor their sizes, before it takes a slot; the next command
// takes the first one, and no guardian is left.
func TestTooMuchSecretUsesNoSlot(t *testing.T) {
	value := strings.Repeat("Qx7", 12<<10) // 36 KiB: each under execve's bound, together past 64 KiB
	request := map[string]any{
		"argv": []string{"printer", "ok"},
		"env":  map[string]string{"FIRST_TOKEN": value, "SECOND_KEY": value + "2"},
	}
	assertRefusedWithoutSlot(t, request, "secrets", func(cmd string, out []byte) {
		if msg := gjson.GetBytes(out, "error.message").String(); !strings.Contains(msg, "FIRST_TOKEN") || !strings.Contains(msg, "SECOND_KEY") {
			t.Errorf("%s's refusal does not name both variables: %.2000s", cmd, out)
		}
		if strings.Contains(string(out), "Qx7Qx7") || strings.Contains(string(out), strconv.Itoa(2*len(value)+1)) {
			t.Errorf("%s's refusal tells a value or its size: %.2000s", cmd, out)
		}
	})
}

// assertRefusedWithoutSlot sends request to start and to exec, checks
// that each refuses it as invalid_request (exit 2) naming field, and
// hands each answer to more (if any); then that the next exec takes the
// first slot, and that nothing is left.
func assertRefusedWithoutSlot(t *testing.T, request map[string]any, field string, more func(cmd string, out []byte)) {
	t.Helper()
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	body, err := json.Marshal(map[string]any{"request": request})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"start", "exec"} {
		c := procmon(cmd)
		c.Stdin = strings.NewReader(string(body))
		out, err := c.Output()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 ||
			gjson.GetBytes(out, "error.code").String() != "invalid_request" || gjson.GetBytes(out, "error.details.field").String() != field {
			t.Fatalf("%s answered %v: %.2000s", cmd, err, out)
		}
		if more != nil {
			more(cmd, out)
		}
	}
	out := runProcmon(t, procmon, "exec", "--", "printer", "ok")
	if n := gjson.GetBytes(out, "command_ordinal").Int(); n != 1 || gjson.GetBytes(out, "status").String() != "exited" {
		t.Fatalf("the next exec answered %s; want the first slot", out)
	}
	assertNothingLeft(t, stateDir)
}
