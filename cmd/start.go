//go:build linux

package cmd

import (
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"procmon/internal/proc"
	"procmon/internal/protocol"
	"procmon/internal/state"
)

type startRequest struct {
	Argv           []string          `json:"argv"`
	Cwd            string            `json:"cwd,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	Secrets        []string          `json:"secrets,omitempty"`
	SecretEnv      []string          `json:"secret_env,omitempty"`
	TimeoutSeconds *int64            `json:"timeout_seconds,omitempty"`
	Name           string            `json:"name,omitempty"`
}

type startResponse struct {
	MonitorID            string   `json:"monitor_id"`
	RunID                string   `json:"run_id"`
	Name                 string   `json:"name,omitempty"`
	Status               string   `json:"status"`
	CommandOrdinal       int64    `json:"command_ordinal"`
	PID                  int      `json:"pid"`
	PGID                 int      `json:"pgid"`
	Argv                 []string `json:"argv"`
	StartedAtMs          int64    `json:"started_at_ms"`
	OwnershipExpiresAtMs int64    `json:"ownership_expires_at_ms"`
	WorkDeadlineMs       *int64   `json:"work_deadline_ms"`
	Warnings             []string `json:"warnings,omitempty"`
}

func newStartCmd(env *Env, g *globals) *cobra.Command {
	var req startRequest
	var envPairs []string
	var timeout int64
	c := &cobra.Command{
		Use:   "start [flags] [--] COMMAND [ARGS...]",
		Short: "Start a service under a detached guardian",
		Long: `Start a service under a detached guardian and return once its running
handoff is durable. Takes one command slot of the run's budget.

  procmon start python3 -m http.server 8000
  procmon start --name api --timeout 10m --env PORT=8000 ./server --verbose
  echo '{"request":{"argv":["python3","-u","server.py"]}}' | procmon start

procmon's own flags go before the command: everything from the command on
is the command's, flags included ("--" before it is allowed, and needed
only for a command whose name starts with "-"). A --timeout is a work
deadline counted from now: 30s, 10m, 2h, or a plain number of seconds.

Start services in the foreground: a daemonizing service leaves its group.
Variables named like *TOKEN*, *SECRET*, *PASSWORD*, *PASSWD*,
*PASSPHRASE*, *APIKEY*, *CREDENTIAL*, *_KEY, *_PASS or *_PWD (and those
named by --secret-env) are treated as secrets: their values are redacted
from the output before it is stored.`,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 || flagsUsed(c) {
				req.Argv = args
				if c.Flags().Changed("timeout") {
					req.TimeoutSeconds = &timeout
				}
				var err error
				if req.Env, err = envFlags(envPairs); err != nil {
					return err
				}
			} else if err := readRequest(env, c, &req); err != nil {
				return err
			}
			resp, err := runStart(env, g, req)
			if err != nil {
				return err
			}
			if err := respond(env, g, resp); err != nil {
				// The service runs: say which, where the caller may see it.
				return protocol.Errorf(protocol.CodeInternal, "monitor %s is running, but its handoff could not be written: %v", resp.MonitorID, err).With("monitor_id", resp.MonitorID)
			}
			return nil
		},
	}
	c.Flags().StringVar(&req.Cwd, "cwd", "", "working directory and component root (default: the current directory)")
	c.Flags().StringArrayVar(&envPairs, "env", nil, "NAME=VALUE added to the inherited environment (repeatable)")
	c.Flags().StringArrayVar(&req.SecretEnv, "secret-env", nil, "name of an env variable whose value is a secret (repeatable)")
	secondsVar(c, &timeout, "timeout", 0, "work deadline from now (30s, 10m, 2h; a plain number is seconds)")
	c.Flags().StringVar(&req.Name, "name", "", "a label for the service, to name it by with --name later")
	// Flags after the command are the command's: procmon start python3 -m
	// http.server needs no "--".
	c.Flags().SetInterspersed(false)
	return c
}

func runStart(env *Env, g *globals, req startRequest) (*startResponse, error) {
	if len(req.Argv) == 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidRequest, `field "argv" is required and must not be empty: procmon start -- COMMAND [ARGS...]`).With("field", "argv")
	}
	dir, err := openState(env)
	if err != nil {
		return nil, err
	}
	runID, err := selectedRun(env, g)
	if err != nil {
		return nil, err
	}
	cwd, err := resolveCwd(env, req.Cwd)
	if err != nil {
		return nil, err
	}
	m, warnings, err := proc.Start(dir, proc.StartRequest{
		RunID: runID,
		Name:  req.Name,
		Command: proc.Command{
			Argv:           req.Argv,
			Cwd:            cwd,
			Env:            req.Env,
			Inherited:      env.Environ(),
			Secrets:        req.Secrets,
			SecretEnv:      req.SecretEnv,
			TimeoutSeconds: req.TimeoutSeconds,
		},
	})
	if err != nil {
		return nil, err
	}
	return &startResponse{
		MonitorID:            m.MonitorID,
		RunID:                m.RunID,
		Name:                 m.Name,
		Status:               state.StatusRunning,
		CommandOrdinal:       m.CommandOrdinal,
		PID:                  m.PID,
		PGID:                 m.PGID,
		Argv:                 m.Argv,
		StartedAtMs:          m.StartedAtMs,
		OwnershipExpiresAtMs: m.OwnershipExpiresAtMs,
		WorkDeadlineMs:       m.WorkDeadlineMs,
		Warnings:             warnings,
	}, nil
}

// envFlags turns --env NAME=VALUE flags into a request's env; none: nil.
func envFlags(pairs []string) (map[string]string, error) {
	var env map[string]string
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, protocol.Errorf(protocol.CodeInvalidRequest, "--env %q: want NAME=VALUE", kv).With("field", "env")
		}
		if env == nil {
			env = map[string]string{}
		}
		env[k] = v
	}
	return env, nil
}

func resolveCwd(env *Env, cwd string) (string, error) {
	if cwd == "" {
		wd, err := env.Getwd()
		if err != nil {
			return "", protocol.Errorf(protocol.CodeExecFailed, "current directory: %w", err)
		}
		return wd, nil
	}
	if !filepath.IsAbs(cwd) {
		wd, err := env.Getwd()
		if err != nil {
			return "", protocol.Errorf(protocol.CodeExecFailed, "current directory: %w", err)
		}
		cwd = filepath.Join(wd, cwd)
	}
	return filepath.Clean(cwd), nil
}
