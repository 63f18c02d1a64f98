// Command writer is the output source of bench/throughput.sh: it writes N
// bytes of realistic-looking log lines (timestamps, levels, words,
// key=value pairs, URLs, base64 bodies; no credentials) as fast as it can.
//
//	writer -mkpool POOL            build the line pool once (and check that the
//	                               redactor's format rules leave it untouched)
//	writer -pool POOL -bytes N     write N bytes to stdout through a big bufio.Writer
//	writer -pool POOL -bytes N -out FILE [-fsync]
//	                               write N bytes straight into FILE (the baseline)
//	writer ... -oneline            the same bytes with every newline made a space:
//	                               one line of N bytes, no newline at all
//	writer ... -stats FILE         write {"start_ns","end_ns","bytes"} to FILE at
//	                               the end (stdout carries only the payload)
//
// Lines are exactly -line bytes long (default 1024, newline included). The
// pool is generated once so that generating text never limits the write
// rate: the writer cycles through it.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"procmon/internal/logsample"
	"procmon/internal/redact"
)

func main() {
	var (
		mkpool  = flag.String("mkpool", "", "build the pool into this file and exit")
		poolMiB = flag.Int("pool-mib", 8, "pool size in MiB (with -mkpool)")
		lineLen = flag.Int("line", 1024, "line length including the newline (with -mkpool)")
		pool    = flag.String("pool", "", "pool file to cycle through")
		n       = flag.Int64("bytes", 256<<20, "bytes to write")
		out     = flag.String("out", "", "write into this file instead of stdout")
		sync    = flag.Bool("fsync", false, "with -out: fsync the file before stopping the clock")
		oneline = flag.Bool("oneline", false, "replace every newline by a space")
		bufSize = flag.Int("buf", 4<<20, "bufio.Writer size")
		chunk   = flag.Int("chunk", 64<<10, "bytes per Write call into the bufio.Writer")
		stats   = flag.String("stats", "", "write timing JSON here at the end")
	)
	flag.Parse()
	if *mkpool != "" {
		if err := makePool(*mkpool, *poolMiB<<20, *lineLen); err != nil {
			fail(err)
		}
		return
	}
	if *pool == "" {
		fail(fmt.Errorf("-pool is required"))
	}
	data, err := os.ReadFile(*pool)
	if err != nil {
		fail(err)
	}
	if len(data) == 0 {
		fail(fmt.Errorf("empty pool %s", *pool))
	}
	if *oneline {
		data = bytes.ReplaceAll(data, []byte{'\n'}, []byte{' '})
	}

	var w io.Writer = os.Stdout
	var f *os.File
	if *out != "" {
		if f, err = os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
			fail(err)
		}
		w = f
	}
	start := time.Now()
	bw := bufio.NewWriterSize(w, *bufSize)
	left, off := *n, 0
	for left > 0 {
		k := min(int64(*chunk), left, int64(len(data)-off))
		if _, err := bw.Write(data[off : off+int(k)]); err != nil {
			fail(err)
		}
		left -= k
		if off += int(k); off == len(data) {
			off = 0
		}
	}
	if err := bw.Flush(); err != nil {
		fail(err)
	}
	if f != nil {
		if *sync {
			if err := f.Sync(); err != nil {
				fail(err)
			}
		}
		if err := f.Close(); err != nil {
			fail(err)
		}
	}
	end := time.Now()
	if *stats != "" {
		b, _ := json.Marshal(map[string]int64{"start_ns": start.UnixNano(), "end_ns": end.UnixNano(), "bytes": *n})
		if err := os.WriteFile(*stats, append(b, '\n'), 0o600); err != nil {
			fail(err)
		}
	}
}

// makePool writes size bytes of lines of exactly lineLen bytes and checks
// that the redactor (format rules only, no secrets) returns them unchanged,
// so any size difference in output.log is procmon's doing.
func makePool(path string, size, lineLen int) error {
	if lineLen < 200 {
		return fmt.Errorf("-line %d: want at least 200", lineLen)
	}
	buf := logsample.Lines(size, lineLen)
	r, err := redact.New(nil)
	if err != nil {
		return err
	}
	for _, text := range [][]byte{buf, bytes.ReplaceAll(buf, []byte{'\n'}, []byte{' '})} {
		s := r.NewStream()
		got := s.Redact(make([]byte, 0, len(text)+1024), text)
		got = s.Flush(got)
		if !bytes.Equal(got, text) {
			// A chance token (e.g. AKIA... in a base64 body): say so rather
			// than benchmark a stream that shrinks.
			return fmt.Errorf("the pool would be redacted (%d bytes out of %d): change the seed", len(got), len(text))
		}
	}
	return os.WriteFile(path, buf, 0o600)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "writer:", err)
	os.Exit(1)
}
