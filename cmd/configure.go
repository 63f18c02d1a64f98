//go:build linux

package cmd

import (
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

type configureResponse struct {
	Settings        state.Settings `json:"settings"`
	MonitorsEnabled bool           `json:"monitors_enabled"`
	StateDir        string         `json:"state_dir"`
}

func newConfigureCmd(env *Env, g *globals) *cobra.Command {
	var enable, show bool
	c := &cobra.Command{
		Use:   "configure [--enable | --show]",
		Short: "Store the runner settings that enable process monitors",
		Long: `Store the settings that turn process monitors on and set their limits.
Monitors stay off until this is done once.

  procmon configure --enable      turn monitors on with the example values below
  procmon configure < body.json   store your own settings (the body below)
  procmon configure --show        print what is stored

The example values (what --enable stores):

  {"sandbox": {
     "mode": "host",
     "process_monitor": true,
     "work_duration": {"protocol": "forge-work-duration-v2", "timeout_seconds": null},
     "monitor_owner_grace_seconds": 30,
     "monitor_timeout_seconds": null,
     "max_output_bytes": 1000000,
     "command_limit": 20}}

What each setting does:

  mode                         where services run; only "host" (this machine)
                               is supported
  process_monitor              true turns monitors on; it needs work_duration
  work_duration.protocol       must be "forge-work-duration-v2"
  work_duration.timeout_seconds
                               a deadline for everything a run starts, counted
                               from the run's creation; null for none
  monitor_owner_grace_seconds  how long a guardian may go without renewing its
                               claim on a service (it renews every third of
                               this) before status says needs_reconciliation;
                               null means 30
  monitor_timeout_seconds      a deadline for each service, from its start;
                               at it the service is stopped (timed_out); null
                               for none
  max_output_bytes             output a service may print; past it the service
                               is stopped (output_limit) and the log keeps the
                               first max_output_bytes (a few fewer when the cut
                               would split a [REDACTED] marker: it ends before
                               it); null for no limit
  command_limit                how many services a run may start (each start
                               uses one, never given back); null for no limit
  secret_env (optional)        names of environment variables whose values are
                               secrets, redacted from output on top of those
                               secret by name (*TOKEN*, *SECRET*, *PASSWORD*,
                               *_KEY and the others procmon start --help lists)
  private_paths (optional)     paths wait --file refuses to read (default
                               .git, .ssh, .env)

Limits are positive whole numbers or null. To raise the output cap or the
number of starts, store a body with other values, then start a new run
(procmon run new): a run keeps the settings of the moment it was created,
and the run "default" is made on first use. The body may also come
wrapped like every request, as {"request": {"sandbox": {...}}}.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			dir, err := openState(env)
			if err != nil {
				return err
			}
			var s state.Settings
			switch {
			case enable && show:
				// --enable builds the settings; --show, which builds none, is named.
				return protocol.Errorf(protocol.CodeInvalidRequest, "--enable and --show exclude each other").With("field", "show")
			case show:
				stored, ok, err := dir.LoadSettings()
				if err != nil {
					return err
				}
				return respond(env, g, configureResponse{Settings: stored, MonitorsEnabled: ok && stored.Sandbox.ProcessMonitor, StateDir: dir.Path})
			case enable:
				s = state.ExampleSettings()
			default:
				if s, err = readSettings(env, c); err != nil {
					return err
				}
			}
			if err := dir.SaveSettings(s); err != nil {
				return err
			}
			return respond(env, g, configureResponse{Settings: s, MonitorsEnabled: s.Sandbox.ProcessMonitor, StateDir: dir.Path})
		},
	}
	c.Flags().BoolVar(&enable, "enable", false, "turn monitors on with the example settings")
	c.Flags().BoolVar(&show, "show", false, "print the stored settings")
	return c
}

// readSettings accepts the seed's body as it is ({"sandbox": ...}) or
// wrapped like every other request ({"request": {"sandbox": ...}}).
func readSettings(env *Env, c *cobra.Command) (state.Settings, error) {
	var s state.Settings
	if env.StdinIsTerminal {
		return s, readRequest(env, c, &s)
	}
	body, err := io.ReadAll(io.LimitReader(env.Stdin, 1<<20))
	if err != nil {
		return s, protocol.Errorf(protocol.CodeInvalidRequest, "read settings: %w", err)
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) == nil {
		if _, wrapped := top["request"]; wrapped {
			var req struct {
				Request *state.Settings `json:"request"`
			}
			if err := protocol.DecodeStrict(body, &req); err != nil {
				return s, err
			}
			if req.Request == nil {
				return s, protocol.Errorf(protocol.CodeInvalidRequest, `"request" must be the settings object`).With("field", "request")
			}
			return *req.Request, nil
		}
	}
	if len(body) == 0 {
		return s, protocol.Errorf(protocol.CodeInvalidRequest, `empty settings body: send {"sandbox": {...}} on stdin, or use --enable`)
	}
	if err := protocol.DecodeStrict(body, &s); err != nil {
		return s, err
	}
	if _, ok := top["sandbox"]; !ok {
		return s, protocol.Errorf(protocol.CodeInvalidRequest, `missing "sandbox" object`).With("field", "sandbox")
	}
	return s, nil
}
