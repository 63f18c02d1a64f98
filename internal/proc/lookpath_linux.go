package proc

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"procmon/internal/protocol"
)

// lookPath resolves argv[0] the way the child's own environment would:
// through the child's PATH, and relative to its working directory.
func lookPath(name string, env []string, cwd string) (string, error) {
	if name == "" {
		return "", protocol.Errorf(protocol.CodeInvalidRequest, "argv[0] is empty").With("field", "argv")
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		reason := "not a directory"
		if err != nil {
			reason = err.Error()
		}
		return "", protocol.Errorf(protocol.CodeExecFailed, "working directory %s: %s", cwd, reason).With("cwd", cwd)
	}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if err := executable(p); err != nil {
			return "", protocol.Errorf(protocol.CodeExecFailed, "cannot execute %q: %v", name, err).With("argv0", name)
		}
		return p, nil
	}
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", protocol.Errorf(protocol.CodeExecFailed, "cannot execute %q: not found in PATH", name).With("argv0", name)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return unix.EISDIR
	}
	if err := unix.Access(p, unix.X_OK); err != nil {
		return err
	}
	if fi.Mode()&0o111 == 0 {
		return unix.EACCES
	}
	return nil
}
