//go:build linux

package cmd

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"procmon/internal/protocol"
)

// flagError is the error for a command line whose flags cobra could not
// parse. A value a flag refused says which flag and why in words a person
// reads (never strconv's); any other refusal (an unknown flag, a flag
// without its value) is pflag's own, which already reads so.
func flagError(c *cobra.Command, err error) error {
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		err = fmt.Errorf("invalid value %q for --%s: %s", bad.GetValue(), bad.GetFlag().Name, valueProblem(bad.Unwrap()))
	}
	return protocol.Errorf(protocol.CodeInvalidRequest, "%v (see %s --help)", err, c.CommandPath())
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
