// Package protocol owns procmon's wire format: the typed error object with
// its stable codes and exit statuses, strict decoding of one request object,
// and encoding of one response object. It never performs an operation.
package protocol

import (
	"errors"
	"fmt"
	"maps"
)

// Code is a stable error code. Codes are added, never renamed.
type Code string

// The stable error codes of the contract.
const (
	CodeInvalidRequest         Code = "invalid_request"
	CodeInvalidCondition       Code = "invalid_condition"
	CodeUnsupportedPlatform    Code = "unsupported_platform"
	CodeMonitorsDisabled       Code = "monitors_disabled"
	CodeLegacyPolicy           Code = "legacy_policy"
	CodeTransportUnavailable   Code = "transport_unavailable"
	CodeToolNotAllowed         Code = "tool_not_allowed"
	CodeCheckpointsIncompat    Code = "checkpoints_incompatible"
	CodeCommandBudgetExhausted Code = "command_budget_exhausted"
	CodeRunEnded               Code = "run_ended"
	CodeUnknownMonitor         Code = "unknown_monitor"
	CodeUnknownRun             Code = "unknown_run"
	CodeNeedsReconciliation    Code = "needs_reconciliation"
	CodeExecFailed             Code = "exec_failed"
	CodeNonreapingUnavailable  Code = "nonreaping_unavailable"
	CodeWaitInterrupted        Code = "wait_interrupted"
	CodeStateCorrupt           Code = "state_corrupt"
	CodeStateUnsafe            Code = "state_unsafe"
	CodeInternal               Code = "internal"
)

// Error is procmon's one error type: a stable code, a message that says
// what to do next, optional structured details, and the cause.
type Error struct {
	Code    Code
	Message string
	Details map[string]any
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
// A %w verb in format records the cause.
func Errorf(code Code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

// Wrapf returns an *Error that says more of err, which must not be nil,
// a %w verb in format recording it: err's code and details (a lock to
// find, a path to inspect) are kept, so that an answer built on err
// loses none of what err said.
func Wrapf(err error, format string, args ...any) *Error {
	inner := AsError(err)
	e := Errorf(inner.Code, format, args...)
	e.Details = maps.Clone(inner.Details)
	return e
}

// With returns e with one more detail set.
func (e *Error) With(key string, value any) *Error {
	if e.Details == nil {
		e.Details = make(map[string]any)
	}
	e.Details[key] = value
	return e
}

// AsError finds the *Error in err's chain, or wraps err as internal.
func AsError(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return &Error{Code: CodeInternal, Message: err.Error(), Err: err}
}

// HasCode reports whether err carries the given code.
func HasCode(err error, code Code) bool {
	var pe *Error
	return errors.As(err, &pe) && pe.Code == code
}

// ExitStatus is the process exit status for an error of this code.
func (c Code) ExitStatus() int {
	switch c {
	case CodeInvalidRequest, CodeInvalidCondition:
		return 2
	case CodeMonitorsDisabled, CodeLegacyPolicy, CodeTransportUnavailable,
		CodeToolNotAllowed, CodeCheckpointsIncompat, CodeCommandBudgetExhausted,
		CodeRunEnded:
		return 3
	case CodeUnknownMonitor, CodeUnknownRun:
		return 4
	case CodeNeedsReconciliation:
		return 5
	case CodeWaitInterrupted:
		return 130
	}
	return 1
}
