//go:build !faultpoints

package fault

// Point marks a fault point; without the faultpoints tag it does nothing.
func Point(name string) {}

// Env is what a guardian's environment needs so that its points act as its
// launcher's do; without the faultpoints tag, nothing.
func Env() []string { return nil }
