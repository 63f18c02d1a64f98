// Package wait owns the conditions of `procmon wait`: strict decoding of a
// condition object, lexical validation of what a condition may name, the
// evaluation of file evidence (one hardened read beneath the component root)
// and of output evidence (a literal found in the redacted output stream),
// and the inotify wake-up that tells a waiter when to look again.
//
// The package only observes. It never signals a process, never writes
// state, and never follows a symlink while evaluating a file condition:
// a file reached through a symlink is refused, not read. Whether an exit
// condition holds is decided by the caller from a verified terminal
// receipt; this package only decodes that kind.
package wait
