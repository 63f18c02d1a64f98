//go:build linux

package wait

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testRoot makes a component root and opens it the way a waiter does.
func testRoot(t *testing.T) (string, int) {
	t.Helper()
	root := t.TempDir()
	fd, err := OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return root, fd
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func fileCond(p string) Condition { return Condition{Kind: KindFile, Path: p} }

// wantNotSatisfied fails unless obs is unsatisfied for reason.
func wantNotSatisfied(t *testing.T, obs FileObservation, reason string) {
	t.Helper()
	if obs.Satisfied || obs.Refusal != reason {
		t.Fatalf("observation %+v; want unsatisfied with %q", obs, reason)
	}
}

func TestOpenRootRefusesMissingAndFiles(t *testing.T) {
	root := t.TempDir()
	if fd, err := OpenRoot(filepath.Join(root, "missing")); err == nil {
		unix.Close(fd)
		t.Fatal("OpenRoot of a missing directory succeeded")
	}
	writeFile(t, filepath.Join(root, "f"), "x")
	if fd, err := OpenRoot(filepath.Join(root, "f")); err == nil {
		unix.Close(fd)
		t.Fatal("OpenRoot of a regular file succeeded")
	}
}

func TestCheckFileRegular(t *testing.T) {
	root, fd := testRoot(t)
	const content = "{\"ready\":true}\n"
	writeFile(t, filepath.Join(root, "run", "ready.json"), content)

	obs := CheckFile(fd, fileCond("run/ready.json"))
	if !obs.Satisfied || obs.Refusal != "" {
		t.Fatalf("observation %+v; want satisfied", obs)
	}
	if obs.Path != "run/ready.json" || obs.SHA256 != digestOf(content) || obs.Size != int64(len(content)) {
		t.Fatalf("observation %+v; want path, sha256 %s and size %d", obs, digestOf(content), len(content))
	}
}

func TestCheckFileEmpty(t *testing.T) {
	root, fd := testRoot(t)
	writeFile(t, filepath.Join(root, "ready"), "")
	obs := CheckFile(fd, fileCond("ready"))
	if !obs.Satisfied || obs.Size != 0 || obs.SHA256 != digestOf("") {
		t.Fatalf("observation %+v; want satisfied, empty", obs)
	}
}

func TestCheckFileDigest(t *testing.T) {
	root, fd := testRoot(t)
	writeFile(t, filepath.Join(root, "ready.json"), "v2")

	c := fileCond("ready.json")
	c.SHA256 = digestOf("v2")
	if obs := CheckFile(fd, c); !obs.Satisfied || obs.Refusal != "" {
		t.Fatalf("matching digest: %+v; want satisfied", obs)
	}

	c.SHA256 = digestOf("v1")
	obs := CheckFile(fd, c)
	wantNotSatisfied(t, obs, ReasonDigestMismatch)
	if obs.SHA256 != digestOf("v2") || obs.Size != 2 {
		t.Fatalf("digest mismatch reports %+v; want the digest and size of what was read", obs)
	}
}

func TestCheckFileSymlinkFile(t *testing.T) {
	root, fd := testRoot(t)
	writeFile(t, filepath.Join(root, "real.json"), "x")
	outside := filepath.Join(t.TempDir(), "secret")
	writeFile(t, outside, "secret")
	for name, target := range map[string]string{
		"rel.json":      "real.json",
		"abs.json":      filepath.Join(root, "real.json"),
		"outside.json":  outside,
		"up.json":       "../" + filepath.Base(root) + "/real.json",
		"dangling.json": "nowhere",
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
		obs := CheckFile(fd, fileCond(name))
		wantNotSatisfied(t, obs, ReasonSymlink)
		if obs.SHA256 != "" {
			t.Fatalf("%s: a refused symlink was read: %+v", name, obs)
		}
	}
}

func TestCheckFileSymlinkParent(t *testing.T) {
	root, fd := testRoot(t)
	writeFile(t, filepath.Join(root, "realdir", "ready.json"), "x")
	if err := os.Symlink("realdir", filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "ready.json"), "x")
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	wantNotSatisfied(t, CheckFile(fd, fileCond("linkdir/ready.json")), ReasonSymlink)
	wantNotSatisfied(t, CheckFile(fd, fileCond("out/ready.json")), ReasonSymlink)
	// The same file through its real path is fine.
	if obs := CheckFile(fd, fileCond("realdir/ready.json")); !obs.Satisfied {
		t.Fatalf("real path: %+v; want satisfied", obs)
	}
}

func TestCheckFileHardlink(t *testing.T) {
	root, fd := testRoot(t)
	writeFile(t, filepath.Join(root, "a"), "x")
	if err := os.Link(filepath.Join(root, "a"), filepath.Join(root, "b")); err != nil {
		t.Fatal(err)
	}
	wantNotSatisfied(t, CheckFile(fd, fileCond("a")), ReasonHardlinked)
	wantNotSatisfied(t, CheckFile(fd, fileCond("b")), ReasonHardlinked)
	// Once the other name is gone the file is the component's own again.
	if err := os.Remove(filepath.Join(root, "b")); err != nil {
		t.Fatal(err)
	}
	if obs := CheckFile(fd, fileCond("a")); !obs.Satisfied {
		t.Fatalf("after unlink: %+v; want satisfied", obs)
	}
}

func TestCheckFileNotRegular(t *testing.T) {
	root, fd := testRoot(t)
	if err := unix.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(root, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, p := range []string{"fifo", "dir", "sock"} {
		wantNotSatisfied(t, CheckFile(fd, fileCond(p)), ReasonNotRegular)
	}
	if _, err := os.Stat("/dev/null"); err == nil {
		// A device node is refused without being opened for reading.
		if err := unix.Mknod(filepath.Join(root, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err == nil {
			wantNotSatisfied(t, CheckFile(fd, fileCond("null")), ReasonNotRegular)
		}
	}
}

func TestCheckFileAbsent(t *testing.T) {
	root, fd := testRoot(t)
	writeFile(t, filepath.Join(root, "file"), "x")
	for _, p := range []string{"ready.json", "missing/dir/ready.json", "file/below"} {
		obs := CheckFile(fd, fileCond(p))
		wantNotSatisfied(t, obs, ReasonAbsent)
	}
	// It may appear later.
	writeFile(t, filepath.Join(root, "ready.json"), "x")
	if obs := CheckFile(fd, fileCond("ready.json")); !obs.Satisfied {
		t.Fatalf("after creation: %+v; want satisfied", obs)
	}
}

func TestCheckFileTooLarge(t *testing.T) {
	root, fd := testRoot(t)
	f, err := os.Create(filepath.Join(root, "big"))
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: costs no disk and no read.
	if err := f.Truncate(MaxFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	obs := CheckFile(fd, fileCond("big"))
	wantNotSatisfied(t, obs, ReasonTooLarge)
	if obs.SHA256 != "" {
		t.Fatalf("too large file was hashed: %+v", obs)
	}
}

func TestCheckFileInvalidPath(t *testing.T) {
	root, fd := testRoot(t)
	writeFile(t, filepath.Join(root, "x"), "x")
	for _, p := range []string{"../x", "/etc/passwd", "./x", "a//x", "", "x/"} {
		wantNotSatisfied(t, CheckFile(fd, fileCond(p)), ReasonInvalidPath)
	}
	wantNotSatisfied(t, CheckFile(fd, Condition{Kind: KindOutput, Path: "x"}), ReasonInvalidPath)
}

// TestCheckFileUnstable changes the file between the read and the second
// fstat, where a concurrent writer would, and expects no satisfaction.
func TestCheckFileUnstable(t *testing.T) {
	cases := map[string]func(t *testing.T, name string){
		"append": func(t *testing.T, name string) {
			f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("more"); err != nil {
				t.Fatal(err)
			}
		},
		"rewrite same size": func(t *testing.T, name string) {
			f, err := os.OpenFile(name, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte("X"), 0); err != nil {
				t.Fatal(err)
			}
		},
		"mtime": func(t *testing.T, name string) {
			ts := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
			if err := os.Chtimes(name, ts, ts); err != nil {
				t.Fatal(err)
			}
		},
		"ctime": func(t *testing.T, name string) {
			// ctime cannot be set, and a filesystem with coarse
			// timestamps may not advance it for a change made in the
			// same tick as the last; change the mode until it moves.
			var st0 unix.Stat_t
			if err := unix.Stat(name, &st0); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for mode := os.FileMode(0o600); ; mode ^= 0o044 {
				if err := os.Chmod(name, mode); err != nil {
					t.Fatal(err)
				}
				var st unix.Stat_t
				if err := unix.Stat(name, &st); err != nil {
					t.Fatal(err)
				}
				if st.Ctim != st0.Ctim {
					return
				}
				if time.Now().After(deadline) {
					t.Fatal("ctime never changed")
				}
			}
		},
		"renamed over": func(t *testing.T, name string) {
			tmp := name + ".tmp"
			writeFile(t, tmp, "v1")
			if err := os.Rename(tmp, name); err != nil {
				t.Fatal(err)
			}
		},
		"removed": func(t *testing.T, name string) {
			if err := os.Remove(name); err != nil {
				t.Fatal(err)
			}
		},
	}
	for label, change := range cases {
		t.Run(label, func(t *testing.T) {
			root, fd := testRoot(t)
			name := filepath.Join(root, "ready.json")
			writeFile(t, name, "v1")
			// An old mtime makes any write in the hook change it, even
			// on a filesystem with coarse timestamps.
			old := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
			if err := os.Chtimes(name, old, old); err != nil {
				t.Fatal(err)
			}
			c := fileCond("ready.json")
			c.SHA256 = digestOf("v1")
			ran := false
			obs := checkFile(fd, c, func() { ran = true; change(t, name) })
			if !ran {
				t.Fatal("the hook did not run")
			}
			wantNotSatisfied(t, obs, ReasonUnstable)
		})
	}
}

func TestCheckFileHardlinkedDuringRead(t *testing.T) {
	root, fd := testRoot(t)
	name := filepath.Join(root, "ready.json")
	writeFile(t, name, "v1")
	obs := checkFile(fd, fileCond("ready.json"), func() {
		if err := os.Link(name, filepath.Join(root, "other")); err != nil {
			t.Fatal(err)
		}
	})
	wantNotSatisfied(t, obs, ReasonHardlinked)
}

// TestCheckFileParentReplacedDuringRead moves the directory away and puts
// another in its place: the descriptor's inode is untouched, so only
// looking the path up again notices that the path now names another file.
func TestCheckFileParentReplacedDuringRead(t *testing.T) {
	root, fd := testRoot(t)
	writeFile(t, filepath.Join(root, "run", "ready.json"), "v1")
	c := fileCond("run/ready.json")
	c.SHA256 = digestOf("v1")
	obs := checkFile(fd, c, func() {
		if err := os.Rename(filepath.Join(root, "run"), filepath.Join(root, "run.old")); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(root, "run", "ready.json"), "v2")
	})
	wantNotSatisfied(t, obs, ReasonUnstable)
}
