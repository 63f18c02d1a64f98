//go:build linux

package cmd

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"procmon/internal/early"
	"procmon/internal/ids"
	"procmon/internal/proc"
	"procmon/internal/protocol"
	"procmon/internal/redact"
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

// AppendJSON encodes the answer to start by hand (see
// protocol.JSONAppender): it is written on the way out of every start.
func (r *startResponse) AppendJSON(b []byte) []byte {
	b = append(b, `{"monitor_id":`...)
	b = protocol.AppendString(b, r.MonitorID, false)
	b = append(b, `,"run_id":`...)
	b = protocol.AppendString(b, r.RunID, false)
	if r.Name != "" {
		b = append(b, `,"name":`...)
		b = protocol.AppendString(b, r.Name, false)
	}
	b = append(b, `,"status":`...)
	b = protocol.AppendString(b, r.Status, false)
	b = append(b, `,"command_ordinal":`...)
	b = strconv.AppendInt(b, r.CommandOrdinal, 10)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(r.PID), 10)
	b = append(b, `,"pgid":`...)
	b = strconv.AppendInt(b, int64(r.PGID), 10)
	b = append(b, `,"argv":`...)
	b = protocol.AppendStrings(b, r.Argv, false)
	b = append(b, `,"started_at_ms":`...)
	b = strconv.AppendInt(b, r.StartedAtMs, 10)
	b = append(b, `,"ownership_expires_at_ms":`...)
	b = strconv.AppendInt(b, r.OwnershipExpiresAtMs, 10)
	b = append(b, `,"work_deadline_ms":`...)
	b = protocol.AppendOptionalInt(b, r.WorkDeadlineMs)
	if len(r.Warnings) > 0 {
		b = append(b, `,"warnings":`...)
		b = protocol.AppendStrings(b, r.Warnings, false)
	}
	return append(b, '}')
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
Variables named like *TOKEN*, *SECRET*, *PASSWORD*, *_KEY, *CREDENTIAL*
(and those named by --secret-env) are treated as secrets: their values
are redacted from the output before it is stored.`,
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
	admitted := env.Now().UnixMilli()
	if len(req.Argv) == 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidRequest, `field "argv" is required and must not be empty: procmon start -- COMMAND [ARGS...]`).With("field", "argv")
	}
	if req.Argv[0] == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidRequest, `field "argv": argv[0] is empty`).With("field", "argv")
	}
	if err := protocol.SecondsOrNull("timeout_seconds", req.TimeoutSeconds); err != nil {
		return nil, err
	}
	// A NUL byte cannot cross execve: refused here, before a slot is taken.
	for i, a := range req.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, protocol.Errorf(protocol.CodeInvalidRequest, `field "argv": argv[%d] holds a NUL byte, which no program can be passed`, i).With("field", "argv")
		}
	}
	if strings.IndexByte(req.Cwd, 0) >= 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidRequest, `field "cwd" holds a NUL byte`).With("field", "cwd")
	}
	for k, v := range req.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return nil, protocol.Errorf(protocol.CodeInvalidRequest, `field "env": %q=... is not a variable a program can be given (an empty name, or "=" or a NUL byte in it)`, k).With("field", "env")
		}
	}
	for i, s := range req.Secrets {
		if len(s) < redact.MinSecretLen {
			return nil, protocol.Errorf(protocol.CodeInvalidRequest, "secrets[%d] is shorter than %d bytes; so short a secret would shred ordinary output", i, redact.MinSecretLen).With("field", "secrets")
		}
	}
	cwd, err := resolveCwd(env, req.Cwd)
	if err != nil {
		return nil, err
	}
	// The guardian boots while admission runs and the monitor's directory
	// is made; it starts nothing until it is handed a spec, and a refused
	// start waits for it to exit and removes the directory.
	early := env.early
	env.early = nil
	if early == nil {
		dir, err := openState(env)
		if err != nil {
			return nil, err
		}
		if early, err = launch(dir); err != nil {
			return nil, err
		}
	}
	dir, monitorID, guardian := early.dir, early.monitorID, early.guardian
	defer guardian.Abandon()

	runID, err := selectedRun(env, g)
	if err != nil {
		return nil, err
	}
	run, err := loadRun(env, dir, runID)
	if err != nil {
		return nil, err
	}
	if err := admit(run, "start_process"); err != nil {
		return nil, err
	}
	if run.EndedAtMs != nil {
		return nil, protocol.Errorf(protocol.CodeRunEnded, "run %s has ended and starts nothing more; create a new one with: procmon run new", run.RunID).With("run_id", run.RunID)
	}
	if o := run.Owner; o != nil && !proc.Matches(o.PID, o.StartTicks) {
		now := env.Now().UnixMilli()
		dir.UpdateRun(run.RunID, func(r *state.Run) error {
			if r.EndedAtMs == nil {
				r.EndedAtMs, r.EndReason = &now, "owner_exited"
			}
			return nil
		})
		return nil, protocol.Errorf(protocol.CodeRunEnded, "run %s has ended: its owner (pid %d) exited; create a new one with: procmon run new", run.RunID, o.PID).With("run_id", run.RunID)
	}
	sb := run.Policy.Sandbox
	childEnv := mergeEnv(env.Environ(), req.Env)
	secrets, warnings := collectSecrets(childEnv, req, run.Policy.SecretEnv)
	spec := proc.Spec{
		StateDir:       dir.Path,
		MonitorID:      monitorID,
		RunID:          run.RunID,
		Name:           req.Name,
		Argv:           req.Argv,
		Cwd:            cwd,
		Env:            childEnv,
		Secrets:        secrets,
		AdmittedAtMs:   admitted,
		WorkDeadlineMs: workDeadline(run, admitted, req.TimeoutSeconds),
		MaxOutputBytes: sb.MaxOutputBytes,
		OwnerGraceMs:   run.Policy.OwnerGraceSeconds() * 1000,
		Owner:          run.Owner,
	}
	guardian.Prepare(&spec)
	// The slot is taken before anything is spawned and never refunded.
	// The guardian has the spec while the slot is made durable, and spawns
	// the child only at the handoff, once it is.
	_, err = dir.TakeOrdinal(run.RunID, sb.CommandLimit, func(ordinal int64) error {
		spec.CommandOrdinal = ordinal
		return guardian.Send(spec)
	})
	if err != nil {
		return nil, err
	}
	m, err := guardian.Handoff()
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

// earlyGuardian is a guardian launched for a start not yet admitted.
type earlyGuardian struct {
	dir       *state.Dir
	monitorID string
	guardian  *proc.PendingGuardian
}

func launch(dir *state.Dir) (*earlyGuardian, error) {
	id := ids.NewID("m_")
	pg, err := proc.StartGuardian(dir, id)
	if err != nil {
		return nil, err
	}
	return &earlyGuardian{dir: dir, monitorID: id, guardian: pg}, nil
}

// launchEarly takes charge of the guardian that package early launched,
// before main, for "procmon start ..." in a state directory already made
// (see early). A state directory that fails its checks here abandons it,
// and runStart meets and reports the failure. A guardian that runStart
// does not take is abandoned when Main returns.
func launchEarly() *earlyGuardian {
	g := early.TakeLaunched()
	if g == nil {
		return nil
	}
	dir, err := state.Open(g.StateDir)
	if err != nil {
		g.Abandon()
		return nil
	}
	pg, err := proc.AdoptGuardian(dir, g)
	if err != nil {
		return nil
	}
	return &earlyGuardian{dir: dir, monitorID: g.MonitorID, guardian: pg}
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

// workDeadline is the smallest chosen cap: the run's work duration counted
// from the run's creation, the monitor timeout and the request's timeout
// counted from admission. None chosen: no deadline.
func workDeadline(run *state.Run, admittedMs int64, requestSeconds *int64) *int64 {
	var deadline *int64
	consider := func(fromMs int64, seconds *int64) {
		if seconds == nil {
			return
		}
		d := int64(math.MaxInt64) // saturated: a stored policy may predate the bound
		if *seconds <= (math.MaxInt64-fromMs)/1000 {
			d = fromMs + *seconds*1000
		}
		if deadline == nil || d < *deadline {
			deadline = &d
		}
	}
	if wd := run.Policy.Sandbox.WorkDuration; wd != nil {
		consider(run.CreatedAtMs, wd.TimeoutSeconds)
	}
	consider(admittedMs, run.Policy.Sandbox.MonitorTimeoutSeconds)
	consider(admittedMs, requestSeconds)
	return deadline
}

// mergeEnv overlays the request's variables on the inherited environment.
func mergeEnv(inherited []string, extra map[string]string) []string {
	out := make([]string, 0, len(inherited)+len(extra))
	for _, kv := range inherited {
		k, _, _ := strings.Cut(kv, "=")
		if _, replaced := extra[k]; !replaced {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}

// secretName reports whether a variable is secret by its name alone.
func secretName(name string) bool {
	n := strings.ToUpper(name)
	return strings.Contains(n, "TOKEN") || strings.Contains(n, "SECRET") ||
		strings.Contains(n, "PASSWORD") || strings.Contains(n, "CREDENTIAL") ||
		strings.HasSuffix(n, "_KEY")
}

// collectSecrets gathers the values to redact: the request's secrets and
// the values of secret variables (by name pattern, the request's
// secret_env and the settings' secret_env). A variable's value too short
// to redact safely is left alone and named in a warning.
func collectSecrets(childEnv []string, req startRequest, settingsNames []string) (secrets, warnings []string) {
	secrets = append(secrets, req.Secrets...)
	named := map[string]bool{}
	for _, n := range append(append([]string(nil), req.SecretEnv...), settingsNames...) {
		named[n] = true
	}
	for _, kv := range childEnv {
		k, v, _ := strings.Cut(kv, "=")
		if !named[k] && !secretName(k) {
			continue
		}
		if v == "" {
			continue
		}
		if len(v) < redact.MinSecretLen {
			warnings = append(warnings, fmt.Sprintf("env %s looks secret but its value is shorter than %d bytes, so it is not redacted", k, redact.MinSecretLen))
			continue
		}
		secrets = append(secrets, v)
	}
	return secrets, warnings
}
