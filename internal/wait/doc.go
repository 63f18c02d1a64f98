// Package wait owns the conditions of `procmon wait`: strict decoding of a
// condition object, lexical validation of what a condition may name, the
// evaluation of file evidence (one hardened read beneath the component
// root, through a descriptor held since the start, never its path)
// and of output evidence (a literal found in the redacted output stream),
// the wake-ups that tell a waiter when to look again (the guardian's change
// notices, given by the caller, else inotify), and the loop (Evaluate) that
// looks on every wake-up until an outcome is decided.
//
// The package only observes. It never signals a process, never writes
// state, and never follows a symlink while evaluating a file condition:
// a file reached through a symlink is refused, not read. It does not know
// how monitors are stored or how custody is proven: the caller says, on
// every look, whether the monitor has a verified terminal receipt (which
// is what satisfies an exit condition) or has lost verified custody, and
// when its custody lapses unless renewed: the wait looks again then, and
// never waits on its guardian past that moment.
package wait
