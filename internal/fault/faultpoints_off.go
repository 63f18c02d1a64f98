//go:build !faultpoints

package fault

// Point marks a fault point; without the faultpoints tag it does nothing.
func Point(name string) {}

// WallStepMs is how far the fault tests have stepped the wall clock;
// without the faultpoints tag, 0.
func WallStepMs() int64 { return 0 }

// Env is what a guardian's environment needs so that its points act as its
// launcher's do; without the faultpoints tag, nothing.
func Env() []string { return nil }
