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
// bytes come from getrandom(2), called by its number, rather than from
// crypto/rand, for two reasons. crypto/rand ends the program when the
// kernel refuses getrandom (a seccomp filter may), where an id needs to be
// unique, not secret: here the bytes then come from math/rand/v2, which
// the runtime seeds from random bytes the kernel gives every process at
// exec, and this never fails. And package early names a start's monitor
// from its init: importing crypto/rand would run that init after
// crypto's, which moved the guardian's launch from 1.9 to 3.7 ms after
// exec (GODEBUG=inittrace, means of 8, on a loaded machine).
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
