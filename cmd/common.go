//go:build linux

package cmd

import (
	"errors"
	"io/fs"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"procmon/internal/early"
	"procmon/internal/proc"
	"procmon/internal/protocol"
	"procmon/internal/state"
)

// openState resolves and checks the state directory.
func openState(env *Env) (*state.Dir, error) {
	path, err := stateDirPath(env.Getenv)
	if err != nil {
		return nil, err
	}
	return state.Open(path)
}

// selectedRun is --run, else $PROCMON_RUN, else the default run.
func selectedRun(env *Env, g *globals) (string, error) {
	id := g.run
	if id == "" {
		id = env.Getenv("PROCMON_RUN")
	}
	if id == "" {
		id = state.DefaultRun
	}
	return id, state.ValidRunID(id)
}

// loadRun loads a run. The default run is created on first use, freezing
// the settings of that moment; it is never created while monitors are
// disabled, so enabling them later still reaches it.
func loadRun(env *Env, dir *state.Dir, id string) (*state.Run, error) {
	r, err := dir.LoadRun(id)
	if err == nil || id != state.DefaultRun || !protocol.HasCode(err, protocol.CodeUnknownRun) {
		return r, err
	}
	settings, err := enabledSettings(dir)
	if err != nil {
		return nil, err
	}
	created := &state.Run{
		RunID:       id,
		CreatedAtMs: env.Now().UnixMilli(),
		Policy:      settings,
		Tools:       state.Tools,
	}
	if err := dir.CreateRun(created); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	return dir.LoadRun(id)
}

// enabledSettings returns the stored settings if they enable monitors.
func enabledSettings(dir *state.Dir) (state.Settings, error) {
	s, ok, err := dir.LoadSettings()
	if err != nil {
		return s, err
	}
	if !ok {
		return s, state.MonitorsDisabled("no runner settings are stored in " + dir.Path)
	}
	if !s.Sandbox.ProcessMonitor {
		return s, state.MonitorsDisabled("the stored settings have process_monitor false")
	}
	return s, nil
}

// admit checks a run's frozen policy and grants for one tool.
func admit(r *state.Run, tool string) error {
	if !r.Policy.Sandbox.ProcessMonitor {
		return state.MonitorsDisabled("run " + r.RunID + " was created while they were off")
	}
	if r.NativeCheckpoints {
		return protocol.Errorf(protocol.CodeCheckpointsIncompat, "run %s uses native checkpoints, which reject monitor grants; create a run without --native-checkpoints", r.RunID).With("run_id", r.RunID)
	}
	if !r.Allows(tool) {
		return protocol.Errorf(protocol.CodeToolNotAllowed, "run %s does not allow %s (allowed: %v); create a run with: procmon run new --tools ...", r.RunID, tool, r.Tools).
			With("run_id", r.RunID).With("tool", tool)
	}
	return nil
}

// admitMonitor checks the grants of the run a monitor belongs to.
func admitMonitor(env *Env, dir *state.Dir, m *state.Monitor, tool string) error {
	r, err := loadRun(env, dir, m.RunID)
	if err != nil {
		return err
	}
	return admit(r, tool)
}

// observeFor opens the state directory, observes a monitor and checks
// that its run grants the tool.
func observeFor(env *Env, id, tool string) (*state.Dir, *proc.Observation, error) {
	dir, err := openState(env)
	if err != nil {
		return nil, nil, err
	}
	o, err := proc.Observe(dir, id)
	if err != nil {
		return nil, nil, err
	}
	if err := admitMonitor(env, dir, o.Monitor, tool); err != nil {
		return nil, nil, err
	}
	return dir, o, nil
}

// readRequest decodes the request from stdin when the command line built
// none. A person at a terminal is told how to use flags instead of being
// left waiting on stdin.
func readRequest(env *Env, c *cobra.Command, v any) error {
	if env.StdinIsTerminal {
		return protocol.Errorf(protocol.CodeInvalidRequest, "no request: give arguments and flags (see %s --help) or pipe {\"request\": {...}} on stdin", c.CommandPath())
	}
	return protocol.ReadRequest(env.Stdin, v)
}

// respond writes one response object, or for a person its view.
func respond(env *Env, g *globals, v any) error {
	if g.human {
		return render(env, g, v)
	}
	return protocol.WriteJSON(env.Stdout, v, g.pretty)
}

// flagsUsed reports whether any of the command's own flags were set (the
// shared --pretty, --run and -o do not count, nor those named in except:
// they build no request).
func flagsUsed(c *cobra.Command, except ...string) bool {
	used := false
	c.Flags().Visit(func(f *pflag.Flag) {
		if c.Root().PersistentFlags().Lookup(f.Name) == nil && !contains(except, f.Name) {
			used = true
		}
	})
	return used
}

// stateDirPath is the state directory the environment names (see
// early.StateDir); none named is state_unsafe.
func stateDirPath(getenv func(string) string) (string, error) {
	path, err := early.StateDir(getenv)
	if err == early.ErrNoStateDir {
		return "", protocol.Errorf(protocol.CodeStateUnsafe, "%v", err)
	}
	return path, err
}
