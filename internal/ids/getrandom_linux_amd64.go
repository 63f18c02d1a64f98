package ids

// sysGetrandom is getrandom(2)'s number, which package syscall does not
// define on amd64.
const sysGetrandom = 318
