// Package proc owns the processes procmon is responsible for. Start (in
// start_linux.go, with the whole launcher-guardian handshake) admits a
// command and hands a detached guardian its spec; the guardian spawns the
// service in its own process group, watches it without reaping it, renews
// its ownership window, carries its output to the log, drains the group
// when custody ends and writes the receipt.
//
// It signals only process groups and descendants that its own records
// prove it started (pid, pgid and process start time must match) and
// never a pid a caller supplied.
package proc
