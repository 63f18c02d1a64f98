//go:build linux

package cmd

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"procmon/internal/protocol"
)

// exitStatuses are the statuses procmon exits with, in the order the
// README's table and the man pages give them. The error codes behind each
// are not written here but taken from Code.ExitStatus (exitStatusCodes),
// so that the table cannot say one thing while Main does another;
// TestExitStatusesCoverTheMapping holds the statuses themselves to it.
// A meaning is Markdown: `code` spans are the only markup.
var exitStatuses = []struct {
	status  int
	meaning string
}{
	{0, "a response was written, whatever it says; `cancel` of several monitors exits with the status of its first error, if any"},
	{2, "usage: the request, the command line or a wait condition is refused as written"},
	{3, "refused by policy or budget"},
	{4, "no such monitor or run"},
	{5, "custody of the monitor is unverified: `procmon reconcile` settles it"},
	{exitNotSatisfied, "`wait --check`: the outcome was not `satisfied`; `exec --check`: the command did not exit 0"},
	{130, "interrupted by `Ctrl-C`, `Ctrl-\\`, SIGTERM or SIGHUP: a wait leaves the service running, a cancel or a run end leaves a drain it began to the guardian, a start or an exec drains what it started (a start signalled in its first milliseconds, before it has taken anything, ends as the signal ends it: nothing taken, nothing left)"},
	{1, "anything else"},
}

// exitStatusCodes are the error codes whose exit status is status, in the
// order of the contract.
func exitStatusCodes(status int) []protocol.Code {
	var codes []protocol.Code
	for _, c := range errorCodes {
		if c.ExitStatus() == status {
			codes = append(codes, c)
		}
	}
	return codes
}

// exitStatusMeaning is a status's meaning with its error codes, if any,
// in Markdown.
func exitStatusMeaning(status int, meaning string) string {
	codes := exitStatusCodes(status)
	if len(codes) == 0 {
		return meaning
	}
	quoted := make([]string, len(codes))
	for i, c := range codes {
		quoted[i] = "`" + string(c) + "`"
	}
	return meaning + " (" + strings.Join(quoted, ", ") + ")"
}

// TestExitStatusesCoverTheMapping fails when an error code exits with a
// status the table does not list, or the table lists a status that
// neither an error code nor a command (success, --check) gives.
func TestExitStatusesCoverTheMapping(t *testing.T) {
	listed := map[int]bool{}
	for _, e := range exitStatuses {
		if listed[e.status] {
			t.Errorf("exit status %d is listed twice", e.status)
		}
		listed[e.status] = true
		if strings.Count(e.meaning, "`")%2 != 0 {
			t.Errorf("exit status %d: a `code` span in its meaning is not closed", e.status)
		}
		if e.status != 0 && e.status != exitNotSatisfied && len(exitStatusCodes(e.status)) == 0 {
			t.Errorf("exit status %d is listed, but no error code exits with it", e.status)
		}
	}
	for _, c := range errorCodes {
		if !listed[c.ExitStatus()] {
			t.Errorf("%s exits %d, which exitStatuses does not list", c, c.ExitStatus())
		}
	}
}

// readmeExitTable is the README's table of exit statuses, as its rows'
// cells: the status and its meaning.
func readmeExitTable(t *testing.T) [][2]string {
	t.Helper()
	f, err := os.Open("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][2]string
	in := false
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		line := lines.Text()
		if line == "| exit | meaning |" {
			in = true
			continue
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		if strings.HasPrefix(line, "|---") {
			continue
		}
		status, meaning, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(line, "| "), " |"), " | ")
		if !ok {
			t.Fatalf("README.md: a row of the exit table is not | exit | meaning |: %s", line)
		}
		rows = append(rows, [2]string{status, meaning})
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	if !in {
		t.Fatal(`README.md has no table headed "| exit | meaning |"`)
	}
	return rows
}

// TestReadmeExitTableIsCurrent fails when the README's table of exit
// statuses says something else than exitStatuses and the codes' mapping:
// a status, its order, its meaning or its codes.
func TestReadmeExitTableIsCurrent(t *testing.T) {
	var want [][2]string
	for _, e := range exitStatuses {
		want = append(want, [2]string{strconv.Itoa(e.status), exitStatusMeaning(e.status, e.meaning)})
	}
	got := readmeExitTable(t)
	if slices.Equal(got, want) {
		return
	}
	var b strings.Builder
	for _, row := range want {
		fmt.Fprintf(&b, "| %s | %s |\n", row[0], row[1])
	}
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			t.Errorf("README.md's exit table lacks the row for %s", want[i][0])
		case i >= len(want):
			t.Errorf("README.md's exit table has a row for %s that procmon does not exit with", got[i][0])
		case got[i] != want[i]:
			t.Errorf("README.md's exit table, row %d:\n got: | %s | %s |\nwant: | %s | %s |", i+1, got[i][0], got[i][1], want[i][0], want[i][1])
		}
	}
	t.Errorf("its rows should read:\n| exit | meaning |\n|---|---|\n%s", b.String())
}
