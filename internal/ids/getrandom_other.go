//go:build !(linux && (amd64 || arm64))

package ids

// sysGetrandom is 0 where its number is not written down here: NewID then
// takes the runtime's random source.
const sysGetrandom = 0
