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
