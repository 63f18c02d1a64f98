// Package ids makes the ids procmon names runs, monitors and temp files
// with. It imports nothing that would make its users' package
// initialization later (see package early, which names the monitor of a
// start before main).
package ids

import (
	"math/rand/v2"
	"syscall"
	"unsafe"
)

// NewID returns prefix followed by 26 random characters of [0-9a-z]. The
// bytes come from getrandom(2), called by its number: crypto/rand would
// cost every procmon process, guardians included, the initialization of
// its generator's packages, and x/sys/unix a later init. Where getrandom
// fails (a seccomp filter may refuse it) they come from math/rand/v2,
// which the runtime seeds from random bytes the kernel gives every
// process at exec: an id needs to be unique, not secret, and this never
// fails.
func NewID(prefix string) string { return newID(prefix, getrandom) }

func newID(prefix string, fill func([]byte) bool) string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
	var raw [26]byte
	if !fill(raw[:]) {
		for i := range raw {
			raw[i] = byte(rand.Uint32())
		}
	}
	for i, b := range raw {
		raw[i] = alphabet[int(b)%len(alphabet)]
	}
	return prefix + string(raw[:])
}

// getrandom fills b from the kernel's random source, and reports whether
// it could.
func getrandom(b []byte) bool {
	if sysGetrandom == 0 {
		return false
	}
	for len(b) > 0 {
		n, _, errno := syscall.Syscall(sysGetrandom, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 || n == 0 {
			return false
		}
		b = b[n:]
	}
	return true
}
