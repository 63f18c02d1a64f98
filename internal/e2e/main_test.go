package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	// As itself, the binary takes test flags only. A command line meant
	// for one of the commands, whose argv[0] was lost on the way (a
	// wrapper that runs the binary by its path), would otherwise run every
	// test again, and so would each of those runs.
	if _, ok := commands[filepath.Base(os.Args[0])]; !ok && len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-") {
		fmt.Fprintf(os.Stderr, "%s: run with arguments %q: a command is named by argv[0]\n", os.Args[0], os.Args[1:])
		os.Exit(2)
	}
	testscript.Main(m, commands)
}
