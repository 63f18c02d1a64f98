//go:build linux

// Command inotifywaiter is the baseline for procmon wait in
// bench/wait_latency.sh: the least a waiter must do to notice a text in a
// plain file that another process writes. It is not part of procmon.
//
//	inotifywaiter FILE TEXT   as soon as FILE holds TEXT, print the byte
//	                          offset where it starts and exit 0
//
// It watches FILE's directory (so a file that does not exist yet is seen
// when it appears), reads only what was appended since its last look, and
// keeps len(TEXT)-1 bytes so a text split between two writes is found.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 3 || os.Args[2] == "" {
		fmt.Fprintln(os.Stderr, "usage: inotifywaiter FILE TEXT")
		os.Exit(2)
	}
	offset, err := waitFor(os.Args[1], []byte(os.Args[2]))
	if err != nil {
		fmt.Fprintln(os.Stderr, "inotifywaiter:", err)
		os.Exit(1)
	}
	fmt.Println(offset)
}

func waitFor(path string, text []byte) (int64, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return 0, fmt.Errorf("inotify: %w", err)
	}
	mask := uint32(unix.IN_MODIFY | unix.IN_CREATE | unix.IN_MOVED_TO)
	if _, err := unix.InotifyAddWatch(fd, filepath.Dir(path), mask); err != nil {
		return 0, fmt.Errorf("watch %s: %w", filepath.Dir(path), err)
	}
	var (
		f      *os.File
		offset int64
		carry  []byte
		buf    = make([]byte, 64<<10)
		events = make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	)
	// The watch is in place before the first look, so nothing written
	// after that look goes unnoticed.
	for {
		if f == nil {
			f, _ = os.Open(path)
		}
		for f != nil {
			n, err := f.ReadAt(buf, offset)
			if n > 0 {
				window := append(carry, buf[:n]...)
				if i := bytes.Index(window, text); i >= 0 {
					return offset - int64(len(carry)) + int64(i), nil
				}
				offset += int64(n)
				keep := min(len(text)-1, len(window))
				carry = append(carry[:0:0], window[len(window)-keep:]...)
			}
			if err == io.EOF || n == 0 {
				break
			}
			if err != nil {
				return 0, err
			}
		}
		if _, err := unix.Read(fd, events); err != nil && err != unix.EINTR {
			return 0, fmt.Errorf("read inotify: %w", err)
		}
	}
}
