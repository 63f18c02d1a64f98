package state

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCustodyFence: a monitor directory is made with its fence open;
// giving custody up closes it for good; a directory without one (made by
// an earlier procmon) is unfenced; and what could have been planted in its
// place (a link, a FIFO, another user's file) reads as given up, without
// blocking, and giving up leaves it alone.
func TestCustodyFence(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	id := "m_" + "abcdefghijklmnopqrstuvwxyz"
	// Whatever the umask, the fence is made open. (Without root, a umask
	// that takes the owner's write bit fails the directory itself.)
	mask := 0o077
	if os.Geteuid() == 0 {
		mask = 0o277
	}
	old := unix.Umask(mask)
	err = d.CreateMonitorDir(id, Maker{})
	unix.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	fence := filepath.Join(d.MonitorDir(id), CustodyName)
	if got := d.Custody(id); got != CustodyOpen {
		t.Fatalf("a new directory's fence reads %v, want open", got)
	}
	for range 2 {
		if err := d.GiveUpCustody(id); err != nil {
			t.Fatal(err)
		}
		if got := d.Custody(id); got != CustodyGivenUp {
			t.Fatalf("after giving custody up the fence reads %v", got)
		}
	}
	os.Remove(fence)
	if got := d.Custody(id); got != CustodyUnfenced {
		t.Fatalf("a directory without a fence reads %v, want unfenced", got)
	}
	if err := d.GiveUpCustody(id); err != nil {
		t.Fatalf("giving up custody without a fence: %v", err)
	}

	target := filepath.Join(t.TempDir(), "open")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	planted := map[string]func() error{
		"a link to an open fence": func() error { return os.Symlink(target, fence) },
		"a FIFO":                  func() error { return unix.Mkfifo(fence, 0o600) },
		"a file with data":        func() error { return os.WriteFile(fence, []byte("x"), 0o600) },
		"a hard link to another monitor's open fence": func() error { return os.Link(target, fence) },
		"another user's file": func() error {
			if os.Geteuid() != 0 {
				t.Log("not root: another user's file is not planted")
				return os.WriteFile(fence, nil, 0o400)
			}
			if err := os.WriteFile(fence, nil, 0o600); err != nil {
				return err
			}
			return os.Chown(fence, 65534, 65534)
		},
	}
	for what, plant := range planted {
		os.Remove(fence)
		if err := plant(); err != nil {
			t.Fatal(err)
		}
		if got := d.Custody(id); got != CustodyGivenUp {
			t.Errorf("%s reads %v, want given up", what, got)
		}
		if err := d.GiveUpCustody(id); err != nil && what != "another user's file" {
			t.Errorf("giving up custody over %s: %v", what, err)
		}
	}
	if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("giving up custody followed the link to its target: %v %v", fi.Mode(), err)
	}
}
