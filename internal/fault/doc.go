// Package fault marks the points of custody where the fault tests stop a
// procmon process, so as to kill it exactly there: between the spawn and
// the first record, in the middle of a drain, before the receipt, after
// the receipt is stored but before the cancel that waits for it is
// answered.
//
// Only a binary built with the faultpoints tag acts on a point (see
// faultpoints_on.go): there, a process whose environment says
// PROCMON_FAULT_AT=NAME stops itself with SIGSTOP when it reaches the point
// NAME, and the test that set it kills or resumes it. There too, the wall
// clock that procmon reads may be stepped by a test (WallStepMs). In every
// other build Point, WallStepMs and Env do nothing and cost nothing.
package fault
