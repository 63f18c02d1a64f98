package state

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFirstRecordTempIsChecked: a FIFO or a link planted where the first
// record's temp file was made is refused at once by the start's sync and
// by the guardian's open, never waited on or followed.
func TestFirstRecordTempIsChecked(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, plant := range []func(string) error{
		func(p string) error { return unix.Mkfifo(p, 0o600) },
		func(p string) error { return os.Symlink(target, p) },
	} {
		id := "m_" + "abcdefghijklmnopqrstuvwxy" + string(rune('a'+i))
		if err := d.CreateMonitorDir(id, Maker{}); err != nil {
			t.Fatal(err)
		}
		temp := filepath.Join(d.MonitorDir(id), firstRecordTemp)
		os.Remove(temp)
		if err := plant(temp); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 2)
		go func() { done <- d.SyncMonitorDir(id) }()
		go func() {
			f, err := d.OpenFirstRecord(id)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		for range 2 {
			select {
			case err := <-done:
				if err == nil {
					t.Errorf("plant %d: the first record's temp file was opened", i)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("plant %d: opening the first record's temp file blocked", i)
			}
		}
	}
}
