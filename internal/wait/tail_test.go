//go:build linux

package wait

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestTailLastLines(t *testing.T) {
	name := filepath.Join(t.TempDir(), "log")
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	writeFile(t, name, b.String())
	if got, want := Tail(opener(name), 3, 1<<20, true), []string{"line 8", "line 9", "line 10"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Tail = %q; want %q", got, want)
	}
	// Fewer lines than asked for.
	if got := Tail(opener(name), 50, 1<<20, true); len(got) != 10 || got[0] != "line 1" {
		t.Fatalf("Tail = %q; want all 10 lines", got)
	}
}

func TestTailUnterminatedLastLine(t *testing.T) {
	name := filepath.Join(t.TempDir(), "log")
	writeFile(t, name, "a\nb\npartial")
	if got, want := Tail(opener(name), 2, 100, true), []string{"b", "partial"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Tail = %q; want %q", got, want)
	}
}

func TestTailLongLines(t *testing.T) {
	name := filepath.Join(t.TempDir(), "log")
	writeFile(t, name, "short\n"+strings.Repeat("x", 100)+"\n")
	got := Tail(opener(name), 5, 10, true)
	if want := []string{strings.Repeat("x", 9)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Tail = %q; want %q", got, want)
	}

	// A long line in the middle is cut; what follows it is whole.
	writeFile(t, name, "a\n"+strings.Repeat("y", 50)+"\nb\nc\n")
	got = Tail(opener(name), 5, 20, true)
	total := 0
	for _, l := range got {
		total += len(l)
	}
	if total > 20 || len(got) != 3 || got[1] != "b" || got[2] != "c" || strings.Trim(got[0], "y") != "" {
		t.Fatalf("Tail = %q; want a cut run of y, then b and c, within 20 bytes", got)
	}
}

func TestTailCutsAtCharacter(t *testing.T) {
	name := filepath.Join(t.TempDir(), "log")
	writeFile(t, name, "ééééé\n")         // 10 bytes of text
	got := Tail(opener(name), 1, 6, true) // the window starts inside an é
	if want := []string{"éé"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Tail = %q; want %q", got, want)
	}
}

func TestTailUnreadable(t *testing.T) {
	dir := t.TempDir()
	if got := Tail(opener(filepath.Join(dir, "missing")), 3, 100, true); got != nil {
		t.Fatalf("Tail of a missing file = %q", got)
	}
	if got := Tail(opener(dir), 3, 100, true); got != nil {
		t.Fatalf("Tail of a directory = %q", got)
	}
	name := filepath.Join(dir, "empty")
	writeFile(t, name, "")
	if got := Tail(opener(name), 3, 100, true); got != nil {
		t.Fatalf("Tail of an empty file = %q", got)
	}
	writeFile(t, name, "x\n")
	if got := Tail(opener(name), 0, 100, true); got != nil {
		t.Fatalf("Tail of no lines = %q", got)
	}
}

// opener opens path for Tail.
func opener(path string) func() (*os.File, error) {
	return func() (*os.File, error) { return os.Open(path) }
}
