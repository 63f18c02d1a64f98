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
		Long: `Store the runner settings. Monitors are disabled until this is done.

  procmon configure --enable     store the seed's example settings: host mode,
                                 work-duration v2 with no deadline, owner grace
                                 30 s, 1000000 output bytes, 20 commands per run
  procmon configure < body.json  store {"sandbox": {...}} (or {"request": {...}})
  procmon configure --show       print what is stored

Rules: only "mode": "host"; process_monitor needs work_duration with protocol
"forge-work-duration-v2"; limits are positive integers or null. Settings are
frozen into a run when it is created: changing them never changes an existing
run. Optional "secret_env" (names of env variables holding secrets) and
"private_paths" (refused as wait targets; default .git, .ssh, .env).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			dir, err := openState(env)
			if err != nil {
				return err
			}
			var s state.Settings
			switch {
			case enable && show:
				return protocol.Errorf(protocol.CodeInvalidRequest, "--enable and --show exclude each other")
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
	c.Flags().BoolVar(&enable, "enable", false, "store the seed's example settings")
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
