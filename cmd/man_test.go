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
		// Not hyphenated, and ragged right: error codes and flags are
		// words a reader copies, and justifying lines of them leaves gaps.
		b.WriteString(".nh\n.ad l\n")
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
		fmt.Fprint(&b, manExitStatus(c == root))
		if c == root {
			fmt.Fprint(&b, manEnvironment())
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

// manExitStatus is the EXIT STATUS section. procmon's own page gives
// every status with the error codes behind it; a command's page gives the
// statuses alone and points there. Every page lists every status: most
// may come from any command (a usage error, an unknown run, an unsafe
// state directory), and the others say which commands give them.
func manExitStatus(withCodes bool) string {
	var b strings.Builder
	b.WriteString(".SH EXIT STATUS\n")
	for _, e := range exitStatuses {
		meaning := e.meaning
		if withCodes {
			meaning = exitStatusMeaning(e.status, e.meaning)
		}
		fmt.Fprintf(&b, ".TP\n.B %d\n%s\n", e.status, roffMarkdown(meaning))
	}
	if !withCodes {
		b.WriteString(".PP\nThe error codes behind each status are in \\fBprocmon\\fR(1).\n")
	}
	return b.String()
}

// manEnvironment is the ENVIRONMENT section of procmon's own page.
func manEnvironment() string {
	var b strings.Builder
	b.WriteString(".SH ENVIRONMENT\n")
	for _, v := range environment {
		fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", roff(v.name), roffMarkdown(v.meaning))
	}
	fmt.Fprintf(&b, ".PP\n%s\n", roffMarkdown(environmentPassed))
	return b.String()
}

// roffMarkdown is roff for text whose one markup is Markdown's `code`
// span, set in bold as man pages set literal text.
func roffMarkdown(s string) string {
	parts := strings.Split(roff(s), "`")
	for i := 1; i < len(parts); i += 2 {
		parts[i] = `\fB` + parts[i] + `\fR`
	}
	return strings.Join(parts, "")
}

func manRef(c *cobra.Command) string {
	return `\fB` + roff(strings.ReplaceAll(c.CommandPath(), " ", "-")) + `\fR(1)`
}

// roff escapes text for a man page: backslashes, hyphens, tildes and
// carets (which groff may set as the accents ˜ and ˆ, breaking a path or
// a pattern copied from the page), and a line that would start with a
// control character.
func roff(s string) string {
	s = strings.NewReplacer(`\`, `\e`, "-", `\-`, "~", `\(ti`, "^", `\(ha`).Replace(s)
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
