// Package early does, before main, what a start would otherwise wait for
// longest: it launches the guardian of "procmon start ...", and in a
// guardian it starts catching the signals the guardian must not die of.
//
// A procmon process boots in about a millisecond, a good part of it
// initializing packages, and a start boots two, one after the other: the
// caller, then the guardian it launches. Go initializes packages in
// dependency order, choosing among those ready the first by import path;
// this one imports next to nothing, so its init runs about halfway
// through, 0.3 to 0.6 ms before main on the machine measured. Both jobs
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
	"math/rand/v2"
	"os"
	"path"
	"syscall"
	"unsafe"
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

// NewID returns prefix followed by 26 random characters of [0-9a-z]. The
// bytes come from getrandom(2), called by its number: crypto/rand would
// cost every procmon process, guardians included, the initialization of
// its generator's packages, and x/sys/unix a later init. Where getrandom
// fails (a seccomp filter may refuse it) they come from math/rand/v2,
// which the runtime seeds from random bytes the kernel gives every
// process at exec: an id needs to be unique, not secret, and this never
// fails.
func NewID(prefix string) string { return newID(prefix, getrandom) }

func newID(prefix string, fill func([]byte) bool) string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
	var raw [26]byte
	if !fill(raw[:]) {
		for i := range raw {
			raw[i] = byte(rand.Uint32())
		}
	}
	for i, b := range raw {
		raw[i] = alphabet[int(b)%len(alphabet)]
	}
	return prefix + string(raw[:])
}

// getrandom fills b from the kernel's random source, and reports whether
// it could.
func getrandom(b []byte) bool {
	if sysGetrandom == 0 {
		return false
	}
	for len(b) > 0 {
		n, _, errno := syscall.Syscall(sysGetrandom, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 || n == 0 {
			return false
		}
		b = b[n:]
	}
	return true
}
