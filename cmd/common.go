//go:build linux

package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"procmon/internal/early"
	"procmon/internal/proc"
	"procmon/internal/protocol"
	"procmon/internal/state"
)

// openState resolves and checks the state directory, and makes it if it
// is not there: for the commands that write a run or a monitor.
func openState(env *Env) (*state.Dir, error) {
	path, err := stateDirPath(env.Getenv)
	if err != nil {
		return nil, err
	}
	return state.Open(path)
}

// lookState resolves and checks the state directory without making it:
// for the commands that read it or act on what it holds, which find
// nothing in one that is not there (a mistyped PROCMON_STATE_DIR is not
// made by a list).
func lookState(env *Env) (*state.Dir, error) {
	path, err := stateDirPath(env.Getenv)
	if err != nil {
		return nil, err
	}
	return state.Look(path)
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

// checkRunFlag refuses a --run that names no run id, for every command,
// and without one a $PROCMON_RUN that names none, for the commands that
// act in a run: status, logs, wait and cancel find a monitor by its id
// whatever run is selected, and took an empty --run or "--run bogus"
// without a word, which start refused. procmon mcp answers each call with
// the error instead, since its stdout carries JSON-RPC only; help and
// completion act in no run.
func checkRunFlag(c *cobra.Command, env *Env, g *globals, args []string) error {
	for p := c; p != nil; p = p.Parent() {
		switch p.Name() {
		case "mcp", "help", "completion":
			return nil // no run is acted in
		}
	}
	if !c.Flags().Changed("run") {
		switch c.CommandPath() {
		case "procmon start", "procmon exec", "procmon status", "procmon logs", "procmon wait",
			"procmon cancel", "procmon reconcile":
		case "procmon list":
			if all, _ := c.Flags().GetBool("all-runs"); all {
				return nil // every run, whichever is selected
			}
		case "procmon run end", "procmon run show":
			if len(args) > 0 {
				return nil // the run is the argument
			}
		default:
			// configure, schema, run new and list, completion (cobra's
			// __complete too) and help act in no run of the environment's.
			return nil
		}
		if v := env.Getenv("PROCMON_RUN"); v != "" && state.ValidRunID(v) != nil {
			return protocol.Errorf(protocol.CodeInvalidRequest, `$PROCMON_RUN is %q, which is no run id: set it to one (r_..., or "default"), unset it, or give --run`, v).With("field", "PROCMON_RUN")
		}
		return nil
	}
	if g.run == "" {
		return protocol.Errorf(protocol.CodeInvalidRequest, `--run is empty: give a run id (r_..., or "default"), or leave it out for $PROCMON_RUN`).With("field", "run")
	}
	if err := state.ValidRunID(g.run); err != nil {
		return protocol.AsError(err).With("field", "run")
	}
	return nil
}

// observeFor opens the state directory, observes a monitor and checks
// that its run grants the tool.
func observeFor(env *Env, id, tool string) (*state.Dir, *proc.Observation, error) {
	dir, err := lookState(env)
	if err != nil {
		return nil, nil, err
	}
	o, err := proc.Observe(dir, id)
	if err != nil {
		return nil, nil, err
	}
	if err := dir.AdmitFor(o.Monitor, tool, env.Now().UnixMilli()); err != nil {
		return nil, nil, err
	}
	return dir, o, nil
}

// readRequest decodes the request from stdin when the command line built
// none. A person at a terminal is told how to use flags instead of being
// left waiting on stdin.
func readRequest(env *Env, c *cobra.Command, v any) error {
	if env.StdinIsTerminal {
		return protocol.Errorf(protocol.CodeInvalidRequest, "no request: give arguments and flags (see %s --help) or pipe {\"request\": {...}} on stdin", c.CommandPath()).With("field", "request")
	}
	return protocol.ReadRequest(env.Stdin, v)
}

// readOptionalRequest decodes the request on stdin, if any, of a command
// whose request has no required field: an empty stdin is an empty
// request, and a person at a terminal sends none. Anything else on stdin
// is read as strictly as every request, never ignored.
//
// Its caller c ran with nothing on its command line, which a person does
// too, with stdin holding something else (a hook's JSON, a loop's input):
// a refusal says how to run it then.
func readOptionalRequest(env *Env, c *cobra.Command, v any) error {
	if env.StdinIsTerminal {
		return nil
	}
	err := protocol.ReadRequest(env.Stdin, v)
	if err == nil || emptyBody(err) {
		return nil
	}
	pe := protocol.AsError(err)
	return &protocol.Error{Code: pe.Code, Details: pe.Details, Message: fmt.Sprintf(
		"%s; with nothing on its command line %s reads its request from stdin: when stdin holds something else, name what it acts on (see %s --help) or give it </dev/null",
		pe.Message, c.CommandPath(), c.CommandPath())}
}

// emptyBody reports whether a request error was only an empty stdin.
func emptyBody(err error) bool {
	var pe *protocol.Error
	return errors.As(err, &pe) && strings.HasPrefix(pe.Message, "empty request body")
}

// flagForStdin refuses a flag given with a request read from stdin, where
// it would be ignored: each pair is a flag and the request field that
// says the same. It is checked before stdin is read, so the refusal names
// the flag rather than whatever the body lacks.
func flagForStdin(c *cobra.Command, pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if c.Flags().Changed(pairs[i]) {
			return protocol.Errorf(protocol.CodeInvalidRequest,
				"--%s applies to a monitor named on the command line; name one (see %s --help), or give %q in the request on stdin",
				pairs[i], c.CommandPath(), pairs[i+1]).With("field", pairs[i+1])
		}
	}
	return nil
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
		if c.Root().PersistentFlags().Lookup(f.Name) == nil && !slices.Contains(except, f.Name) {
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

// noArgs is cobra.NoArgs, which took a stray word for an unknown
// subcommand ("unknown command \"x\" for \"procmon configure\"").
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return protocol.Errorf(protocol.CodeInvalidRequest, "%s takes no arguments, got %d (see %s --help)", c.CommandPath(), len(args), c.CommandPath())
	}
	return nil
}

// atMostOne is cobra.MaximumNArgs(1) saying what the one argument is and
// which request field it fills (cobra said "accepts at most 1 arg(s),
// received 2"). The arguments are counted, not shown: they may be a
// command line pasted in by mistake.
func atMostOne(field, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) > 1 {
			return protocol.Errorf(protocol.CodeInvalidRequest, "%s takes one %s, got %d arguments (see %s --help)", c.CommandPath(), what, len(args), c.CommandPath()).With("field", field)
		}
		return nil
	}
}

// noArgv is why a start or exec without a command is refused: the
// request field's message, to which the command line adds its usage.
const noArgv = `field "argv" is required and must not be empty: the command and its arguments`

func errNoArgv() error {
	return protocol.Errorf(protocol.CodeInvalidRequest, noArgv).With("field", "argv")
}

// untilInterrupted runs op, which may wait out a drain's whole grace, and
// answers wait_interrupted (exit status 130) if SIGINT, SIGTERM or SIGHUP
// comes first, as a wait does; what, and check, which tells how to find
// out what became of it, go in the message. It is for commands whose work
// goes on without them: a guardian finishes a drain it has begun whether
// or not its caller still waits. Without it such a command ignored an
// interrupt that its shell had set to be ignored (a job started with &),
// and died of any other with nothing on stdout. op is left to the
// process's exit, and must not write the response.
func untilInterrupted[T any](env *Env, what, check string, op func() (T, error)) (T, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	start := env.Now()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := op()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		// A second interrupt must not cut the answer short: the signals
		// stay caught, and ignored, until the process exits.
		signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		var zero T
		elapsed := env.Now().Sub(start).Milliseconds()
		return zero, protocol.Errorf(protocol.CodeWaitInterrupted,
			"%s was interrupted after %d ms; a drain that had begun goes on without it: see %s", what, elapsed, check).
			With("elapsed_ms", elapsed)
	}
}
