package ids

import "syscall"

// sysGetrandom is getrandom(2)'s number.
const sysGetrandom = syscall.SYS_GETRANDOM
