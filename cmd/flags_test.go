//go:build linux

package cmd

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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
	if checked < 9 {
		t.Fatalf("checked %d flags; the commands have at least 9 integer and duration flags", checked)
	}
	status, resp, raw := runIn(t, dir, "", "list", "--all-runs=maybe")
	if msg, _ := resp["error"].(map[string]any)["message"].(string); status != 2 || msg != `invalid value "maybe" for --all-runs: want true or false (see procmon list --help)` {
		t.Errorf("list --all-runs=maybe: exit %d %s", status, raw)
	}
}
