package proc

import (
	"strconv"
	"strings"
	"testing"

	"procmon/internal/protocol"
	"procmon/internal/redact"
	"procmon/internal/state"
)

// TestSecretsBound: the distinct secrets of one command, given and from
// its secret variables, are what redact.Compilable takes: at most
// redact.MaxSecretsLen bytes, and less where escapings lengthen them. At
// the bound a command passes; a byte past it is invalid_request naming
// the field and, for variables, their names, and never a size. A secret
// given twice, or given and also in a variable, counts once, as it is
// compiled once.
func TestSecretsBound(t *testing.T) {
	half := strings.Repeat("h", redact.MaxSecretsLen/2)
	other := strings.Repeat("o", redact.MaxSecretsLen/2)
	run := &state.Run{}
	for _, c := range []struct {
		name string
		cmd  Command
		vars []string // named in the refusal; nil: passes
	}{
		{"given, at the bound", Command{Secrets: []string{half, other}}, nil},
		{"given, a byte past it", Command{Secrets: []string{half, other + "o"}}, []string{}},
		{"given twice", Command{Secrets: []string{half, half, other, other}}, nil},
		{"in variables, at the bound", Command{Env: map[string]string{"A_TOKEN": half, "B_KEY": other}}, nil},
		{"in variables, past it", Command{Env: map[string]string{"A_TOKEN": half, "B_KEY": other + "o"}}, []string{"A_TOKEN", "B_KEY"}},
		{"listed by secret_env", Command{Env: map[string]string{"A_TOKEN": half, "PLAIN": other + "o"}, SecretEnv: []string{"PLAIN"}}, []string{"A_TOKEN", "PLAIN"}},
		{"given and in a variable", Command{Secrets: []string{half}, Env: map[string]string{"A_TOKEN": half, "B_KEY": other + "o"}}, []string{"A_TOKEN", "B_KEY"}},
		{"the same given and in a variable", Command{Secrets: []string{half}, Env: map[string]string{"A_TOKEN": half, "B_KEY": other}}, nil},
		{"not secret by name", Command{Env: map[string]string{"A_TOKEN": half, "PLAIN": other + "o"}}, nil},
		// Within the bound on bytes, past the one on what they compile to.
		{"escaped characters in a variable", Command{Env: map[string]string{"A_TOKEN": strings.Repeat("\x01\"\\<>&\x7fé", 4000)}}, []string{"A_TOKEN"}},
	} {
		c.cmd.Argv, c.cmd.Cwd = []string{"true"}, "/"
		err := c.cmd.check()
		if err == nil {
			_, _, err = c.cmd.secrets(c.cmd.Environ(), run)
		}
		if c.vars == nil {
			if err != nil {
				t.Errorf("%s: %v; want it to pass", c.name, err)
			}
			continue
		}
		if !protocol.HasCode(err, protocol.CodeInvalidRequest) || protocol.AsError(err).Details["field"] != "secrets" {
			t.Errorf("%s: answered %v, want invalid_request naming secrets", c.name, err)
			continue
		}
		msg := err.Error()
		for _, v := range c.vars {
			if !strings.Contains(msg, v) {
				t.Errorf("%s: the refusal does not name %s: %s", c.name, v, msg)
			}
		}
		if len(c.vars) == 0 && strings.Contains(msg, "variables") {
			t.Errorf("%s: the refusal speaks of variables, and there are none: %s", c.name, msg)
		}
		if !strings.Contains(msg, strconv.Itoa(redact.MaxSecretsLen)) {
			t.Errorf("%s: the refusal does not name the bound: %s", c.name, msg)
		}
		for _, n := range []int{redact.MaxSecretsLen + 1, len(half), len(other) + 1} {
			if strings.Contains(msg, strconv.Itoa(n)) {
				t.Errorf("%s: the refusal tells a size (%d): %s", c.name, n, msg)
			}
		}
		if strings.Contains(msg, half[:8]) || strings.Contains(msg, other[:8]) {
			t.Errorf("%s: the refusal tells a value: %s", c.name, msg)
		}
	}
}
