// Package early does, before main, what a start would otherwise wait for
// longest: it launches the guardian of "procmon start ...", and in a
// guardian it starts catching the signals the guardian must not die of.
//
// A procmon process takes milliseconds to boot, a good part of it
// initializing packages (1.3 ms since the MCP SDK is linked in), and a
// start boots two, one after the other: the caller, then the guardian it
// launches. Go initializes packages in dependency order, choosing among
// those ready the first by import path; this one imports next to
// nothing, so its init runs before the heavy ones, about 1 ms after exec
// and 2 ms before main on the machine measured. Launching from main
// instead took a start from 8.1 to 9.1 ms (medians of 150, interleaved,
// idle 2-core machine), 12% of it. Both jobs
// can also be asked for later (LaunchGuardian, CatchSignals) by code that
// runs without that init: in-process tests, a start whose state directory
// is not made yet.
//
// It acts in every program that imports it: procmon, and the test
// binaries of its packages when they are started as procmon. It decides
// nothing a command decides: a guardian launched here for a start that is
// then refused is abandoned, as one launched from main would be. It
// imports nothing that pulls in reflection, path/filepath, x/sys/unix or
// the rest of procmon, whose inits run late: its own would run after
// theirs.
package early

import (
	"errors"
	"os"
	"path"
)

// GuardianArg is the hidden subcommand that runs a guardian:
// "procmon __guardian STATE_DIR MONITOR_ID".
const GuardianArg = "__guardian"

// ErrNoStateDir means that no variable names a state directory.
var ErrNoStateDir = errors.New("no state directory: set PROCMON_STATE_DIR, XDG_STATE_HOME or HOME")

// StateDir returns the absolute path of the state directory named by the
// environment: $PROCMON_STATE_DIR, else $XDG_STATE_HOME/procmon, else
// $HOME/.local/state/procmon.
func StateDir(getenv func(string) string) (string, error) {
	if p := getenv("PROCMON_STATE_DIR"); p != "" {
		return abs(p)
	}
	if p := getenv("XDG_STATE_HOME"); p != "" {
		return abs(path.Join(p, "procmon"))
	}
	home := getenv("HOME")
	if home == "" {
		return "", ErrNoStateDir
	}
	return path.Join(home, ".local", "state", "procmon"), nil
}

// abs is filepath.Abs, which would pull in path/filepath and with it a
// later init (see the package comment). Linux paths are slash paths.
func abs(p string) (string, error) {
	if path.IsAbs(p) {
		return path.Clean(p), nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return path.Join(wd, p), nil
}
