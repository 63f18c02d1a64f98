//go:build linux

package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/redact"
)

var (
	copyMode   = flag.Bool("copy", false, "copy stdin to -out like a guardian, then report")
	copyOut    = flag.String("out", "", "with -copy: the log file to append to")
	noRedact   = flag.Bool("no-redact", false, "with -copy: write the bytes as read (what the loop costs without the redactor)")
	pipeline   = flag.Bool("pipeline", false, "with -copy: read, redact and write in three goroutines (GOMAXPROCS 2) instead of one loop")
	readSize   = flag.Int("read", 256<<10, "with -copy: pipe read size")
	copySecret = flag.Int("copy-secrets", 40, "with -copy: random 32-byte secrets registered")
)

// copyLoop mirrors internal/proc's outputCopier.run: 1 MiB pipe, 256 KiB
// reads, Redact into a reused buffer, O_APPEND writes with writeback
// started every 8 MiB, fsync at the end.
// It prints one JSON line: bytes, wall and CPU seconds.
func copyLoop() int {
	if *pipeline {
		runtime.GOMAXPROCS(2)
	} else {
		runtime.GOMAXPROCS(1) // as the guardian runs
	}
	unix.FcntlInt(0, unix.F_SETPIPE_SZ, 1<<20)
	log, err := os.OpenFile(*copyOut, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	r, err := redact.New(randomSecrets(rand.New(rand.NewPCG(40, 41)), *copySecret))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s := r.NewStream()
	in := os.Stdin
	var written, unsynced int64
	write := func(b []byte) {
		n, _ := log.Write(b)
		written += int64(n)
		if unsynced += int64(n); unsynced >= 8<<20 {
			unix.SyncFileRange(int(log.Fd()), written-unsynced, unsynced, unix.SYNC_FILE_RANGE_WRITE)
			unsynced = 0
		}
	}
	c0, w0 := cpuTime(), time.Now()
	var n int64
	if !*pipeline {
		buf := make([]byte, *readSize)
		out := make([]byte, 0, *readSize+256)
		for {
			k, err := in.Read(buf)
			if k > 0 {
				n += int64(k)
				if *noRedact {
					write(buf[:k])
				} else {
					out = s.Redact(out[:0], buf[:k])
					write(out)
				}
			}
			if err != nil {
				break
			}
		}
		write(s.Flush(out[:0]))
	} else {
		// Three stages joined by channels of recycled buffers: the kernel
		// copies (pipe read, page-cache write) overlap the redaction.
		const depth = 4
		free := make(chan []byte, depth)
		for range depth {
			free <- make([]byte, *readSize)
		}
		outFree := make(chan []byte, depth)
		for range depth {
			outFree <- make([]byte, 0, *readSize+256)
		}
		raw := make(chan []byte, depth)
		red := make(chan []byte, depth)
		done := make(chan struct{})
		go func() {
			for {
				b := <-free
				k, err := in.Read(b[:cap(b)])
				if k > 0 {
					raw <- b[:k]
					n += int64(k)
				} else {
					free <- b
				}
				if err != nil {
					close(raw)
					return
				}
			}
		}()
		go func() {
			for b := range raw {
				o := <-outFree
				if *noRedact {
					o = append(o[:0], b...)
				} else {
					o = s.Redact(o[:0], b)
				}
				free <- b
				red <- o
			}
			o := <-outFree
			red <- s.Flush(o[:0])
			close(red)
		}()
		go func() {
			for o := range red {
				write(o)
				outFree <- o
			}
			close(done)
		}()
		<-done
	}
	log.Sync()
	log.Close()
	cpu, wall := cpuTime()-c0, time.Since(w0)
	fmt.Printf("{\"bytes\": %d, \"wall_s\": %.4f, \"cpu_s\": %.4f}\n", n, wall.Seconds(), cpu.Seconds())
	return 0
}
