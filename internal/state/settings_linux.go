package state

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"procmon/internal/protocol"
)

// WorkDurationV2 is the only work-duration protocol that can enable monitors.
const WorkDurationV2 = "forge-work-duration-v2"

// DefaultOwnerGraceSeconds applies when monitor_owner_grace_seconds is null.
const DefaultOwnerGraceSeconds = 30

// Settings is the runner-settings body: the seed's sandbox object plus
// procmon's optional secret_env names and private_paths. Settings hold
// names only, never a secret value.
type Settings struct {
	Sandbox      Sandbox  `json:"sandbox"`
	SecretEnv    []string `json:"secret_env,omitempty"`
	PrivatePaths []string `json:"private_paths,omitempty"`
}

// Sandbox is the seed's sandbox object.
type Sandbox struct {
	Mode                     string        `json:"mode"`
	ProcessMonitor           bool          `json:"process_monitor"`
	WorkDuration             *WorkDuration `json:"work_duration"`
	MonitorOwnerGraceSeconds *int64        `json:"monitor_owner_grace_seconds"`
	MonitorTimeoutSeconds    *int64        `json:"monitor_timeout_seconds"`
	MaxOutputBytes           *int64        `json:"max_output_bytes"`
	CommandLimit             *int64        `json:"command_limit"`
}

// WorkDuration selects the work-duration policy.
type WorkDuration struct {
	Protocol       string `json:"protocol"`
	TimeoutSeconds *int64 `json:"timeout_seconds"`
}

// DefaultPrivatePaths are refused as wait targets when settings name none.
var DefaultPrivatePaths = []string{".git", ".ssh", ".env"}

func ptr(v int64) *int64 { return &v }

// ExampleSettings returns the seed's example runner settings.
func ExampleSettings() Settings {
	return Settings{Sandbox: Sandbox{
		Mode:                     "host",
		ProcessMonitor:           true,
		WorkDuration:             &WorkDuration{Protocol: WorkDurationV2},
		MonitorOwnerGraceSeconds: ptr(DefaultOwnerGraceSeconds),
		MaxOutputBytes:           ptr(1000000),
		CommandLimit:             ptr(20),
	}}
}

// Validate applies the seed's rules: host mode only, the v2 work-duration
// policy to enable monitors, limits positive or null.
func (s Settings) Validate() error {
	sb := s.Sandbox
	switch sb.Mode {
	case "host":
	case "docker", "pool":
		return protocol.Errorf(protocol.CodeTransportUnavailable, "sandbox mode %q is unavailable: process monitors run only in \"host\" mode", sb.Mode).With("field", "sandbox.mode")
	case "":
		return protocol.Errorf(protocol.CodeInvalidRequest, `field "sandbox.mode" is required: use "host"`).With("field", "sandbox.mode")
	default:
		return protocol.Errorf(protocol.CodeInvalidRequest, "field \"sandbox.mode\": unknown mode %q, use \"host\"", sb.Mode).With("field", "sandbox.mode")
	}
	limits := []struct {
		field string
		v     *int64
	}{
		{"sandbox.monitor_owner_grace_seconds", sb.MonitorOwnerGraceSeconds},
		{"sandbox.monitor_timeout_seconds", sb.MonitorTimeoutSeconds},
		{"sandbox.max_output_bytes", sb.MaxOutputBytes},
		{"sandbox.command_limit", sb.CommandLimit},
	}
	if sb.WorkDuration != nil {
		limits = append(limits, struct {
			field string
			v     *int64
		}{"sandbox.work_duration.timeout_seconds", sb.WorkDuration.TimeoutSeconds})
	}
	for _, l := range limits {
		check := protocol.PositiveOrNull
		if strings.HasSuffix(l.field, "_seconds") {
			check = protocol.SecondsOrNull
		}
		if err := check(l.field, l.v); err != nil {
			return err
		}
	}
	if sb.ProcessMonitor && (sb.WorkDuration == nil || sb.WorkDuration.Protocol != WorkDurationV2) {
		return protocol.Errorf(protocol.CodeLegacyPolicy, "process_monitor needs work_duration with protocol %q; a capture without it keeps the legacy command policy and cannot enable monitors", WorkDurationV2).With("field", "sandbox.work_duration")
	}
	for i, p := range s.PrivatePaths {
		if !cleanRelative(p) {
			return protocol.Errorf(protocol.CodeInvalidRequest, "private_paths[%d] %q must be a clean relative path inside the component (like .git or config/secrets): not empty, not absolute, no \".\" or \"..\" component, no doubled or trailing slash", i, p).
				With("field", fmt.Sprintf("private_paths[%d]", i))
		}
	}
	return CheckSecretEnv(s.SecretEnv)
}

// CheckSecretEnv refuses a secret_env list (of the settings, or of a
// start or exec request) with a name that no variable could have, as env
// refuses one: empty, or holding "=" or a NUL byte. Such a name would
// redact nothing, silently. Any other name is one a program may be given
// (DB-PASS, from a container's environment), so it is taken.
func CheckSecretEnv(names []string) error {
	for i, n := range names {
		if !VarName(n) {
			return protocol.Errorf(protocol.CodeInvalidRequest, "secret_env[%d] %q is not a variable name a program can be given (an empty name, or \"=\" or a NUL byte in it)", i, n).
				With("field", fmt.Sprintf("secret_env[%d]", i))
		}
	}
	return nil
}

// VarName reports whether n is a name a program can be given for an
// environment variable: not empty, no "=" or NUL byte in it.
func VarName(n string) bool {
	return n != "" && !strings.ContainsAny(n, "=\x00")
}

// cleanRelative reports whether p is a relative path in its clean form
// that stays where it starts: no empty, "." or ".." component.
func cleanRelative(p string) bool {
	if p == "" || filepath.IsAbs(p) || filepath.Clean(p) != p || strings.ContainsRune(p, 0) {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if c == "." || c == ".." {
			return false
		}
	}
	return true
}

// OwnerGraceSeconds is the ownership window, the seed's 30 when null.
func (s Settings) OwnerGraceSeconds() int64 {
	if g := s.Sandbox.MonitorOwnerGraceSeconds; g != nil {
		return *g
	}
	return DefaultOwnerGraceSeconds
}

// Private returns the private paths in force.
func (s Settings) Private() []string {
	if len(s.PrivatePaths) > 0 {
		return s.PrivatePaths
	}
	return DefaultPrivatePaths
}

const settingsName = "settings.json"

// SaveSettings validates and durably stores the settings.
func (d *Dir) SaveSettings(s Settings) error {
	if err := s.Validate(); err != nil {
		return err
	}
	return withLock(d.Path, d.Path, func() error {
		return writeRecord(d.Path, d.Path, settingsName, "settings", s, true)
	})
}

// LoadSettings returns the stored settings; ok is false when none are.
func (d *Dir) LoadSettings() (s Settings, ok bool, err error) {
	err = readRecord(d.Path, d.Path, settingsName, "settings", &s)
	if errors.Is(err, fs.ErrNotExist) {
		return Settings{}, false, nil
	}
	return s, err == nil, err
}

// MonitorsDisabled is the error for a state directory with monitors off.
func MonitorsDisabled(why string) error {
	return protocol.Errorf(protocol.CodeMonitorsDisabled, "process monitors are disabled (%s)", why)
}
