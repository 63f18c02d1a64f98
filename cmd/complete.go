//go:build linux

package cmd

import (
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"procmon/internal/state"
)

type completion = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)

// completeMonitorIDs completes monitor ids from the state directory, each
// described by its name and status so a person can tell them apart.
func completeMonitorIDs(env *Env) completion {
	return completeMonitors(env, false, true)
}

// completeLiveMonitorIDs completes the ids of monitors that are still
// live (no receipt yet): the only ones worth cancelling. It completes
// every argument, since cancel takes several.
func completeLiveMonitorIDs(env *Env) completion {
	return completeMonitors(env, true, false)
}

// completeMonitors offers the names of the selected run's monitors that
// start with the word typed, then the monitors of the state directory
// whose ids start with it, newest first: an argument is a name or an id.
// It only reads, so it never creates the directory. A monitor whose
// record cannot be read is still offered by its id (status and the rest
// of procmon then say why) unless only live ones are wanted.
func completeMonitors(env *Env, liveOnly, firstOnly bool) completion {
	return func(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if firstOnly && len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		dir, ok := readOnlyState(env)
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ids, _ := dir.MonitorIDs()
		type offer struct {
			word    string
			started int64
		}
		var offers []offer
		for _, id := range ids {
			if !strings.HasPrefix(id, prefix) || slices.Contains(args, id) {
				continue
			}
			m, err := dir.LoadMonitor(id)
			if err != nil {
				if !liveOnly {
					offers = append(offers, offer{word: id})
				}
				continue
			}
			if liveOnly && m.Receipt != nil {
				continue
			}
			offers = append(offers, offer{word: id + "\t" + describe(m), started: m.StartedAtMs})
		}
		sort.SliceStable(offers, func(i, j int) bool { return offers[i].started > offers[j].started })
		var out []string
		if !strings.HasPrefix(prefix, "m_") {
			for _, n := range runNames(c, env, dir, prefix, liveOnly) {
				if word, _, _ := strings.Cut(n, "\t"); !slices.Contains(args, word) {
					out = append(out, n)
				}
			}
		}
		for _, o := range offers {
			out = append(out, o.word)
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
	}
}

// describe is a monitor as a completion shows it: name, status, argv.
// The status is the record's: a completion asks no guardian anything.
func describe(m *state.Monitor) string {
	status := state.StatusRunning
	if m.Receipt != nil {
		status = m.Receipt.Status
	}
	return strings.TrimSpace(nameText(m.Name) + " " + status + " " + shellQuote(m.Argv))
}

// completeNames completes --name with the names of the selected run's
// monitors, each described as live or ended.
func completeNames(env *Env) completion {
	return func(c *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
		dir, ok := readOnlyState(env)
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return runNames(c, env, dir, prefix, false), cobra.ShellCompDirectiveNoFileComp
	}
}

// runNames lists, sorted, the names of the selected run's monitors that
// start with prefix, each with a tab and "live" or "ended" (only live
// ones when liveOnly is set). A name that start would refuse now is left
// out: it cannot be typed back, and a tab or a newline in it would break
// the completion's lines; its monitor is offered by its id.
func runNames(c *cobra.Command, env *Env, dir *state.Dir, prefix string, liveOnly bool) []string {
	run := c.Flag("run").Value.String()
	if run == "" {
		run = env.Getenv("PROCMON_RUN")
	}
	if run == "" {
		run = state.DefaultRun
	}
	ids, _ := dir.MonitorIDs()
	seen := map[string]string{}
	for _, id := range ids {
		m, err := dir.LoadMonitor(id)
		if err != nil || m.RunID != run || !strings.HasPrefix(m.Name, prefix) || checkName(m.Name) != nil {
			continue
		}
		if m.Receipt == nil {
			seen[m.Name] = "live"
		} else if seen[m.Name] == "" && !liveOnly {
			seen[m.Name] = "ended"
		}
	}
	var out []string
	for n, s := range seen {
		out = append(out, n+"\t"+s)
	}
	sort.Strings(out)
	return out
}

// completeRunIDs completes run ids from the state directory.
func completeRunIDs(env *Env) completion {
	return func(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		dir, ok := readOnlyState(env)
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ids, _ := dir.RunIDs()
		var out []string
		for _, id := range ids {
			if strings.HasPrefix(id, prefix) {
				out = append(out, id)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// readOnlyState is the state directory for completions, which must never
// create it.
func readOnlyState(env *Env) (*state.Dir, bool) {
	path, err := stateDirPath(env.Getenv)
	if err != nil {
		return nil, false
	}
	return &state.Dir{Path: path}, true
}

// pathFlags are the flags whose value is a path, which the shell
// completes from the file system.
var pathFlags = []string{"cwd", "file"}

// valuesAreNoFiles keeps the shells from offering file names for the
// value of a flag that takes none (--tail 50, --since 5m, --output
// TEXT): cobra's default for a flag without a completion of its own is
// the shell's file completion.
func valuesAreNoFiles(c *cobra.Command) {
	// c.Flags and c.PersistentFlags, not c.LocalFlags, which would merge
	// the parents' flags in and give every usage line a "[flags]".
	register := func(f *pflag.Flag) {
		if slices.Contains(pathFlags, f.Name) || f.Value.Type() == "bool" {
			return
		}
		if _, ok := c.GetFlagCompletionFunc(f.Name); !ok {
			c.RegisterFlagCompletionFunc(f.Name, cobra.NoFileCompletions)
		}
	}
	c.Flags().VisitAll(register)
	c.PersistentFlags().VisitAll(register)
	for _, sub := range c.Commands() {
		valuesAreNoFiles(sub)
	}
}
