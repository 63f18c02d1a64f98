package e2e

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"procmon/cmd"
)

// TestMain makes this test binary every program the tests run: procmon
// (and so its guardians), the fake children and withoutwnowait. Started
// under one of those names it is that program; started as itself it puts
// a copy under each name first in $PATH, where the scripts and the
// services the tests start find them, and runs the tests.
func TestMain(m *testing.M) {
	commands := map[string]func(){
		"procmon":        func() { os.Exit(cmd.Main()) },
		"withoutwnowait": withoutWNOWAIT,
	}
	for name, f := range fakeChildren {
		commands[name] = f
	}
	testscript.Main(m, commands)
}
