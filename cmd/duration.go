//go:build linux

package cmd

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"procmon/internal/protocol"
)

// secondsFlag is a flag for a request field counted in whole seconds that
// a person may write with units: 30s, 2m, 1h, 1m30s. A plain number is
// seconds, as the field itself is, so scripts written for the JSON
// protocol's numbers keep working.
type secondsFlag struct{ seconds *int64 }

func (f secondsFlag) String() string {
	if f.seconds == nil || *f.seconds == 0 {
		return "0" // what pflag takes for "no default worth showing"
	}
	return formatSeconds(*f.seconds)
}

func (f secondsFlag) Set(s string) error {
	n, err := parseSeconds(s)
	if err != nil {
		return err
	}
	*f.seconds = n
	return nil
}

func (secondsFlag) Type() string { return "duration" }

// parseSeconds reads a plain number of seconds or a duration with units.
// The fields it fills hold whole seconds: a duration that is not a whole
// number of seconds is refused rather than rounded, so that what runs is
// what was written.
func parseSeconds(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration: give seconds or a duration like 30s, 2m, 1h")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		return n, nil
	}
	if errors.Is(err, strconv.ErrRange) {
		return 0, err // a number past 64 bits: flagError says so, as for any integer flag
	}
	// The flag's error quotes the value; these say what is wrong with it.
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, ferr := strconv.ParseFloat(s, 64); ferr == nil {
			// A number that is not whole (1.5, 1e3): no unit is missing.
			return 0, fmt.Errorf("a plain number is whole seconds (like 90); give a fraction with a unit (like 1.5m)")
		}
		if strings.HasPrefix(err.Error(), "time: unknown unit") || strings.HasPrefix(err.Error(), "time: missing unit") {
			return 0, fmt.Errorf("unknown unit; use s, m or h (like 30s, 2m, 1h30m) or a plain number of seconds")
		}
		if durationSyntax().MatchString(s) {
			if !unitsDescend(s) {
				return 0, errUnitOrder
			}
			// Well formed, past what a duration holds (292 years).
			return 0, fmt.Errorf("over the limit of %d seconds (a hundred years)", protocol.MaxSeconds)
		}
		return 0, fmt.Errorf("not a duration: give seconds or a duration like 30s, 2m, 1h")
	}
	if !unitsDescend(s) {
		// time.ParseDuration adds them up: 1h1h is 2h, 30s1m is 90s.
		return 0, errUnitOrder
	}
	if d%time.Second != 0 {
		return 0, fmt.Errorf("not a whole number of seconds; procmon counts this in seconds (like 1s, 90s, 2m)")
	}
	return int64(d / time.Second), nil
}

var errUnitOrder = errors.New("units out of order or given twice; write each once, largest first (like 1h30m)")

// unitsDescend reports whether the units of a duration time.ParseDuration
// read come each once, largest first: a repeated or misplaced unit is a
// typo more often than a sum.
func unitsDescend(s string) bool {
	rank := map[string]int{"h": 6, "m": 5, "s": 4, "ms": 3, "us": 2, "µs": 2, "μs": 2, "ns": 1}
	last := 7
	for _, u := range strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '+' || r == '-' || r >= '0' && r <= '9' }) {
		if rank[u] >= last {
			return false
		}
		last = rank[u]
	}
	return true
}

// durationSyntax is what time.ParseDuration reads, whatever the size:
// compiled on the refusal's path only, not as every procmon (each
// guardian too) starts.
var durationSyntax = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)
})

// formatSeconds shows seconds the way a person would type them: a
// flag's default, a duration in the settings.
func formatSeconds(n int64) string {
	s := (time.Duration(n) * time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// secondsVar adds a seconds flag to c.
func secondsVar(c *cobra.Command, p *int64, name string, value int64, usage string) {
	*p = value
	c.Flags().Var(secondsFlag{p}, name, usage)
}
