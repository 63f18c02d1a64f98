// Command procmon gives safe custody of long-running processes.
package main

import (
	"os"

	"procmon/cmd"
)

func main() { os.Exit(cmd.Main()) }
