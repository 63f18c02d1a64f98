//go:build linux

package cmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// manDir holds the man pages, one per command, made from the command tree.
const manDir = "../docs/man"

// manDate is the date the pages carry: fixed, so that making them again
// changes nothing unless a command did.
const manDate = "2026-01-01"

// manPages renders one page for each command a person can run. The text
// of a command's help is shown as it is written (no-fill), so its
// examples and columns come out as in --help: cobra's own generator reads
// help as Markdown, which the help text is not.
func manPages(root *cobra.Command) map[string][]byte {
	root.InitDefaultCompletionCmd() // cobra adds it when it executes
	pages := map[string][]byte{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c != root {
			return
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "-")
		var b bytes.Buffer
		fmt.Fprintf(&b, ".TH %q 1 %q \"procmon\" \"procmon manual\"\n", strings.ToUpper(name), manDate)
		fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", roff(name), roff(c.Short))
		fmt.Fprintf(&b, ".SH SYNOPSIS\n.nf\n\\fB%s\\fR\n.fi\n", roff(c.UseLine()))
		long := c.Long
		if long == "" {
			long = c.Short
		}
		fmt.Fprintf(&b, ".SH DESCRIPTION\n.nf\n%s\n.fi\n", roff(long))
		if flags := c.NonInheritedFlags().FlagUsages(); flags != "" {
			fmt.Fprintf(&b, ".SH OPTIONS\n.nf\n%s.fi\n", roff(flags))
		}
		if flags := c.InheritedFlags().FlagUsages(); flags != "" {
			fmt.Fprintf(&b, ".SH OPTIONS INHERITED FROM PARENT COMMANDS\n.nf\n%s.fi\n", roff(flags))
		}
		var see []string
		if c.HasParent() {
			see = append(see, manRef(c.Parent()))
		}
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				see = append(see, manRef(sub))
			}
		}
		if len(see) > 0 {
			fmt.Fprintf(&b, ".SH SEE ALSO\n%s\n", strings.Join(see, ", "))
		}
		pages[name+".1"] = b.Bytes()
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return pages
}

func manRef(c *cobra.Command) string {
	return `\fB` + roff(strings.ReplaceAll(c.CommandPath(), " ", "-")) + `\fR(1)`
}

// roff escapes text for a man page: backslashes, hyphens, and a line
// that would start with a control character.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}

// TestManPagesAreCurrent fails when docs/man differs from the pages the
// current command tree makes. With PROCMON_UPDATE=1 it rewrites them
// instead.
func TestManPagesAreCurrent(t *testing.T) {
	root := newRootCmd(testEnv(t.TempDir(), &bytes.Buffer{}, &bytes.Buffer{}), &globals{})
	pages := manPages(root)
	if rewriteGoldens() {
		if err := os.RemoveAll(manDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(manDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range pages {
			if err := os.WriteFile(filepath.Join(manDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("wrote %d pages to %s", len(pages), manDir)
		return
	}
	shipped, _ := os.ReadDir(manDir)
	for _, e := range shipped {
		if _, ok := pages[e.Name()]; !ok {
			t.Errorf("%s/%s is for no command; %s", manDir, e.Name(), regenerate)
		}
	}
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join(manDir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s/%s is missing or out of date; %s", manDir, name, regenerate)
		}
	}
	if _, ok := pages["procmon-completion.1"]; !ok {
		t.Errorf("no page for the completion command: it should be visible")
	}
}
