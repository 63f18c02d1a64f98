//go:build linux

package cmd

import (
	"reflect"

	"procmon/internal/protocol"
	"procmon/internal/schema"
	"procmon/internal/state"
)

// commandSchema is one command of the agent contract: the Go types its
// request and response are decoded and encoded from, and, for the agent
// tools, the tool's name and what it is for.
type commandSchema struct {
	Command     string
	Tool        string // "" for a command no agent tool serves
	Description string
	Request     reflect.Type // nil: the command takes no request body
	Response    reflect.Type
	// ResponseAnyOf lists the responses of a command that answers with
	// one of several shapes.
	ResponseAnyOf []reflect.Type
}

// runListRequest is the request of run list, which has no fields.
type runListRequest struct{}

// runListResponse is what run list prints.
type runListResponse struct {
	Runs []runView `json:"runs"`
	// Errors are the runs that cannot be shown (a damaged run.json).
	Errors []runErrorRow `json:"errors,omitempty"`
}

// runErrorRow is a run of run list that cannot be shown, and why.
type runErrorRow struct {
	RunID string              `json:"run_id"`
	Error *protocol.ErrorBody `json:"error"`
}

// errorCodes are the stable error codes, in the order of the contract.
var errorCodes = []protocol.Code{
	protocol.CodeInvalidRequest, protocol.CodeInvalidCondition, protocol.CodeUnsupportedPlatform,
	protocol.CodeMonitorsDisabled, protocol.CodeLegacyPolicy, protocol.CodeTransportUnavailable,
	protocol.CodeToolNotAllowed, protocol.CodeCheckpointsIncompat, protocol.CodeCommandBudgetExhausted,
	protocol.CodeRunEnded, protocol.CodeUnknownMonitor, protocol.CodeUnknownRun,
	protocol.CodeNeedsReconciliation, protocol.CodeExecFailed, protocol.CodeNonreapingUnavailable,
	protocol.CodeWaitInterrupted, protocol.CodeStateCorrupt, protocol.CodeStateUnsafe, protocol.CodeInternal,
}

var commandSchemas = []commandSchema{
	{
		Command: "start", Tool: "start_process",
		Description: "Start a long-running service (a dev server, a database) under a detached guardian and return once its running handoff is durable. Keep the returned monitor_id: every other tool takes it. Takes one slot of the run's command budget, never refunded. Then call wait_process ONCE for its readiness line instead of polling.",
		Request:     reflect.TypeFor[startRequest](), Response: reflect.TypeFor[startResponse](),
	},
	{
		Command: "wait", Tool: "wait_process",
		Description: "Block until a monitored service shows a literal text in its redacted output, exits, or writes a file beneath its working directory, then return typed evidence. One call is all that is needed: the wait is event-driven. Outcome timeout or an interrupted wait leaves the service running. Read outcome before acting: satisfied, timeout, process_ended (see observation.exit_code and log_tail) or unavailable (custody unverified).",
		Request:     reflect.TypeFor[waitRequest](), Response: reflect.TypeFor[waitResponse](),
	},
	{
		Command: "status", Tool: "process_status",
		Description: "Show one monitor's record and status (running, settling, exited, cancelled, timed_out, output_limit, needs_reconciliation). An exit code appears only with a verified receipt. Without monitor_id (command line only) it lists the run's monitors.",
		Request:     reflect.TypeFor[statusRequest](), ResponseAnyOf: []reflect.Type{reflect.TypeFor[monitorView](), reflect.TypeFor[listResponse]()},
	},
	{
		Command: "logs", Tool: "process_logs",
		Description: "Return a bounded window of a monitor's output, with credentials already redacted: by default the last 65536 bytes; with offset, from that byte of the redacted stream, and next_offset continues without gap or overlap.",
		Request:     reflect.TypeFor[logsRequest](), Response: reflect.TypeFor[logsResponse](),
	},
	{
		Command: "cancel", Tool: "cancel_process",
		Description: "Stop a monitored service: SIGTERM (with SIGCONT) to its process group and escaped descendants, the grace period, SIGKILL to what remains, verification that nothing is left, and its terminal receipt. Idempotent: an ended monitor returns its existing receipt. Other monitors keep running.",
		Request:     reflect.TypeFor[drainRequest](), ResponseAnyOf: []reflect.Type{reflect.TypeFor[receiptView](), reflect.TypeFor[cancelManyResponse]()},
	},
	{
		Command: "exec", Tool: "execute_command",
		Description: "Run one foreground command (a test client such as curl or pytest) and return its actual result: exit_code or signal, and the end of its redacted output. Takes one slot of the run's command budget, shared with starts. Name the monitors it needs in depends_on: it is refused (needs_reconciliation) unless each is running with a current ownership window. Its deadline defaults to 600 seconds.",
		Request:     reflect.TypeFor[execRequest](), Response: reflect.TypeFor[execResponse](),
	},
	{
		Command:     "reconcile",
		Description: "Settle a monitor that needs reconciliation: kill what is left of its group only if pid, pgid and start time still prove custody, and write a receipt with custody reconciled and no exit code. There is no grace: with its guardian gone, every process left is stopped (SIGSTOP) before any is killed (SIGKILL), so that none can run a handler that leaves a process nothing names.",
		Request:     reflect.TypeFor[reconcileRequest](), Response: reflect.TypeFor[receiptView](),
	},
	{
		Command:     "list",
		Description: "List the monitors of the run, one row each; a monitor whose record cannot be trusted is a row with its error.",
		Request:     reflect.TypeFor[listOptions](), Response: reflect.TypeFor[listResponse](),
	},
	{
		Command:     "configure",
		Description: "Store the runner settings that enable process monitors (the seed's {\"sandbox\": {...}} body, or the same inside {\"request\": ...}).",
		Request:     reflect.TypeFor[state.Settings](), Response: reflect.TypeFor[configureResponse](),
	},
	{
		Command:     "run new",
		Description: "Create a run (one agent invocation) with the current settings frozen into it, and print it.",
		Request:     reflect.TypeFor[runNewRequest](), Response: reflect.TypeFor[runView](),
	},
	{
		Command:     "run end",
		Description: "End a run (run_id, else the selected one): refuse further starts and execs, drain every monitor it owns, and print the receipts.",
		Request:     reflect.TypeFor[runRequest](), Response: reflect.TypeFor[runEndResponse](),
	},
	{
		Command:     "run list",
		Description: "List the runs.",
		Request:     reflect.TypeFor[runListRequest](), Response: reflect.TypeFor[runListResponse](),
	},
	{
		Command:     "run show",
		Description: "Show a run (run_id, else the selected one): frozen policy, grants, owner and budget used.",
		Request:     reflect.TypeFor[runRequest](), Response: reflect.TypeFor[runView](),
	},
}

// schemaCatalog says, for a model to read, what each field means, in
// which units, and when it is null.
var schemaCatalog = &schema.Catalog{
	Fields: map[string]string{
		// Identity.
		"monitor_id":                   "The monitor's id (m_ followed by 20 to 32 of [0-9a-z]), as start_process returned it.",
		"run_id":                       "The run (one agent invocation) the monitor or command belongs to: \"default\" or r_ followed by 20 to 32 of [0-9a-z].",
		"name":                         "A label for the service, given at start; absent when none was given.",
		"command_ordinal":              "The durable command ordinal this start or exec took from the run's budget: 1, 2, 3, ... Starts and execs share one sequence; an ordinal is never given twice nor refunded.",
		"argv":                         "The program and its arguments, argv[0] first; it is looked up through PATH. In a response, credentials in it are redacted.",
		"cwd":                          "Working directory (absolute, or relative to the caller's). For a service it is also the component root file waits resolve beneath. Default: the caller's working directory.",
		"env":                          "Environment variables added to (or replacing those of) the inherited environment, as NAME: VALUE. Values of variables named like *TOKEN*, *SECRET*, *PASSWORD*, *PASSWD*, *PASSPHRASE*, *APIKEY*, *CREDENTIAL*, *_KEY, *_PASS, *_PWD are redacted from the output.",
		"secrets":                      "Literal strings to redact from the output wherever they appear, in any common escaping (each at least 8 bytes; with the values of the secret variables, at most 64 KiB in all, less where escapings lengthen them). Never stored.",
		"secret_env":                   "Names of environment variables whose values are secrets to redact, besides those secret by name.",
		"pid":                          "The process id of the service (or command); it leads its own process group.",
		"pgid":                         "The process group id, equal to pid: the group procmon drains.",
		"status":                       "running: alive under a current ownership window. settling: it ended or is being drained; no exit code yet. exited: it ended by itself, its output whole (see exit_code or signal). cancelled: drained by cancel, run end, owner exit or revocation (see reason). timed_out: drained at its work deadline. output_limit: its output passed max_output_bytes: drained for it, or ended by itself with its output cut (see exit_code or signal). needs_reconciliation: custody is unverified; never shows an exit code.",
		"reason":                       "Why custody ended: exited, cancel, deadline, output_limit, run_ended, owner_exited, revoked, heartbeat_missed, interrupted (an exec whose caller gave up), reconciled, or guardian_SIG* (the guardian itself was signalled).",
		"exit_code":                    "The exit status the process gave, 0 to 255. Null when it was killed by a signal (see signal) or has no verified receipt; a signal death is never encoded as 128+n.",
		"signal":                       "The name of the signal that killed the process (SIGTERM, SIGKILL, ...). Null when it exited by itself (see exit_code).",
		"started_at_ms":                "When the process was spawned, in milliseconds since the Unix epoch.",
		"ownership_expires_at_ms":      "End of the current ownership window, in milliseconds since the Unix epoch; the guardian renews it every grace/3 while custody holds. Past it without renewal the monitor needs reconciliation. The window is judged on the monotonic clock, so after a step of the wall clock this may show a time already past (or far ahead) until the next renewal. Liveness evidence only: it is not a deadline.",
		"work_deadline_ms":             "When the work is drained as timed_out, in milliseconds since the Unix epoch: the smallest of the run's work duration, the monitor timeout and the request's timeout_seconds. The guardian counts the time to it on the monotonic clock: after a step of the wall clock, the drain comes when that time has run, not at this figure. Null when none applies.",
		"warnings":                     "Things the caller should know, e.g. a secret-looking variable too short to redact.",
		"timeout_seconds":              "A chosen limit in seconds (a positive integer), counted from admission. Null or absent: none of this request's own.",
		"heartbeat_seq":                "How many times the guardian has renewed the ownership window.",
		"captured_bytes":               "Bytes of the process's output (stdout and stderr) after redaction, each credential counted as its marker; past max_output_bytes they are counted, not stored.",
		"log_bytes":                    "Bytes of redacted output stored in the log.",
		"log_error":                    "Why the log could not be written (a full disk): the process kept running and what was lost is counted. Absent when none.",
		"log_bytes_lost":               "Redacted bytes that could not be written to the log. Absent when none.",
		"held_bytes":                   "Bytes of output the redactor holds back, on a live monitor: the last ones the service wrote, which may begin a credential (the port of http://localhost:8000 may begin a password), stored as themselves or as [REDACTED] once more output decides them or the output ends. Absent when none.",
		"state_error":                  "Why the record could not be written (a full disk) while the guardian, alive and in custody, holds it: the record lags behind. Absent when none.",
		"needs_reconciliation_because": "What makes the monitor need reconciliation (the guardian is gone, the window expired, a reboot). Absent otherwise.",
		"receipt":                      "The terminal receipt, once the monitor has ended and its group was drained. Absent while it runs.",
		// Receipts.
		"signals":              "Every signal sent to the group, in order, with when and to how many processes. A reconciled receipt has SIGSTOP (every process left, stopped before any is killed) and SIGKILL, or none when nothing was left.",
		"at_ms":                "When, in milliseconds since the Unix epoch.",
		"targets":              "How many processes the signal was sent to. A signal to the process group counts the members of the look at the group just before it (at least one): a member that forks or exits at that moment may be counted or not.",
		"group_empty_verified": "True once the kernel confirmed that no process of the group nor any escaped descendant is left.",
		"output_drained":       "True once the output pipe was read to its end: the output is complete.",
		"containment":          "complete: the group and every escaped descendant are verified gone. group_only: the group is gone, and the sessions its descendants made as of the lost guardian's last heartbeat, and every descendant of what was left; a session made since by a process whose parent has ended since could not be seen (a reconciled monitor). incomplete: something may be left: kill_unconfirmed names what survived SIGKILL; a session the service's descendants made that could no longer be proven theirs (a reconciled monitor) is left alone, unnamed.",
		"escaped":              "Pids of descendants that had left the group (setsid) and were drained as well. Absent when none.",
		"kill_unconfirmed":     "Pids still present after SIGKILL (e.g. stuck in uninterruptible sleep). Absent when none.",
		"custody":              "Who proved the receipt: guardian (the process's own guardian, or procmon exec for a command), reconciled (reconcile, with no exit code), unverified (custody could not be proven).",
		"exited_at_ms":         "When the process itself exited, in milliseconds since the Unix epoch. Absent when it was never seen to exit.",
		"finished_at_ms":       "When the drain ended and the receipt was made, in milliseconds since the Unix epoch.",
		// Output windows.
		"text":             "The redacted output window as UTF-8 text (invalid bytes shown as U+FFFD); credentials show as [REDACTED].",
		"offset":           "Byte offset in the redacted stream where text starts. As a request field: read from this byte instead of the end (past the end: from the end, with no text).",
		"next_offset":      "Byte offset just after text: pass it as offset to continue without gap or overlap.",
		"output_bytes":     "Length of text in bytes.",
		"output_sha256":    "SHA-256 of text, in lowercase hex.",
		"stream_bytes":     "Length of the whole redacted stream in bytes, of which text is a window.",
		"output_truncated": "True when text is not the whole output; truncation says why.",
		"truncation":       "Why text is not the whole output: capture_limit (the output passed max_output_bytes and the rest was dropped), window (the window left part of the stream out), incomplete_utf8 (a trailing partial character was held back), output_undrained (exec only: a process outside the command held its output pipe open, so the pipe was not read to its end and what was written last may be missing), log_lost (the log could not store all of the output, as on a full disk: it ends before the output did, and log_bytes_lost says by how much). Empty when it is whole.",
		"max_bytes":        "The most bytes of output text to return (at least 4). Default 65536.",
		// Wait.
		"condition":     "What to wait for: {\"kind\": \"output\", \"text\": LITERAL} (a literal in the redacted output, from its very start), {\"kind\": \"exit\"} (a verified end, whatever the exit code), or {\"kind\": \"file\", \"path\": RELATIVE_PATH, \"sha256\"?: HEX} (a regular file beneath the service's working directory).",
		"kind":          "The kind of condition: output, exit or file.",
		"path":          "A clean relative path beneath the service's working directory; no .., no symlinks, no private paths.",
		"sha256":        "Lowercase hex SHA-256 the file must have; absent: any stable content counts.",
		"outcome":       "satisfied: the condition holds. timeout: the wait's timeout passed (the service keeps running). process_ended: the service ended first (see observation). unavailable: custody is unverified (see observation.why).",
		"observation":   "What the wait saw last: the monitor's status, the elapsed time, and per kind the match offset, the file's digest and size, or the receipt.",
		"elapsed_ms":    "How long the wait took, in milliseconds.",
		"why":           "Why the outcome is unavailable or the monitor needs reconciliation. Absent otherwise.",
		"match_offset":  "Byte offset in the redacted stream where the text was found. Absent unless satisfied by output.",
		"scanned_bytes": "How many bytes of the redacted stream the output wait searched. Absent for other kinds.",
		"size":          "The file's size in bytes when it was last read. Absent when it was not read.",
		"refusal":       "Why the file did not count at the last look (absent: not there yet; symlink, hardlinked, unstable, too_large, component_moved, ...). Absent when it counted.",
		"refusals_seen": "Every refusal met during the wait, so one that came and went is still named. Absent when none.",
		"log_tail":      "The last lines of the redacted output, when the wait did not succeed. Absent otherwise.",
		// Drain requests.
		"grace_seconds": "Seconds between SIGTERM and SIGKILL, 0 to 3600. Default 5.",
		// Exec.
		"depends_on":  "Monitor ids the command needs: it is refused with needs_reconciliation (before any slot is taken) unless each is running with a current ownership window.",
		"duration_ms": "How long the command took, from spawn to the end of its drain, in milliseconds.",
		// Lists and runs.
		"monitors":           "The monitors, one row each.",
		"error":              "Why this row's record could not be read or trusted; the row has only monitor_id and error.",
		"code":               "The stable error code.",
		"message":            "What happened and what to do next, for a reader.",
		"details":            "Structured details: the field at fault, the monitor, limits.",
		"runs":               "The runs.",
		"created_at_ms":      "When the run was created, in milliseconds since the Unix epoch.",
		"policy":             "The runner settings frozen into the run when it was created; a later configure never changes them.",
		"tools":              "The monitor tools the run grants.",
		"native_checkpoints": "The run uses native checkpoints, which refuse monitors.",
		"owner":              "The process the run is bound to: when it exits every monitor of the run is drained (reason owner_exited). Absent: unbound.",
		"start_ticks":        "The process's start time in clock ticks since boot, on the clock of the machine's initial time namespace: with pid it names one process, never a reuse of its pid.",
		"ended_at_ms":        "When the run ended, in milliseconds since the Unix epoch. Absent while it is active.",
		"end_reason":         "Why the run ended: run_ended or owner_exited. Absent while it is active.",
		"budget_used":        "How many command slots of the run's budget starts and execs have taken.",
		"owner_pid":          "Bind the run to this process: when it exits, every monitor of the run is drained.",
		"settings":           "The stored runner settings.",
		"monitors_enabled":   "True when the stored settings enable process monitors.",
		"state_dir":          "The state directory procmon uses.",
		// Settings.
		"sandbox":                     "The seed's sandbox object.",
		"mode":                        "The transport: only host is available (docker and pool are transport_unavailable).",
		"process_monitor":             "Enables process monitors; needs work_duration with protocol forge-work-duration-v2.",
		"work_duration":               "The work-duration policy; null is a legacy capture, which cannot enable monitors.",
		"protocol":                    "The work-duration protocol: forge-work-duration-v2.",
		"monitor_owner_grace_seconds": "The ownership window in seconds, renewed by heartbeats; null means 30. It does not limit how long a job runs.",
		"monitor_timeout_seconds":     "A work cap in seconds for every monitor, counted from its admission; null: none.",
		"max_output_bytes":            "The most bytes of redacted output stored per monitor or command; past it the process is drained (output_limit). Null: no cap.",
		"command_limit":               "How many starts and execs a run may make; null: no limit.",
		"private_paths":               "Paths beneath a component that are never wait targets (default .git, .ssh, .env).",
	},
	TypeFields: map[string]string{
		"waitRequest.timeout_seconds":   "Seconds to wait at most (a positive integer); outcome timeout then, with the service left running. Null or absent: no limit of the wait's own, so a wait for text the service never prints lasts as long as the service (or its work deadline): give one.",
		"cancelManyResponse.monitors":   "The receipt of each monitor drained or already ended, in the order given (--all: oldest first).",
		"cancelManyResponse.errors":     "Each monitor that could not be drained, with its error (see the error's message for what to do next); the exit status is then the first error's. Absent when every one was.",
		"waitResponse.condition":        "The condition as it was evaluated.",
		"Condition.text":                "The literal waited for, as the request gave it.",
		"ErrorObject.error":             "The error: a stable code (see the enum; exit status 2 for invalid_request and invalid_condition, 3 for a refusal by policy or budget, 4 for unknown_monitor, 5 for needs_reconciliation, 130 for an interrupted wait, start or exec, 1 otherwise), a message that says what to do next, and details.",
		"Settings.secret_env":           "Names of environment variables whose values are secrets in every run (names only, never values).",
		"WorkDuration.timeout_seconds":  "A work cap in seconds for the whole run, counted from the run's creation; null: none.",
		"Observation.status":            "The monitor's status when the wait ended (see process_status).",
		"Observation.path":              "The file path the wait looked at.",
		"Observation.sha256":            "Lowercase hex SHA-256 of the file when it was last read whole and stable.",
		"Observation.reason":            "Why custody ended, from the receipt, once the monitor has ended.",
		"Observation.exit_code":         "The exit status from the receipt, when the monitor ended by exiting. Absent otherwise.",
		"Observation.log_bytes_lost":    "Redacted bytes the log could not store (a full disk), when a wait for output did not succeed: the text may have been printed among them. Absent when none.",
		"Observation.log_error":         "Why the log could not be written, when a wait for output did not succeed. Absent when none.",
		"Observation.held_bytes":        "Bytes of output the redactor holds back, when a wait for output did not succeed on a live monitor: the last ones the service wrote, which may begin a credential, and the text may be among them; it is seen once the service writes more (a line's end). Absent when none.",
		"Observation.signal":            "The killing signal from the receipt, when a signal ended the monitor. Absent otherwise.",
		"statusRequest.monitor_id":      "The monitor to show. Required for process_status; on the command line, leaving it out lists the run's monitors.",
		"listResponse.run_id":           "The run whose monitors are listed; absent with --all-runs.",
		"listOptions.all_runs":          "List the monitors of every run (--all-runs) instead of the selected one's.",
		"runRequest.run_id":             "The run to act on; absent: the selected one (--run, PROCMON_RUN, else default).",
		"listRow.monitor_id":            "The monitor's id.",
		"monitorView.monitor_id":        "The monitor's id.",
		"monitorView.reason":            "Why custody ended, from the receipt. Absent while it runs.",
		"monitorView.exit_code":         "The exit status from a verified receipt, 0 to 255. Absent while it runs, when a signal ended it, or without a verified receipt.",
		"monitorView.signal":            "The killing signal's name from a verified receipt. Absent otherwise.",
		"runEndResponse.monitors":       "The receipts of the run's monitors: those the end drained and those that had ended before it.",
		"runEndResponse.errors":         "Monitors that could not be drained (custody unverified: settle them with reconcile). Absent when none.",
		"runListResponse.errors":        "Runs that cannot be shown (a damaged run.json), each with its error. Absent when none.",
		"runErrorRow.run_id":            "The run's id.",
		"runErrorRow.error":             "Why the run cannot be shown (state_corrupt or state_unsafe), with what to do next.",
		"runEndResponse.ended_at_ms":    "When the run ended, in milliseconds since the Unix epoch.",
		"logsRequest.offset":            "Read from this byte of the redacted stream instead of the end (0: from the start). Absent: the last max_bytes.",
		"logsResponse.offset":           "Byte offset in the redacted stream where text starts.",
		"execResponse.status":           "exited: the command ended by itself, its output whole (see exit_code or signal). timed_out: drained at its deadline. output_limit: its output passed max_output_bytes: drained for it, or ended by itself with its output cut (see exit_code or signal). cancelled: drained because the caller was interrupted (reason interrupted), the run ended (run_ended) or the run's owner exited (owner_exited).",
		"execResponse.text":             "The end of the command's redacted output (stdout and stderr interleaved in order), at most max_bytes, never split inside a character.",
		"execResponse.work_deadline_ms": "When the command would have been drained as timed_out, in milliseconds since the Unix epoch: the smallest of the run's work duration, the monitor timeout and timeout_seconds (default 600).",
		"execRequest.timeout_seconds":   "Drain the command as timed_out after this many seconds (positive). Default 600: a foreground command always has a deadline.",
		"execRequest.cwd":               "Working directory (absolute, or relative to the caller's). Default: the caller's.",
		"execRequest.max_bytes":         "The most bytes of the end of the output to return (at least 4). Default 65536.",
		"runView.policy":                "The runner settings frozen into the run when it was created.",
		"startRequest.name":             "A label to name the service by later on the command line (procmon logs NAME, or --name NAME): 1 to 64 bytes of UTF-8 with no control or invisible formatting characters, not beginning or ending with a space, not starting with m_ (which begins a monitor id) or - (which begins a flag), and not of a credential's form (it would be stored redacted). Several monitors may carry one name. Absent: none.",
	},
	Enums: map[string][]string{
		"status":               {state.StatusRunning, state.StatusSettling, state.StatusExited, state.StatusCancelled, state.StatusTimedOut, state.StatusOutputLimit, state.StatusNeedsReconciliation},
		"startResponse.status": {state.StatusRunning},
		"execResponse.status":  {state.StatusExited, state.StatusTimedOut, state.StatusOutputLimit, state.StatusCancelled},
		"truncation":           {state.TruncCaptureLimit, state.TruncWindow, state.TruncIncompleteUTF8, state.TruncOutputUndrained, state.TruncLogLost},
		"containment":          {state.ContainmentComplete, state.ContainmentGroupOnly, state.ContainmentIncomplete},
		"custody":              {state.CustodyGuardian, state.CustodyReconciled, state.CustodyUnverified},
		"outcome":              {"satisfied", "timeout", "process_ended", "unavailable"},
		"kind":                 {"output", "exit", "file"},
		"mode":                 {"host", "docker", "pool"},
		"protocol":             {"forge-work-duration-v2"},
		"tools":                state.Tools,
		"code":                 codeStrings(),
	},
	Override: map[string]schema.Schema{
		"waitRequest.condition": {"oneOf": []any{
			schema.Schema{"type": "object", "additionalProperties": false, "required": []string{"kind", "text"}, "properties": schema.Schema{
				"kind": schema.Schema{"const": "output"},
				"text": schema.Schema{"type": "string", "minLength": 1, "description": "A literal UTF-8 string to find in the redacted output, from its very start (lines printed before the wait count). Not a pattern. A text holding a credential never matches."},
			}},
			schema.Schema{"type": "object", "additionalProperties": false, "required": []string{"kind"}, "properties": schema.Schema{
				"kind": schema.Schema{"const": "exit"},
			}},
			schema.Schema{"type": "object", "additionalProperties": false, "required": []string{"kind", "path"}, "properties": schema.Schema{
				"kind":   schema.Schema{"const": "file"},
				"path":   schema.Schema{"type": "string", "minLength": 1, "description": "A clean relative path beneath the service's working directory: no leading /, no .. or . components, no symlinks, no private paths."},
				"sha256": schema.Schema{"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "Lowercase hex SHA-256 the file must have."},
			}},
		}},
		"monitor_id":      {"type": "string", "pattern": "^m_[0-9a-z]{20,32}$"},
		"depends_on":      {"type": "array", "items": schema.Schema{"type": "string", "pattern": "^m_[0-9a-z]{20,32}$"}},
		"sha256":          {"type": "string", "pattern": "^[0-9a-f]{64}$"},
		"output_sha256":   {"type": "string", "pattern": "^[0-9a-f]{64}$"},
		"details":         {"type": "object"},
		"timeout_seconds": {"type": []string{"integer", "null"}, "minimum": 1, "maximum": protocol.MaxSeconds},
		// procmon counts a secret's bytes, a schema its characters: 8 bytes
		// may be two characters of four ("éééé" is 8 bytes), and a schema
		// that asked for 8 characters refused a secret procmon takes.
		"secrets":                  {"type": "array", "items": schema.Schema{"type": "string", "minLength": 2}},
		"secret_env":               {"type": "array", "items": schema.Schema{"type": "string", "pattern": `^[^=\x00]+$`}},
		"grace_seconds":            {"type": []string{"integer", "null"}, "minimum": 0, "maximum": 3600},
		"max_bytes":                {"type": []string{"integer", "null"}, "minimum": 4},
		"startRequest.argv":        {"type": "array", "minItems": 1, "items": schema.Schema{"type": "string"}},
		"execRequest.argv":         {"type": "array", "minItems": 1, "items": schema.Schema{"type": "string"}},
		"logsRequest.offset":       {"type": []string{"integer", "null"}, "minimum": 0},
		"runNewRequest.owner_pid":  {"type": []string{"integer", "null"}, "minimum": 2},
		"statusRequest.monitor_id": {"type": []string{"string", "null"}, "pattern": "^m_[0-9a-z]{20,32}$"},
		// No control character (C0, DEL, C1), in the escapes that Go,
		// ECMA-262 and Python regexes all read alike. maxLength counts
		// characters; start refuses more than 64 bytes.
		// No formatting character (Cf) of the Basic Multilingual Plane
		// either (nameFormatChars); start also refuses those beyond it, and
		// a name of a credential's form, which no pattern can say.
		// Nor a space (unicode.IsSpace, nameSpaceChars) at either end.
		"startRequest.name": {"type": "string", "minLength": 1, "maxLength": 64, "pattern": `^[^\x00-\x1f\x7f-\x9f\xad` + nameFormatChars + `]*$`,
			"not": schema.Schema{"anyOf": []schema.Schema{{"pattern": "^m_"}, {"pattern": "^-"}, {"pattern": "^[" + nameSpaceChars + "]"}, {"pattern": "[" + nameSpaceChars + "]$"}}}},
	},
}

func codeStrings() []string {
	out := make([]string, len(errorCodes))
	for i, c := range errorCodes {
		out[i] = string(c)
	}
	return out
}

// nameFormatChars are the formatting characters (Cf) of the Basic
// Multilingual Plane past U+00AD, as literal characters and ranges of a
// pattern's character class: the three regex dialects agree on \xHH but
// not on any escape of a wider code point.
const nameFormatChars = "\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"

// nameSpaceChars are the spaces (unicode.IsSpace) that are not control
// characters, which the name's pattern refuses anywhere, written as
// nameFormatChars is.
const nameSpaceChars = " \\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
