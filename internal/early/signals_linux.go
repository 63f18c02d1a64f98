package early

import (
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

// Signals are a guardian's signals, caught by CatchSignals.
type Signals struct {
	// Termination receives SIGTERM, SIGINT, SIGHUP and SIGQUIT, which a
	// guardian answers by draining.
	Termination <-chan os.Signal
	// Child receives SIGCHLD: a descendant has exited and may need reaping.
	Child <-chan os.Signal
	// TerminationCaught is closed once the termination signals are caught:
	// from then on none of them can kill the process.
	TerminationCaught <-chan struct{}
	// AllCaught is closed once SIGPIPE and SIGCHLD are caught too (SIGPIPE
	// only so that a write to a caller that died cannot kill the guardian),
	// and every other signal whose default would end the guardian.
	AllCaught <-chan struct{}
	// Stray receives those others: a guardian notes them and keeps
	// custody.
	Stray <-chan os.Signal
}

// straySignals are the signals that would end a guardian, with or without
// a stack dump, but mean nothing to it: sent by kill (a synchronous fault
// of its own still crashes it), they are caught and noted. They are caught
// rather than ignored, so that the service, whose handlers exec resets,
// starts with their defaults.
var straySignals = []os.Signal{
	syscall.SIGTRAP, syscall.SIGSYS, syscall.SIGSTKFLT, syscall.SIGABRT, syscall.SIGILL,
	syscall.SIGBUS, syscall.SIGFPE, syscall.SIGSEGV,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGVTALRM,
	syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGPWR, syscall.SIGIO,
}

// catching is set once CatchSignals has been called (the tests ask
// whether init did).
var catching atomic.Bool

var signals = sync.OnceValue(func() *Signals {
	catching.Store(true)
	termination, child, stray := make(chan os.Signal, 1), make(chan os.Signal, 1), make(chan os.Signal, 4)
	terminationCaught, allCaught := make(chan struct{}), make(chan struct{})
	// Each signal caught is a round trip to the runtime's signal thread,
	// 0.05 to 0.2 ms apiece: they are caught in the background, the
	// termination signals first, which the guardian waits for before it
	// spawns anything.
	go func() {
		signal.Notify(termination, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
		close(terminationCaught)
		signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
		signal.Notify(child, syscall.SIGCHLD)
		signal.Notify(stray, straySignals...)
		close(allCaught)
	}()
	return &Signals{Termination: termination, Child: child, TerminationCaught: terminationCaught, AllCaught: allCaught, Stray: stray}
})

// CatchSignals starts catching a guardian's signals, the first time it is
// called, and returns them. A guardian's init has called it already.
func CatchSignals() *Signals { return signals() }
