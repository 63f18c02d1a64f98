//go:build !linux

// Package cmd is procmon's command line. procmon needs Linux (pidfd,
// waitid, openat2); elsewhere it builds, and every command fails with
// unsupported_platform.
package cmd

import (
	"os"
	"runtime"

	"procmon/internal/protocol"
)

// Main reports that this platform is unsupported and returns its status.
func Main() int {
	e := protocol.Errorf(protocol.CodeUnsupportedPlatform, "procmon needs Linux 5.6 or newer (pidfd, waitid, openat2); this is %s", runtime.GOOS)
	protocol.WriteJSON(os.Stdout, e.Object(), false)
	return e.Code.ExitStatus()
}
