// Package e2e holds the tests that drive procmon end to end, as its users
// do: the testscripts of the module's testscripts/ folder, and the Go tests
// that check what a script cannot say (exit statuses after signals, the
// descriptors a guardian keeps, MCP clients, and, built with the
// faultpoints tag, the fault suite). It has no code outside its tests: its
// test binary, set up by TestMain, runs as procmon, as procmon's guardians
// and as the fake children the tests start.
package e2e
