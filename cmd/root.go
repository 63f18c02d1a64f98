//go:build linux

// Package cmd is procmon's command line: one file per subcommand, each
// decoding a request (JSON on stdin, or flags), calling into internal/, and
// encoding one response object. Errors are reported once, by Main.
package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"procmon/internal/early"
	"procmon/internal/proc"
	"procmon/internal/protocol"
)

// Env is what a command may touch of the outside world; commands never
// reach for os.Stdout or the clock directly.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Environ is the environment a started service inherits.
	Environ func() []string
	Getwd   func() (string, error)
	Now     func() time.Time
	// StdinIsTerminal is true when a person, not a request, is on stdin.
	StdinIsTerminal bool
	// StdoutIsTerminal selects human tables where a command has them.
	StdoutIsTerminal bool
}

func defaultEnv() *Env {
	return &Env{
		Stdin:            os.Stdin,
		Stdout:           os.Stdout,
		Stderr:           os.Stderr,
		Getenv:           os.Getenv,
		Environ:          os.Environ,
		Getwd:            os.Getwd,
		Now:              time.Now,
		StdinIsTerminal:  isTerminal(os.Stdin),
		StdoutIsTerminal: isTerminal(os.Stdout),
	}
}

// Main runs procmon with the process's arguments and returns its exit
// status.
func Main() int {
	if len(os.Args) > 1 && os.Args[1] == proc.GuardianArg {
		return proc.RunGuardian(os.Args[2:], os.Stdin, os.Stdout)
	}
	quitAsInterrupt()
	if pe := checkLimits(); pe != nil {
		early.AbandonLaunched()
		protocol.WriteJSON(os.Stdout, pe.Object(), false)
		return pe.Code.ExitStatus()
	}
	// A guardian launched before main for a start that never reaches
	// proc.Start (bad flags, --help) is not left waiting.
	defer early.AbandonLaunched()
	return Run(os.Args[1:], defaultEnv())
}

// quitAsInterrupt makes SIGQUIT (Ctrl-\ on a terminal) do what SIGINT
// does, whatever that is where it arrives: a command that catches SIGINT
// (wait, logs --follow, exec, mcp) answers it as an interrupt, and any
// other dies of SIGINT. Left to the Go runtime, SIGQUIT would print every
// goroutine's stack and exit 2, the status of a usage error; a guardian
// catches its own signals and never comes here.
func quitAsInterrupt() {
	quit := make(chan os.Signal, 1)
	signal.Notify(quit, syscall.SIGQUIT)
	go func() {
		for range quit {
			syscall.Kill(os.Getpid(), syscall.SIGINT)
		}
	}()
}

// Version is procmon's version, set at build time with
// -ldflags "-X procmon/cmd.Version=...".
var Version = "0.1.0-dev"

// globals are the flags every command shares.
type globals struct {
	pretty bool
	run    string
	// format is -o/--format and json is --json; human, decided once from
	// them and the terminal (chooseFormat), selects the person's view.
	format string
	json   bool
	human  bool
	// exitStatus is the status of a command that answered but asked for
	// a non-zero one (wait --check; cancel of several monitors).
	exitStatus int
}

// Run executes one command line against env and returns the exit status.
func Run(args []string, env *Env) int {
	g := &globals{}
	root := newRootCmd(env, g)
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	c, err := root.ExecuteC()
	if err == nil {
		return g.exitStatus
	}
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		// Anything cobra itself refused is a usage error (see typeErrors).
		msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n\nDid you mean this?\n\t", "; did you mean: ")
		help := "procmon"
		if c != nil {
			help = c.CommandPath()
		}
		pe = protocol.Errorf(protocol.CodeInvalidRequest, "%s (see %s --help)", strings.ReplaceAll(msg, "\n\t", ", "), help)
	}
	nameTheFlag(c, pe)
	if pe.Code == protocol.CodeInvalidRequest && pe.Message == noArgv && c != nil {
		// The request field's message is the protocol's; at the command
		// line, the command goes after the flags.
		pe.Message += "; usage: " + c.UseLine()
	}
	if interrupted(pe) {
		pe.Code = protocol.CodeWaitInterrupted
	}
	advise(pe)
	if chooseFormat(env, g) == nil && g.human {
		reportError(env, pe)
		return pe.Code.ExitStatus()
	}
	if werr := protocol.WriteJSON(env.Stdout, pe.Object(), g.pretty); werr != nil {
		fmt.Fprintln(env.Stderr, "procmon:", pe.Message)
	}
	return pe.Code.ExitStatus()
}

func interrupted(pe *protocol.Error) bool { return pe.Code == protocol.CodeWaitInterrupted }

func newRootCmd(env *Env, g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "procmon",
		Short: "Safe custody of long-running processes",
		Long: `procmon starts services under a detached guardian, waits once for real
evidence that they are ready, shows their output with credentials redacted,
and stops them with a receipt that proves nothing was left behind.

Every command reads one JSON object {"request": {...}} on stdin and writes
one JSON object on stdout; flags and arguments build the same request by
hand. On a terminal, commands print a readable view instead (errors as one
line on stderr); -o json or --json forces the JSON, -o text the view.
Monitors may be named by hand by their name (as the argument, or with
--name) or by the start of their id (m_3kq9).
Start with: procmon configure --enable`,
		Version:       Version,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(c *cobra.Command, args []string) error {
			if err := chooseFormat(env, g); err != nil {
				return err
			}
			return checkRunFlag(c, env, g, args)
		},
	}
	root.PersistentFlags().BoolVar(&g.pretty, "pretty", false, "indent the JSON response (printed on a terminal too)")
	root.PersistentFlags().StringVar(&g.run, "run", "", "run id to act in (default $PROCMON_RUN, else \"default\")")
	root.PersistentFlags().StringVarP(&g.format, "format", "o", "", "json or text (default: text on a terminal, else json)")
	root.PersistentFlags().BoolVar(&g.json, "json", false, "print the JSON response even on a terminal (same as -o json)")
	root.RegisterFlagCompletionFunc("run", completeRunIDs(env))
	root.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"json", "text"}, cobra.ShellCompDirectiveNoFileComp))
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		newConfigureCmd(env, g),
		newStartCmd(env, g),
		newStatusCmd(env, g),
		newListCmd(env, g),
		newCancelCmd(env, g),
		newWaitCmd(env, g),
		newReconcileCmd(env, g),
		newRunCmd(env, g),
		newLogsCmd(env, g),
		newExecCmd(env, g),
		newSchemaCmd(env, g),
		newMCPCmd(env, g),
	)
	// cobra's completion command is made here rather than at Execute, so
	// that it is a group like run. It takes its output as it is made.
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.InitDefaultCompletionCmd()
	// Made now rather than at Execute, so that the man page lists it.
	root.InitDefaultVersionFlag()
	// A word that is no subcommand of a group (run frob, completion tcsh)
	// is a usage error, as at the top level, not the group's help with
	// exit status 0.
	for _, c := range root.Commands() {
		if c.HasSubCommands() {
			c.Args = cobra.NoArgs
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
	}
	typeErrors(root)
	onceOnly(root)
	valuesAreNoFiles(root)
	return root
}

// typeErrors makes every error a command's own code returns a typed one:
// an error without a code (a failed write, a dropped connection) is
// internal, so that an untyped error reaching Run is always cobra refusing
// the command line.
func typeErrors(c *cobra.Command) {
	if run := c.RunE; run != nil {
		c.RunE = func(c *cobra.Command, args []string) error {
			if err := run(c, args); err != nil {
				return protocol.AsError(err)
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		typeErrors(sub)
	}
}
