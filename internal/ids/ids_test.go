package ids

import (
	"regexp"
	"testing"
)

func TestNewID(t *testing.T) {
	if sysGetrandom != 0 && !getrandom(make([]byte, 26)) {
		t.Error("getrandom failed: is sysGetrandom the right number?")
	}
	refused := func([]byte) bool { return false }
	for name, id := range map[string]func() string{
		"from getrandom":               func() string { return NewID("m_") },
		"from the runtime's generator": func() string { return newID("m_", refused) },
	} {
		valid := regexp.MustCompile(`^m_[0-9a-z]{26}$`)
		seen := map[string]bool{}
		for i := 0; i < 1000; i++ {
			s := id()
			if !valid.MatchString(s) || seen[s] {
				t.Fatalf("%s, id %d: %q (seen before: %v)", name, i, s, seen[s])
			}
			seen[s] = true
		}
	}
}
