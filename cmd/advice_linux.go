package cmd

import (
	"errors"
	"os"
	"strings"
	"syscall"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

// advise adds to an error's message the next step a person or an agent
// can take, named as a procmon command line. The packages below cmd say
// what happened, with the facts in the details; what to do about it is
// said here, once. An error composed here that names a command already
// keeps its own.
func advise(pe *protocol.Error) {
	if namesCommand(pe.Message) {
		return
	}
	if a := advice(pe); a != "" {
		pe.Message += "; " + a
	}
}

// namesCommand reports whether msg names a procmon command line already
// ("procmon reconcile m_x", "see procmon run show"): "procmon does not
// use it" names none, and kept the advice of every unsafe entry away.
func namesCommand(msg string) bool {
	for _, w := range []string{"configure", "start", "exec", "list", "status", "logs", "wait", "cancel", "reconcile", "run", "schema", "mcp", "completion"} {
		for rest := msg; ; {
			i := strings.Index(rest, "procmon "+w)
			if i < 0 {
				break
			}
			rest = rest[i+len("procmon "+w):]
			if rest == "" || !('a' <= rest[0] && rest[0] <= 'z' || rest[0] == '_') {
				return true
			}
		}
	}
	return false
}

// advice is the step advise adds, from the error's code and details.
func advice(pe *protocol.Error) string {
	detail := func(k string) string {
		s, _ := pe.Details[k].(string)
		return s
	}
	switch pe.Code {
	case protocol.CodeUnknownMonitor:
		return "list monitors with: procmon list --all-runs"
	case protocol.CodeUnknownRun:
		if detail("run_id") == state.DefaultRun {
			return "the first procmon start makes it"
		}
		return "create one with: procmon run new"
	case protocol.CodeRunEnded:
		return "create a new one with procmon run new, and select it with --run ID or PROCMON_RUN=ID"
	case protocol.CodeCommandBudgetExhausted:
		return "for more, create a new run with procmon run new, and select it with --run ID or PROCMON_RUN=ID"
	case protocol.CodeMonitorsDisabled:
		if detail("run_id") != "" {
			// The run froze the settings of its creation.
			return "create a new run with procmon run new, and select it with --run ID or PROCMON_RUN=ID"
		}
		return "enable them with: procmon configure --enable"
	case protocol.CodeToolNotAllowed:
		if id, run := detail("monitor_id"), detail("run_id"); id != "" && run != "" {
			// Selecting another run changes nothing: the monitor's own
			// run grants what may act on it.
			if detail("tool") == state.CancelTool {
				return "the run that started " + id + " decides, whichever run is selected; procmon run end " + run + " drains every monitor of that run"
			}
			return "the run that started " + id + " decides, whichever run is selected"
		}
		return "create a run that allows it with procmon run new (without --tools, every tool), and select it with --run ID or PROCMON_RUN=ID"
	case protocol.CodeCheckpointsIncompat:
		return "create a run without --native-checkpoints"
	case protocol.CodeWaitInterrupted:
		// A wait's (elapsed_ms): the service runs on. An interrupted start
		// or exec drained what it started, and says so.
		if id := detail("monitor_id"); id != "" && pe.Details["elapsed_ms"] != nil {
			return "check it with: procmon status " + id
		}
	case protocol.CodeNeedsReconciliation:
		id := detail("monitor_id")
		switch detail("status") {
		case "", state.StatusNeedsReconciliation, state.StatusRunning, state.StatusSettling:
		default:
			// A dependency that has ended (exec's depends_on): nothing
			// to reconcile.
			return "it has ended: start it again, then retry"
		}
		if id != "" {
			return "inspect it with procmon status " + id + ", then run: procmon reconcile " + id
		}
	case protocol.CodeStateUnsafe:
		// The state directory's own message says how to fix it (run:
		// chmod 700 ..., or choose another PROCMON_STATE_DIR); an entry
		// in it may hold a running service's record, which removing
		// would lose.
		if detail("path") != "" && !strings.Contains(pe.Message, "; run: ") && !strings.Contains(pe.Message, "PROCMON_STATE_DIR") {
			return "inspect it by hand: procmon uses it again once it is a file or directory of yours that only you may write, and not a link"
		}
	case protocol.CodeStateCorrupt:
		// A message that says what to do by hand already (a run's
		// budget: remove the run, not the file) is not told it twice.
		if detail("path") != "" && !strings.Contains(pe.Message, " by hand") {
			return "inspect or remove it by hand"
		}
	case protocol.CodeInvalidRequest:
		// reconcile of a monitor that does not need it
		if id := detail("monitor_id"); id != "" && detail("status") == state.StatusRunning {
			return "stop it with: procmon cancel " + id
		}
	case protocol.CodeInternal:
		if lock := detail("lock"); lock != "" {
			return "find the process holding it with: fuser " + lock
		}
		var sc *os.SyscallError
		switch {
		case errors.As(pe, &sc) && sc.Syscall == "inotify_add_watch" && errors.Is(sc, syscall.ENOSPC):
			return "the user's inotify watches are used up: raise fs.inotify.max_user_watches (sysctl) or end other watchers, then retry"
		case errors.Is(pe, syscall.ENOSPC) || errors.Is(pe, syscall.EDQUOT):
			return "the file system of the state directory is full (or the quota is spent): free space there, then retry; the monitors still running keep their custody meanwhile"
		case errors.Is(pe, syscall.EROFS):
			return "the file system of the state directory is mounted read-only: remount it read-write, then retry; the monitors still running keep their custody meanwhile"
		}
	}
	return ""
}

// errorRow is a monitor's row in a list of results that holds, in place of
// its result, the error that stopped it, advised as a command's own.
func errorRow(id string, err error) listRow {
	e := protocol.AsError(err)
	e = &protocol.Error{Code: e.Code, Message: e.Message, Details: e.Details, Err: e.Err}
	advise(e)
	return listRow{MonitorID: id, Error: &protocol.ErrorBody{Code: e.Code, Message: e.Message, Details: e.Details}}
}
