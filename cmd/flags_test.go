//go:build linux

package cmd

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"procmon/internal/state"
)

// TestFlagValuesReadPlainly: every integer flag of every command (and
// every duration flag, which takes a plain number too) refuses a value
// that is no number, or a number past what it holds, in words that name
// the flag, with the way to the help: never strconv's message.
func TestFlagValuesReadPlainly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	const huge, hugeNegative = "99999999999999999999999", "-99999999999999999999999"
	checked := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
			path := strings.Fields(c.CommandPath())[1:]
			flag := "--" + f.Name
			want := map[string]string{
				huge:         "out of range (at most 9223372036854775807)",
				hugeNegative: "out of range (at least -9223372036854775808)",
			}
			switch f.Value.Type() {
			case "int", "int64":
				want["abc"] = "not a whole number"
				want["1.5"] = "not a whole number"
			case "duration":
			default:
				return
			}
			checked++
			for value, problem := range want {
				args := append(append([]string{}, path...), flag, value)
				status, resp, raw := runIn(t, dir, "", args...)
				wantMsg := `invalid value "` + value + `" for ` + flag + ": " + problem + " (see " + c.CommandPath() + " --help)"
				msg, _ := resp["error"].(map[string]any)["message"].(string)
				if status != 2 || errorCode(resp) != "invalid_request" || msg != wantMsg {
					t.Errorf("%v: exit %d %s\nwant exit 2, invalid_request: %s", args, status, raw, wantMsg)
				}
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(testEnv(dir, &bytes.Buffer{}, &bytes.Buffer{}), &globals{}))
	if checked < 8 {
		t.Fatalf("checked %d flags; the commands have at least 8 integer and duration flags", checked)
	}
	status, resp, raw := runIn(t, dir, "", "list", "--all-runs=maybe")
	if msg, _ := resp["error"].(map[string]any)["message"].(string); status != 2 || msg != `invalid value "maybe" for --all-runs: want true or false (see procmon list --help)` {
		t.Errorf("list --all-runs=maybe: exit %d %s", status, raw)
	}
}

// TestFieldErrorsNameTheFlag: a request field refused when a flag gave
// its value is named by that flag too, in the message only; the same
// refusal of a request read from stdin names the field alone.
func TestFieldErrorsNameTheFlag(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if status, _, raw := runIn(t, dir, "", "configure", "--enable"); status != 0 {
		t.Fatalf("configure --enable: exit %d %s", status, raw)
	}
	id := "m_" + strings.Repeat("0", 26)
	cases := []struct {
		field     string
		args      []string
		byFlag    string
		stdin     string
		stdinArgs []string
		byRequest string
		code      string
		exit      int
	}{
		{"timeout_seconds", []string{"start", "--timeout", "-5", "--", "sleep", "1"}, `--timeout (timeout_seconds) must be a positive integer or null, got -5`,
			`{"request": {"argv": ["sleep", "1"], "timeout_seconds": -5}}`, []string{"start"}, `field "timeout_seconds" must be a positive integer or null, got -5`, "invalid_request", 2},
		{"name", []string{"start", "--name", "m_web", "sleep", "1"}, `--name starts with "m_"`,
			`{"request": {"argv": ["sleep", "1"], "name": "m_web"}}`, []string{"start"}, `field "name" starts with "m_"`, "invalid_request", 2},
		{"max_bytes", []string{"exec", "--max-bytes", "2", "--", "true"}, `--max-bytes (max_bytes) must be at least 4`,
			`{"request": {"argv": ["true"], "max_bytes": 2}}`, []string{"exec"}, `field "max_bytes" must be at least 4`, "invalid_request", 2},
		{"grace_seconds", []string{"cancel", id, "--grace", "2h"}, `--grace (grace_seconds) must be between 0 and 3600`,
			`{"request": {"monitor_id": "` + id + `", "grace_seconds": 7200}}`, []string{"cancel"}, `field "grace_seconds" must be between 0 and 3600`, "invalid_request", 2},
		// A message in its own words is prefixed with the flag.
		{"text", []string{"wait", id, "--output", ""}, `--output: output condition "text" is empty`,
			`{"request": {"monitor_id": "` + id + `", "condition": {"kind": "output", "text": ""}}}`, []string{"wait"}, `output condition "text" is empty`, "invalid_condition", 2},
		{"owner_pid", []string{"run", "new", "--owner-pid", "-3"}, `--owner-pid: owner pid -3 cannot own a run`,
			`{"request": {"owner_pid": -3}}`, []string{"run", "new"}, `owner pid -3 cannot own a run`, "invalid_request", 2},
	}
	for _, c := range cases {
		for _, how := range []struct {
			stdin string
			args  []string
			want  string
		}{{"", c.args, c.byFlag}, {c.stdin, c.stdinArgs, c.byRequest}} {
			status, resp, raw := runIn(t, dir, how.stdin, how.args...)
			e, _ := resp["error"].(map[string]any)
			msg, _ := e["message"].(string)
			details, _ := e["details"].(map[string]any)
			if status != c.exit || errorCode(resp) != c.code || details["field"] != c.field || !strings.HasPrefix(msg, how.want) {
				t.Errorf("%v (stdin %q): exit %d %s\nwant exit %d, %s, details.field %q, a message that starts %s", how.args, how.stdin, status, raw, c.exit, c.code, c.field, how.want)
			}
		}
	}
}

// TestRequestFlagsAreFlags holds requestFlags to the flags the commands
// have: a flag renamed there would leave its field's errors unnamed. Each
// flag fills one field.
func TestRequestFlagsAreFlags(t *testing.T) {
	have := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) { have[f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(testEnv(t.TempDir(), &bytes.Buffer{}, &bytes.Buffer{}), &globals{}))
	fills := map[string]string{}
	for field, flag := range requestFlags {
		if !have[flag] {
			t.Errorf("requestFlags names --%s for %s, a flag no command has", flag, field)
		}
		// flagField reads the table backwards.
		if other, ok := fills[flag]; ok {
			t.Errorf("requestFlags names --%s for both %s and %s", flag, field, other)
		}
		fills[flag] = field
	}
}

// TestEmptyNameIsRefused: a --name cannot be empty, and the refusal says
// so. An empty one that names a monitor was taken for no --name, and the
// command read its request from stdin, answering that the body was empty.
func TestEmptyNameIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	checked := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.NonInheritedFlags().Lookup("name") != nil {
			checked++
			args := append(strings.Fields(c.CommandPath())[1:], "--name=")
			if c.Name() == "start" {
				args = append(args, "sleep", "1")
			}
			status, resp, raw := runIn(t, dir, "", args...)
			msg, _ := resp["error"].(map[string]any)["message"].(string)
			if status != 2 || !strings.Contains(msg, "--name") || !strings.Contains(msg, "empty") {
				t.Errorf("%v: exit %d %s\nwant exit 2 and a message that --name is empty", args, status, raw)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(testEnv(dir, &bytes.Buffer{}, &bytes.Buffer{}), &globals{}))
	if checked < 6 {
		t.Fatalf("checked %d commands; start, status, logs, wait, cancel and reconcile take --name", checked)
	}
}

// TestFlagErrorsNameTheField: every flag of every command that cobra
// refuses, for a value it cannot parse or for want of one, gives
// details.field, as a request's refusal does: the field the flag fills,
// or the flag itself where it fills none. They used to carry no details
// at all, while the same flag's value refused by the request (--timeout
// 0) named its field.
func TestFlagErrorsNameTheField(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	fieldOf := map[string]string{}
	for field, flag := range requestFlags {
		fieldOf[flag] = field
	}
	checked := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.Fields(c.CommandPath())[1:]
		var properties map[string]bool
		if set, err := findSchema(strings.Join(path, " ")); err == nil {
			properties = schemaProperties(set.Request)
		}
		c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
			want, fills := fieldOf[f.Name]
			if !fills {
				want = f.Name
			}
			// A flag named for a field of its command's request fills it,
			// and must be in requestFlags to be named so.
			if field := strings.ReplaceAll(f.Name, "-", "_"); properties[field] && want != field {
				t.Errorf("%s --%s fills the request field %s, which requestFlags does not say", c.CommandPath(), f.Name, field)
			}
			var lines [][]string
			switch f.Value.Type() {
			case "bool":
				lines = append(lines, []string{"--" + f.Name + "=maybe"})
			case "int", "int64":
				lines = append(lines, []string{"--" + f.Name, "abc"}, []string{"--" + f.Name, "1.5"})
			case "duration":
				lines = append(lines, []string{"--" + f.Name, "abc"}, []string{"--" + f.Name, "1.5s"}, []string{"--" + f.Name, "9999999999h"})
			}
			if f.NoOptDefVal == "" {
				lines = append(lines, []string{"--" + f.Name}) // its value left out
			}
			checked++
			for _, line := range lines {
				args := append(append([]string{}, path...), line...)
				status, resp, raw := runIn(t, dir, "", args...)
				e, _ := resp["error"].(map[string]any)
				details, _ := e["details"].(map[string]any)
				if status != 2 || errorCode(resp) != "invalid_request" || details["field"] != want {
					t.Errorf("%v: exit %d %s\nwant exit 2, invalid_request, details.field %q", args, status, raw, want)
				}
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(testEnv(dir, &bytes.Buffer{}, &bytes.Buffer{}), &globals{}))
	if checked < 40 {
		t.Fatalf("checked %d flags; the commands have at least 40", checked)
	}
	// An unknown flag is named as an unknown field of a request is.
	status, resp, raw := runIn(t, dir, "", "wait", "--timeot", "5s")
	if details, _ := resp["error"].(map[string]any)["details"].(map[string]any); status != 2 || details["field"] != "timeot" {
		t.Errorf("wait --timeot 5s: exit %d %s, want details.field timeot", status, raw)
	}
}

// schemaProperties are the fields of a request schema, and those of the
// objects it holds (a wait's condition).
func schemaProperties(s map[string]any) map[string]bool {
	out := map[string]bool{}
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		out[name] = true
		if inner, ok := p.(map[string]any); ok {
			for name := range schemaProperties(inner) {
				out[name] = true
			}
		}
	}
	return out
}

// TestFlagConflictsNameTheField: flags (and arguments) that cannot go
// together name the field the request would carry, or the flag when none
// does. They carried no details.
func TestFlagConflictsNameTheField(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if status, _, raw := runIn(t, dir, "", "configure", "--enable"); status != 0 {
		t.Fatalf("configure --enable: exit %d %s", status, raw)
	}
	id := "m_" + strings.Repeat("0", 26)
	web := "m_" + strings.Repeat("0", 25) + "1"
	saveMonitor(t, dir, id, state.DefaultRun, "api", 100, false)
	saveMonitor(t, dir, web, state.DefaultRun, "web", 200, false)
	for _, c := range []struct {
		args  []string
		field string
	}{
		// --offset, --tail and --since each say where the window starts:
		// the request's offset.
		{[]string{"logs", id, "--offset", "5", "--tail", "3"}, "offset"},
		{[]string{"logs", id, "--offset", "5", "--since", "1m"}, "offset"},
		{[]string{"logs", id, "--since", "1m", "--tail", "2"}, "offset"},
		{[]string{"cancel", id, "--all"}, "all"},
		{[]string{"configure", "--enable", "--show"}, "show"},
		{[]string{"status", id, "--name", "web"}, "monitor_id"},
	} {
		status, resp, raw := runIn(t, dir, "", c.args...)
		e, _ := resp["error"].(map[string]any)
		details, _ := e["details"].(map[string]any)
		if status != 2 || errorCode(resp) != "invalid_request" || details["field"] != c.field {
			t.Errorf("%v: exit %d %s\nwant exit 2, invalid_request, details.field %q", c.args, status, raw, c.field)
		}
	}
	// A person at a terminal who gave nothing to act on gave no request.
	var out bytes.Buffer
	env := testEnv(dir, &out, &bytes.Buffer{})
	env.StdinIsTerminal = true
	if status := Run([]string{"start"}, env); status != 2 || !strings.Contains(out.String(), `"details":{"field":"request"}`) {
		t.Errorf("start at a terminal: exit %d %s, want details.field request", status, out.String())
	}
}

// TestFlagsTakeOneValue: a flag that takes one value refuses a second
// that differs (pflag kept the last: wait --output A --output B waited
// for B alone), on every command, naming the flag; a flag that gathers
// values (--env) takes several.
func TestFlagsTakeOneValue(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	checked := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
			if _, once := f.Value.(*onceValue); !once {
				return
			}
			value := "x"
			switch {
			case f.Name == "format":
				value = "json"
			case f.Value.Type() == "int", f.Value.Type() == "int64", f.Value.Type() == "duration":
				value = "1"
			}
			path := strings.Fields(c.CommandPath())[1:]
			other := value + "0"
			if f.Name == "format" {
				other = "text"
			}
			args := append(append([]string{}, path...), "--"+f.Name, value, "--"+f.Name, other)
			status, resp, raw := runIn(t, dir, "", args...)
			want := "--" + f.Name + " is given more than once, with different values; give it once (see " + c.CommandPath() + " --help)"
			e, _ := resp["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if status != 2 || errorCode(resp) != "invalid_request" || msg != want {
				t.Errorf("%v: exit %d %s\nwant exit 2, invalid_request: %s", args, status, raw, want)
			}
			checked++
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(testEnv(dir, &bytes.Buffer{}, &bytes.Buffer{}), &globals{}))
	if checked < 20 {
		t.Fatalf("checked %d flags; the commands have more than 20 that take one value", checked)
	}
	// Without a command start refuses the request, after the flags.
	if _, _, raw := runIn(t, dir, "", "start", "--env", "A=1", "--env", "B=2"); strings.Contains(raw, "more than once") {
		t.Errorf("--env given twice: %s", raw)
	}
}
