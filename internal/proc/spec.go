package proc

import (
	"procmon/internal/protocol"
	"procmon/internal/state"
)

// Spec is everything a guardian needs, handed to it over a pipe so that
// secrets never touch disk or a command line.
type Spec struct {
	StateDir       string       `json:"state_dir"`
	MonitorID      string       `json:"monitor_id"`
	RunID          string       `json:"run_id"`
	Name           string       `json:"name,omitempty"`
	Argv           []string     `json:"argv"`
	Cwd            string       `json:"cwd"`
	Env            []string     `json:"env"`
	Secrets        []string     `json:"secrets,omitempty"`
	CommandOrdinal int64        `json:"command_ordinal"`
	AdmittedAtMs   int64        `json:"admitted_at_ms"`
	WorkDeadlineMs *int64       `json:"work_deadline_ms"`
	MaxOutputBytes *int64       `json:"max_output_bytes"`
	OwnerGraceMs   int64        `json:"owner_grace_ms"`
	Owner          *state.Owner `json:"owner,omitempty"`
}

// handoff is the guardian's one message to the launcher: the durable
// running record, or the error that prevented it.
type handoff struct {
	Monitor *state.Monitor      `json:"monitor,omitempty"`
	Error   *protocol.ErrorBody `json:"error,omitempty"`
}

// DefaultDrainGraceMs is how long a group has between SIGTERM and SIGKILL
// unless a cancel names another grace.
const DefaultDrainGraceMs = 5000
