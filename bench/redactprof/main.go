//go:build linux

// Command redactprof measures the guardian's redaction step on its own, in
// the guardian's shape: the text bench/writer produces, fed in 256 KiB
// chunks (the guardian's read size) to one Stream of a Redactor built
// from random 32-byte secrets, on one thread (guardians run one P after the handoff).
// It reports MiB per CPU-second for each case and can write a CPU profile,
// so the guardian's redaction cost can be profiled without perf and
// without touching procmon's code.
//
//	go build -o /tmp/writer ./bench/writer && /tmp/writer -mkpool /tmp/pool.bin
//	go run ./bench/redactprof -pool /tmp/pool.bin [-mib 256] [-secrets 0,40,200] [-cpuprofile cpu.out]
//	go tool pprof -top -nodecount 25 cpu.out
//
// With -copy it is instead a stand-in for the guardian's whole copy loop
// (see copy.go): stdin (a pipe from bench/writer) -> redact -> -out file.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"procmon/internal/redact"
)

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// randomSecrets returns n secrets of 32 characters from alnum, drawn from
// rng: the same seed gives the same secrets, so runs can be compared.
func randomSecrets(rng *rand.Rand, n int) []string {
	secrets := make([]string, n)
	for i := range secrets {
		b := make([]byte, 32)
		for j := range b {
			b[j] = alnum[rng.IntN(len(alnum))]
		}
		secrets[i] = string(b)
	}
	return secrets
}

func main() {
	pool := flag.String("pool", "", "pool file from bench/writer -mkpool")
	mib := flag.Int("mib", 256, "MiB fed per case")
	chunk := flag.Int("chunk", 256<<10, "bytes per Redact call (the guardian reads 256 KiB)")
	list := flag.String("secrets", "0,40", "comma-separated secret counts")
	modes := flag.String("modes", "lines,oneline", "lines and/or oneline")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of every case here")
	flag.Parse()
	if *copyMode {
		os.Exit(copyLoop())
	}
	runtime.GOMAXPROCS(1)
	data, err := os.ReadFile(*pool)
	if err != nil || len(data) < *chunk {
		fmt.Fprintln(os.Stderr, "redactprof: need -pool with at least one chunk:", err)
		os.Exit(2)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	fmt.Printf("%-8s %8s %10s %12s %10s\n", "mode", "secrets", "MiB", "MiB/CPU-s", "MiB/s wall")
	for _, mode := range strings.Split(*modes, ",") {
		text := data
		if mode == "oneline" {
			text = bytes.ReplaceAll(data, []byte{'\n'}, []byte{' '})
		}
		for _, ns := range strings.Split(*list, ",") {
			n, err := strconv.Atoi(ns)
			if err != nil {
				fmt.Fprintln(os.Stderr, "redactprof: -secrets:", err)
				os.Exit(2)
			}
			r, err := redact.New(randomSecrets(rand.New(rand.NewPCG(uint64(n), 7)), n))
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			s := r.NewStream()
			out := make([]byte, 0, *chunk+256)
			total := int64(*mib) << 20
			var fed, got int64
			c0, w0 := cpuTime(), time.Now()
			off := 0
			for fed < total {
				k := min(*chunk, len(text)-off, int(total-fed))
				out = s.Redact(out[:0], text[off:off+k])
				got += int64(len(out))
				fed += int64(k)
				if off += k; off == len(text) {
					off = 0
				}
			}
			got += int64(len(s.Flush(out[:0])))
			cpu, wall := cpuTime()-c0, time.Since(w0)
			if got != fed {
				fmt.Fprintf(os.Stderr, "redactprof: %s/%d: %d bytes out of %d (something was redacted)\n", mode, n, got, fed)
			}
			m := float64(fed) / (1 << 20)
			fmt.Printf("%-8s %8d %10.0f %12.0f %10.0f\n", mode, n, m, m/cpu.Seconds(), m/wall.Seconds())
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
