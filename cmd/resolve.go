//go:build linux

package cmd

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

// Monitors named by hand. A person calls a monitor by the name it was
// started with (as an argument, or with --name) or by the first
// characters of its id, as shown by list; both are resolved here, on the
// command line only, to the exact id the request carries. An argument
// that starts with "m_" is an id or the start of one, any other is a
// name: start refuses names that start with "m_", so no argument can
// mean both, and "x" never picks a monitor whose id happens to start
// m_x. A request read from stdin is never resolved: the JSON protocol
// takes exact ids.

// addNameFlag adds --name to a command that takes a monitor id.
func addNameFlag(c *cobra.Command, env *Env, name *string) {
	c.Flags().Var(nameValue{name}, "name", "the run's monitor started with this --name: the live one, else the last started; refused when ambiguous (instead of an id)")
	c.RegisterFlagCompletionFunc("name", completeNames(env))
}

// nameValue is the value of a --name that names a monitor: an empty one
// names none, and was taken for no --name at all (the request then read
// from stdin).
type nameValue struct{ p *string }

func (v nameValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v nameValue) Set(s string) error {
	if s == "" {
		return errors.New("empty; give the name the monitor was started with")
	}
	*v.p = s
	return nil
}

func (v nameValue) Type() string { return "string" }

// monitorArgs resolves the monitors a command line names: its arguments
// (exact ids, unique id prefixes or names) and --name.
func monitorArgs(env *Env, g *globals, args []string, name string) ([]string, error) {
	ids := make([]string, 0, len(args)+1)
	for _, a := range args {
		id, err := resolveArg(env, g, a)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if name != "" {
		id, err := resolveName(env, g, name)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	// One monitor named twice (its id, a prefix of it, its name) is
	// one monitor: cancel answers one receipt for it.
	once := make([]string, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(once, id) {
			once = append(once, id)
		}
	}
	return once, nil
}

// oneMonitorArg resolves the one monitor a command line names: an
// argument (an exact id, a unique id prefix or a name) or --name, not
// both.
func oneMonitorArg(env *Env, g *globals, args []string, name string) (string, error) {
	ids, err := monitorArgs(env, g, args, name)
	if err != nil {
		return "", err
	}
	if len(ids) > 1 {
		return "", protocol.Errorf(protocol.CodeInvalidRequest, "give one monitor: an id or a name as the argument, or --name, not both").With("field", "monitor_id")
	}
	return ids[0], nil
}

// resolveArg resolves one argument: an id or the start of one when it
// starts with "m_", else a name.
func resolveArg(env *Env, g *globals, arg string) (string, error) {
	if strings.HasPrefix(arg, "m_") {
		return resolveMonitorArg(env, arg)
	}
	id, err := resolveName(env, g, arg)
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Code == protocol.CodeUnknownMonitor && idPrefixLike(arg) {
		// The start of an id without its m_, as procmon once took it.
		if _, matches := idsStartingWith(env, "m_"+arg); len(matches) > 0 {
			pe.Message += fmt.Sprintf("; an id is given with its m_: m_%s", arg)
		}
	}
	return id, err
}

// resolveMonitorArg turns a unique id prefix ("m_3kq9") into the id. An
// "m_" prefix that matches no monitor is unknown_monitor, as an exact id
// would be. An exact id, or anything else that is no start of an id
// ("3kq9", "m_X"), is returned as it is, so the command answers for it
// exactly as it always has (unknown_monitor, or invalid_request for what
// is no id at all).
func resolveMonitorArg(env *Env, arg string) (string, error) {
	if state.ValidMonitorID(arg) == nil || !strings.HasPrefix(arg, "m_") || !idPrefixLike(arg) {
		return arg, nil
	}
	path, matches := idsStartingWith(env, arg)
	if path == "" {
		return arg, nil
	}
	switch len(matches) {
	case 0:
		return "", protocol.Errorf(protocol.CodeUnknownMonitor, "no monitor id in %s starts with %q", path, arg).With("monitor_id", arg)
	case 1:
		return matches[0], nil
	}
	return "", protocol.Errorf(protocol.CodeInvalidRequest, "%q is the start of %d monitor ids (%s); give more of the id", arg, len(matches), strings.Join(matches, ", ")).
		With("field", "monitor_id").With("candidates", matches)
}

// idsStartingWith lists the monitor ids of the state directory (its path,
// "" when none is named) that start with prefix.
func idsStartingWith(env *Env, prefix string) (path string, matches []string) {
	path, err := stateDirPath(env.Getenv)
	if err != nil {
		return "", nil
	}
	ids, _ := (&state.Dir{Path: path}).MonitorIDs()
	for _, id := range ids {
		if strings.HasPrefix(id, prefix) {
			matches = append(matches, id)
		}
	}
	return path, matches
}

// idPrefixLike reports whether s could be the start of a monitor id, with
// or without its "m_".
func idPrefixLike(s string) bool {
	rest := strings.TrimPrefix(s, "m_")
	if rest == "" || len(rest) > 32 {
		return false
	}
	for _, r := range rest {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z') {
			return false
		}
	}
	return true
}

// namedMonitors returns the monitors of run runID named name: those
// still live (no receipt yet), and those that have ended.
func namedMonitors(dir *state.Dir, runID, name string) (live, ended []*state.Monitor) {
	ids, _ := dir.MonitorIDs()
	for _, id := range ids {
		m, err := dir.LoadMonitor(id)
		if err != nil || m.RunID != runID || m.Name != name {
			continue
		}
		if m.Receipt == nil {
			live = append(live, m)
		} else {
			ended = append(ended, m)
		}
	}
	return live, ended
}

// resolveName finds the selected run's monitor started with --name name.
// Names are labels, not keys: several monitors may carry one. The live
// one (no receipt yet) is meant, and two live ones are refused, listing
// both; when none is live, the one started last, so that the logs and
// status of a service that just ended are still one name away. A live
// one with an ended one started after it is refused too: a service
// started again under its name while the old one ran, which then failed
// (its port taken), would have had the old one's output taken for its
// readiness.
func resolveName(env *Env, g *globals, name string) (string, error) {
	if name == "" {
		// Else it would pick a monitor started without a name.
		return "", protocol.Errorf(protocol.CodeInvalidRequest, "an empty name names no monitor; give a name or an id").With("field", "name")
	}
	runID, err := selectedRun(env, g)
	if err != nil {
		return "", err
	}
	path, err := stateDirPath(env.Getenv)
	if err != nil {
		return "", err
	}
	live, ended := namedMonitors(&state.Dir{Path: path}, runID, name)
	// In the order of their starts: the command ordinal is taken under
	// the run's lock, where a wall clock may step back.
	sort.Slice(ended, func(i, j int) bool { return ended[i].CommandOrdinal > ended[j].CommandOrdinal })
	switch {
	case len(live) == 1 && len(ended) > 0 && ended[0].CommandOrdinal > live[0].CommandOrdinal:
		old, last := live[0], ended[0]
		return "", protocol.Errorf(protocol.CodeInvalidRequest, "the name %q is ambiguous in run %s: %s (%s) runs, and %s (%s), started after it, has ended (%s); give the id instead",
			name, runID, old.MonitorID, shellQuote(old.Argv), last.MonitorID, shellQuote(last.Argv), last.Receipt.Status).
			With("field", "name").With("candidates", []string{old.MonitorID, last.MonitorID})
	case len(live) == 1:
		return live[0].MonitorID, nil
	case len(live) > 1:
		sort.Slice(live, func(i, j int) bool { return live[i].CommandOrdinal < live[j].CommandOrdinal })
		var cands []string
		var desc []string
		for _, m := range live {
			cands = append(cands, m.MonitorID)
			desc = append(desc, fmt.Sprintf("%s (%s)", m.MonitorID, shellQuote(m.Argv)))
		}
		return "", protocol.Errorf(protocol.CodeInvalidRequest, "the name %q is ambiguous: %d live monitors of run %s carry it: %s; give the id instead", name, len(live), runID, strings.Join(desc, ", ")).
			With("field", "name").With("candidates", cands)
	case len(ended) > 0:
		return ended[0].MonitorID, nil
	}
	return "", protocol.Errorf(protocol.CodeUnknownMonitor, "no monitor of run %s is named %q; see procmon list", runID, name).With("name", name).With("run_id", runID)
}
