package state

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering keeps the store below the processes: package state never
// depends on the packages that start or watch them.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch dep {
		case "procmon/internal/proc", "procmon/internal/early", "procmon/internal/wait", "procmon/cmd":
			t.Errorf("package state depends on %s", dep)
		}
	}
}
