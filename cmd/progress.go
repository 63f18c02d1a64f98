//go:build linux

package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"procmon/internal/proc"
	"procmon/internal/wait"
)

// progressEvery is how often the progress line of a wait is redrawn.
const progressEvery = 250 * time.Millisecond

// clearLine returns the cursor to the start of the line and erases it.
const clearLine = "\r\x1b[K"

// showProgress draws one line on the terminal while a wait blocks: how
// long it has waited, how much output the service has written, and its
// status. The returned stop erases the line, so the answer is printed
// where it was and nothing of it is left in the scrollback. It only
// reads: the wait itself decides everything.
func showProgress(env *Env, id string, cond wait.Condition) (stop func()) {
	width := terminalWidth(env.Stdout)
	start := env.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			line := fmt.Sprintf("waiting %s for %s on %s", shortDuration(env.Now().Sub(start)), conditionText(cond), shortID(id))
			if seen, status, ok := progressOf(env, id); ok {
				line += fmt.Sprintf(": %s of output, %s", byteCount(seen), status)
			}
			line = cutToWidth(line, width-1)
			io.WriteString(env.Stdout, clearLine+line)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		io.WriteString(env.Stdout, clearLine)
	}
}

// progressOf is one look at the monitor for the progress line.
func progressOf(env *Env, id string) (seen int64, status string, ok bool) {
	dir, ok := readOnlyState(env)
	if !ok {
		return 0, "", false
	}
	o, err := proc.Observe(dir, id)
	if err != nil {
		return 0, "", false
	}
	o.LiveCounters(context.Background(), dir)
	return o.Monitor.CapturedBytes, o.Status, true
}

// terminalWidth is the width of the terminal w writes to, else 80.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 10 {
			return int(ws.Col)
		}
	}
	return 80
}
