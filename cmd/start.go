//go:build linux

package cmd

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

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
	// Name is a pointer so that a name given empty is told from none.
	Name *string `json:"name,omitempty"`
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
	var name string
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
A --name labels the service, to name it by later (procmon logs api, or
--name api): up to 64 bytes of UTF-8 without control characters, not
beginning or ending with a space, and not starting with "m_", which
begins a monitor id, nor with "-", which begins a flag.

Start services in the foreground (nginx -g 'daemon off;', redis-server
--daemonize no): custody ends when the command exits, and what it leaves
running, a daemon it forked included, is then stopped; the receipt's
signals say so.
Interrupted (Ctrl-C, SIGTERM, SIGHUP) before it answers, start drains the
service it started and answers wait_interrupted (exit status 130) with its
receipt, so that no service runs on unnamed. On a terminal the receipt is
shown as cancel shows it, then the error.
Variables named like *TOKEN*, *SECRET*, *PASSWORD*, *PASSWD*,
*PASSPHRASE*, *APIKEY*, *CREDENTIAL*, *_KEY, *_PASS or *_PWD (and those
named by --secret-env) are treated as secrets: their values are redacted
from the output before it is stored, as they stand and as programs
escape and encode them. Output that may be the start of a secret is held
back until the bytes after it decide: a line that ends in the first
bytes of a secret (or of a secret's line) is stored, and seen by logs
and wait, once more output comes; if none comes before the service
ends, such a tail of three bytes or more is stored as [REDACTED].`,
		RunE: func(c *cobra.Command, args []string) error {
			// A "--" says a command follows: none is errNoArgv, not a
			// request to read from stdin.
			if len(args) > 0 || flagsUsed(c) || c.ArgsLenAtDash() == 0 {
				req.Argv = args
				if c.Flags().Changed("timeout") {
					req.TimeoutSeconds = &timeout
				}
				if c.Flags().Changed("name") {
					req.Name = &name
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
	c.Flags().StringVar(&name, "name", "", "a label for the service, to name it by later (procmon logs NAME)")
	// Flags after the command are the command's: procmon start python3 -m
	// http.server needs no "--".
	c.Flags().SetInterspersed(false)
	return c
}

func runStart(env *Env, g *globals, req startRequest) (*startResponse, error) {
	if len(req.Argv) == 0 {
		return nil, errNoArgv()
	}
	var name string
	if req.Name != nil {
		if err := checkName(*req.Name); err != nil {
			return nil, err
		}
		name = *req.Name
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
	// An interrupted start (Ctrl-C, SIGTERM, SIGHUP; a shim's caller
	// giving up) must not leave a service running that no answer names:
	// the handoff completes, then the service is drained.
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(interrupts)
	m, warnings, err := proc.Start(dir, proc.StartRequest{
		RunID: runID,
		Name:  name,
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
	// os/signal hands a signal to its channels from another goroutine: one
	// received before the handoff may not be in interrupts yet. Stop
	// returns only once every signal received so far has been delivered;
	// late, registered first, keeps one that comes meanwhile from killing
	// start with the handoff decided but not yet answered. (A signal sent
	// to the process that another thread has taken from the kernel but not
	// yet handed to the runtime comes too late: the answer then names the
	// running service.)
	late := make(chan os.Signal, 1)
	signal.Notify(late, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(late)
	signal.Stop(interrupts)
	select {
	case <-interrupts:
		return nil, drainInterrupted(env, g, dir, m)
	default:
	}
	if name != "" {
		warnings = append(warnings, nameTakenWarnings(dir, m)...)
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

// nameTakenWarnings warns when another live monitor of m's run carries
// m's name: names are labels, not keys, so the start stands, but the
// name is refused until those started before this one have ended (see
// resolveName).
// (Two starts at once may both miss the other.) It reads every record,
// so it runs once the start is decided, after the check for an
// interrupt that the handoff's answer waits on.
func nameTakenWarnings(dir *state.Dir, m *state.Monitor) []string {
	live, _ := namedMonitors(dir, m.RunID, m.Name)
	var others []string
	for _, o := range live {
		if o.MonitorID != m.MonitorID {
			others = append(others, o.MonitorID)
		}
	}
	if len(others) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("the name %q is carried by live %s too: it names none of them until the older have ended, whether or not this one has; use their ids", m.Name, strings.Join(others, ", "))}
}

// drainInterrupted drains a monitor whose start was interrupted after
// its handoff, and answers as an interrupted exec does: wait_interrupted,
// with the receipt as the result. A person, who sees no details, is
// shown the receipt as cancel shows it, then the error.
func drainInterrupted(env *Env, g *globals, dir *state.Dir, m *state.Monitor) error {
	o, err := proc.Observe(dir, m.MonitorID)
	if err == nil {
		o, err = proc.CancelObserved(dir, o, proc.DefaultDrainGraceMs, proc.ExecInterrupted)
	}
	if err != nil {
		next := "procmon cancel " + m.MonitorID
		if protocol.HasCode(err, protocol.CodeNeedsReconciliation) {
			next = "procmon reconcile " + m.MonitorID
		}
		return protocol.Errorf(protocol.CodeWaitInterrupted, "start of %s was interrupted after its handoff, and draining %s failed: %v; stop it with: %s", m.Argv[0], m.MonitorID, err, next).
			With("monitor_id", m.MonitorID).With("command_ordinal", m.CommandOrdinal)
	}
	where := " (details.result has its receipt)"
	receipt := receiptOf(o)
	if g.human {
		// Shown or not (a closed stdout), the error says what became of
		// the service.
		render(env, g, &receipt)
		where = ""
	}
	return protocol.Errorf(protocol.CodeWaitInterrupted, "start of %s was interrupted: %s was drained%s", m.Argv[0], m.MonitorID, where).
		With("monitor_id", m.MonitorID).With("command_ordinal", m.CommandOrdinal).With("result", receipt)
}

// maxNameBytes is the longest name a monitor may be given: a label to
// type, and to read in a column of list.
const maxNameBytes = 64

// checkName refuses a name that a person could not type back, or that
// would not show as itself: empty, longer than maxNameBytes, not UTF-8,
// holding a control character (a tab or a newline breaks list's rows, an
// escape drives the terminal), beginning or ending with a space (of
// spaces only, it shows as nothing), or starting with "m_", which on the
// command line begins a monitor id. The message quotes the name escaped,
// never as it is.
func checkName(name string) error {
	refuse := func(format string, a ...any) error {
		return protocol.Errorf(protocol.CodeInvalidRequest, `field "name" `+format, a...).With("field", "name")
	}
	switch {
	case name == "":
		return refuse("is empty; leave it out for a monitor without a name")
	case len(name) > maxNameBytes:
		return refuse("is %d bytes long; a name has at most %d", len(name), maxNameBytes)
	case !utf8.ValidString(name):
		return refuse("is not valid UTF-8: %q", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return refuse("holds a control character (a tab, a newline, an escape, ...): %q", name)
	case strings.IndexFunc(name, func(r rune) bool { return unicode.Is(unicode.Cf, r) }) >= 0:
		// A zero-width space or a direction override shows as something
		// that cannot be typed back.
		return refuse("holds an invisible formatting character (a zero-width space, a direction override, ...): %q", name)
	case strings.TrimFunc(name, unicode.IsSpace) != name:
		// " web" and "web" look alike in list, and a name of spaces only
		// shows as nothing.
		return refuse("begins or ends with a space, which would not show where it is named: %q", name)
	case strings.HasPrefix(name, "m_"):
		return refuse(`starts with "m_", which on the command line begins a monitor id: %q; choose another name`, name)
	case strings.HasPrefix(name, "-"):
		// Named as an argument, "--all" or "-f" is read as a flag, and
		// completion offered it where a flag goes.
		return refuse(`starts with "-", which on the command line begins a flag: %q; choose another name`, name)
	case looksLikeCredential(name):
		// Stored redacted, it could never be named again.
		return refuse("has the form of a credential, which would be stored redacted; choose another name")
	}
	return nil
}

// looksLikeCredential reports whether the format rules would redact s.
func looksLikeCredential(s string) bool {
	r, err := redact.New(nil)
	return err == nil && r.String(s) != s
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
