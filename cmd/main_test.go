//go:build linux

package cmd

import (
	"os"
	"testing"

	"procmon/internal/proc"
)

// TestMain lets the commands these tests run in-process launch guardians:
// a guardian is this test binary, started as "procmon __guardian ...".
// (Without this, it would run the tests again.)
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == proc.GuardianArg {
		os.Exit(Main())
	}
	os.Exit(m.Run())
}

// rewriteGoldens reports whether PROCMON_UPDATE=1 is set: the one switch,
// for every package, that has a test rewrite the files it compares with
// (here the completion scripts and the man pages) instead of failing.
// It is read in the test, where go test's cache sees it.
func rewriteGoldens() bool { return os.Getenv("PROCMON_UPDATE") == "1" }

// regenerate says how to bring the files rewriteGoldens writes up to date.
const regenerate = "regenerate them with: PROCMON_UPDATE=1 go test ./cmd"
