package state

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// tempPrefix marks files that a writer has not yet renamed into place; a
// reader ignores them, whoever left them.
const tempPrefix = ".tmp-"

// writeFileAtomic replaces dir/name with data so that a reader sees either
// the old file or the new one, never a mix. With durable false it skips the
// fsyncs, for records whose loss in a crash is harmless.
func writeFileAtomic(dir, name string, data []byte, durable bool) (err error) {
	f, err := os.CreateTemp(dir, tempPrefix+name+"-")
	if err != nil {
		return fmt.Errorf("create temp file for %s: %w", name, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if durable {
		if err = f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", name, err)
		}
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	if err = os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("rename %s into place: %w", name, err)
	}
	if durable {
		if err = syncDir(dir); err != nil {
			return err
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open %s to fsync: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// isTemp reports whether a directory entry is a writer's temp file.
func isTemp(name string) bool { return strings.HasPrefix(name, tempPrefix) }
