//go:build linux

package cmd

import (
	"strings"

	"github.com/spf13/cobra"

	"procmon/internal/state"
)

type completion = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)

// completeMonitorIDs completes monitor ids from the state directory.
func completeMonitorIDs(env *Env) completion {
	return completeIDs(env, (*state.Dir).MonitorIDs)
}

// completeRunIDs completes run ids from the state directory.
func completeRunIDs(env *Env) completion {
	return completeIDs(env, (*state.Dir).RunIDs)
}

// completeIDs completes the first argument from a listing of the state
// directory; it only reads, so it never creates the directory.
func completeIDs(env *Env, list func(*state.Dir) ([]string, error)) completion {
	return func(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		path, err := state.Resolve(env.Getenv)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ids, _ := list(&state.Dir{Path: path})
		var out []string
		for _, id := range ids {
			if strings.HasPrefix(id, prefix) {
				out = append(out, id)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
