//go:build linux

package cmd

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"procmon/internal/protocol"
)

// flagError is the error for a command line whose flags cobra could not
// parse. A value a flag refused says which flag and why in words a person
// reads (never strconv's); any other refusal (an unknown flag, a flag
// without its value) is pflag's own, which already reads so. details.field
// is the request field the flag builds (flagField), as it is when the
// request refuses the value the flag gave.
func flagError(c *cobra.Command, err error) error {
	var (
		bad     *pflag.InvalidValueError
		noValue *pflag.ValueRequiredError
		unknown *pflag.NotExistError
		flag    string
	)
	switch {
	case errors.As(err, &bad) && errors.Is(bad.Unwrap(), errGivenTwice):
		flag = bad.GetFlag().Name
		err = fmt.Errorf("--%s is given more than once, with different values; give it once", flag)
	case errors.As(err, &bad):
		flag = bad.GetFlag().Name
		err = fmt.Errorf("invalid value %q for --%s: %s", bad.GetValue(), flag, valueProblem(bad.Unwrap()))
	case errors.As(err, &noValue):
		flag = noValue.GetFlag().Name
	case errors.As(err, &unknown):
		// As an unknown field of a request is named.
		flag = unknown.GetSpecifiedName()
	}
	pe := protocol.Errorf(protocol.CodeInvalidRequest, "%v (see %s --help)", err, c.CommandPath())
	if flag != "" {
		pe = pe.With("field", flagField(flag))
	}
	return pe
}

// valueProblem says what is wrong with a flag's value. pflag parses every
// integer flag, int as well as int64, as 64 bits, so that is the range.
func valueProblem(cause error) string {
	var num *strconv.NumError
	if !errors.As(cause, &num) {
		return cause.Error() // procmon's own flags (durations) say it themselves
	}
	switch {
	case num.Func == "ParseBool":
		return "want true or false"
	case !errors.Is(num.Err, strconv.ErrRange):
		return "not a whole number"
	case len(num.Num) > 0 && num.Num[0] == '-':
		return fmt.Sprintf("out of range (at least %d)", int64(math.MinInt64))
	}
	return fmt.Sprintf("out of range (at most %d)", int64(math.MaxInt64))
}

// requestFlags is, for each request field a flag fills, that flag: the
// same flag in every command that has the field.
var requestFlags = map[string]string{
	"all_runs":           "all-runs",
	"native_checkpoints": "native-checkpoints",
	"timeout_seconds":    "timeout",
	"grace_seconds":      "grace",
	"max_bytes":          "max-bytes",
	"offset":             "offset",
	"name":               "name",
	"cwd":                "cwd",
	"env":                "env",
	"secret_env":         "secret-env",
	"depends_on":         "depends-on",
	"owner_pid":          "owner-pid",
	"tools":              "tools",
	"text":               "output",
	"path":               "file",
	"sha256":             "sha256",
}

// flagField is what details.field names for flag: the request field it
// fills (requestFlags), or the flag itself when it fills none, or none on
// its own (--tail and --since become an offset, --exit a condition with
// --output and --file), as their own refusals name them.
func flagField(flag string) string {
	for field, f := range requestFlags {
		if f == flag {
			return field
		}
	}
	return flag
}

// nameTheFlag makes an error about a request field whose value a person
// gave with a flag name that flag, where the message spoke of the JSON
// field alone: `field "timeout_seconds" must be ...` reads
// `--timeout (timeout_seconds) must be ...`, and a message in other words
// is prefixed with the flag unless it names it already. details.field
// keeps the field, for programs. A request read from stdin sets no flag,
// so its messages stay the protocol's.
func nameTheFlag(c *cobra.Command, pe *protocol.Error) {
	field, _ := pe.Details["field"].(string)
	flag, ok := requestFlags[field]
	if !ok || c == nil || !c.Flags().Changed(flag) {
		return
	}
	named := "--" + flag
	if flag != field {
		named += " (" + field + ")"
	}
	switch quoted := fmt.Sprintf("field %q", field); {
	case strings.Contains(pe.Message, quoted):
		pe.Message = strings.Replace(pe.Message, quoted, named, 1)
	case !strings.Contains(pe.Message, "--"+flag):
		pe.Message = "--" + flag + ": " + pe.Message
	}
}

// onceOnly makes every flag of c and its subcommands that takes one value
// refuse a second that differs: pflag keeps the last, so wait --output
// NEVER --output tick waited for tick alone, and the JSON request a
// command line stands for has each field once. The same value again says
// the same (and cobra's completion parses the flags before the command
// twice). Flags that gather values (--env, --secret-env) and switches
// are left as they are.
func onceOnly(c *cobra.Command) {
	wrap := func(f *pflag.Flag) {
		if _, done := f.Value.(*onceValue); done {
			return
		}
		if _, many := f.Value.(pflag.SliceValue); many || f.Value.Type() == "count" || f.Value.Type() == "bool" {
			return // a switch said twice says the same
		}
		f.Value = &onceValue{Value: f.Value, name: f.Name}
	}
	c.Flags().VisitAll(wrap)
	c.PersistentFlags().VisitAll(wrap)
	for _, sub := range c.Commands() {
		onceOnly(sub)
	}
}

var errGivenTwice = errors.New("given more than once")

// onceValue is a flag's value that may be set once, or again to the
// same value however written (--timeout 1s --timeout 1).
type onceValue struct {
	pflag.Value
	name     string
	set      bool
	firstArg string // the first value as given
	first    string // and as it was taken
}

func (v *onceValue) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		return err
	}
	if v.set && v.Value.String() != v.first {
		// The refusal is answered as the first asked (-o json -o text).
		v.Value.Set(v.firstArg)
		return errGivenTwice
	}
	v.set, v.firstArg, v.first = true, s, v.Value.String()
	return nil
}
