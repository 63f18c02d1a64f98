// Command forkexec is the baseline of procmon exec in bench/agent_cycle.sh:
// the least a durable foreground command needs, one fsync of a small file
// (procmon's command slot) and one fork+exec+wait of the command.
//
//	forkexec FILE ARGV...
package main

import (
	"fmt"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: forkexec FILE ARGV...")
		os.Exit(2)
	}
	f, err := os.OpenFile(os.Args[1], os.O_WRONLY|os.O_CREATE, 0o600)
	if err == nil {
		_, err = f.WriteAt([]byte("1\n"), 0)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "forkexec:", err)
		os.Exit(1)
	}
	f.Close()
	c := exec.Command(os.Args[2], os.Args[3:]...)
	c.Stdout, c.Stderr = os.Stdout, os.Stderr
	if err := c.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "forkexec:", err)
		os.Exit(1)
	}
}
