package cmd

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"procmon/internal/protocol"
)

// TestAdviceIsAddedAtTheEdge: the packages below cmd say what happened;
// no message they build names a procmon command line to run next. advise
// adds that step here, by the error's code and details.
func TestAdviceIsAddedAtTheEdge(t *testing.T) {
	files, err := filepath.Glob("../internal/*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	command := regexp.MustCompile(`procmon (list|run|configure|status|reconcile|cancel|start|logs|wait|exec)\b`)
	fset := token.NewFileSet()
	checked := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Errorf" && sel.Sel.Name != "New" {
				return true
			}
			for _, arg := range call.Args {
				lit, ok := arg.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				checked++
				if s, _ := strconv.Unquote(lit.Value); command.MatchString(s) {
					t.Errorf("%s: an error message names a command to run: %q", fset.Position(lit.Pos()), s)
				}
			}
			return true
		})
	}
	if checked < 50 {
		t.Fatalf("checked only %d messages: the scan is not reading the packages", checked)
	}
}

// TestAdvise: the step for each code, from the details; none where the
// details do not say enough, and never a second one.
func TestAdvise(t *testing.T) {
	for _, c := range []struct {
		err  *protocol.Error
		want string
	}{
		{protocol.Errorf(protocol.CodeUnknownMonitor, "no monitor m_x in /s"), "no monitor m_x in /s; list monitors with: procmon list --all-runs"},
		{protocol.Errorf(protocol.CodeUnknownRun, `no run "default" in /s`).With("run_id", "default"), `no run "default" in /s; the first procmon start makes it`},
		{protocol.Errorf(protocol.CodeUnknownRun, `no run "r_x" in /s`).With("run_id", "r_x"), `no run "r_x" in /s; create one with: procmon run new`},
		{protocol.Errorf(protocol.CodeNeedsReconciliation, "monitor m_x needs reconciliation (why)").With("monitor_id", "m_x"),
			"monitor m_x needs reconciliation (why); inspect it with procmon status m_x, then run: procmon reconcile m_x"},
		{protocol.Errorf(protocol.CodeNeedsReconciliation, "no id"), "no id"},
		{protocol.Errorf(protocol.CodeInvalidRequest, "monitor m_x is running, not needs_reconciliation").With("monitor_id", "m_x").With("status", "running"),
			"monitor m_x is running, not needs_reconciliation; stop it with: procmon cancel m_x"},
		{protocol.Errorf(protocol.CodeInvalidRequest, "monitor m_x is exited, not needs_reconciliation").With("monitor_id", "m_x").With("status", "exited"),
			"monitor m_x is exited, not needs_reconciliation"},
		{protocol.Errorf(protocol.CodeInternal, "/s stayed locked").With("lock", "/s/.lock"), "/s stayed locked; find the process holding it with: fuser /s/.lock"},
		{protocol.Errorf(protocol.CodeInternal, "boom"), "boom"},
		{protocol.AsError(fmt.Errorf("write record.json: %w", &os.PathError{Op: "write", Path: "/s/x", Err: syscall.ENOSPC})),
			"write record.json: write /s/x: no space left on device; the file system of the state directory is full (or the quota is spent): free space there, then retry; the monitors still running keep their custody meanwhile"},
		{protocol.AsError(fmt.Errorf("create run default: %w", &os.PathError{Op: "mkdir", Path: "/s/runs/x", Err: syscall.EROFS})),
			"create run default: mkdir /s/runs/x: read-only file system; the file system of the state directory is mounted read-only: remount it read-write, then retry; the monitors still running keep their custody meanwhile"},
		{protocol.AsError(fmt.Errorf("watch /s/m_x: %w", os.NewSyscallError("inotify_add_watch", syscall.ENOSPC))),
			"watch /s/m_x: inotify_add_watch: no space left on device; the user's inotify watches are used up: raise fs.inotify.max_user_watches (sysctl) or end other watchers, then retry"},
		{protocol.Errorf(protocol.CodeRunEnded, "run r_x has ended; see procmon run show"), "run r_x has ended; see procmon run show"},
		{protocol.Errorf(protocol.CodeMonitorsDisabled, "process monitors are disabled (x)"), "process monitors are disabled (x); enable them with: procmon configure --enable"},
		{protocol.Errorf(protocol.CodeMonitorsDisabled, "process monitors are disabled (run r_x was created while they were off)").With("run_id", "r_x"),
			"process monitors are disabled (run r_x was created while they were off); create a new run with procmon run new, and select it with --run ID or PROCMON_RUN=ID"},
		{protocol.Errorf(protocol.CodeNeedsReconciliation, "exec depends on monitor m_x, which is not running").With("monitor_id", "m_x").With("status", "cancelled"),
			"exec depends on monitor m_x, which is not running; it has ended: start it again, then retry"},
		{protocol.Errorf(protocol.CodeWaitInterrupted, "wait on m_x was interrupted after 5 ms; the service keeps running").With("monitor_id", "m_x").With("elapsed_ms", 5),
			"wait on m_x was interrupted after 5 ms; the service keeps running; check it with: procmon status m_x"},
		{protocol.Errorf(protocol.CodeWaitInterrupted, "start of sh was interrupted: m_x was drained").With("monitor_id", "m_x"), "start of sh was interrupted: m_x was drained"},
		// "procmon does not use it" names no command line.
		{protocol.Errorf(protocol.CodeStateUnsafe, "/s/monitors in the state directory is unsafe: mode 0777 lets group or others write it; procmon does not use it").With("path", "/s/monitors"),
			"/s/monitors in the state directory is unsafe: mode 0777 lets group or others write it; procmon does not use it; inspect it by hand: procmon uses it again once it is a file or directory of yours that only you may write, and not a link"},
		// The state directory's own message says how to fix it already.
		{protocol.Errorf(protocol.CodeStateUnsafe, "state directory /h/procmon is unsafe: mode 0777 lets group or others write it; run: chmod 700 /h/procmon").With("path", "/h/procmon"),
			"state directory /h/procmon is unsafe: mode 0777 lets group or others write it; run: chmod 700 /h/procmon"},
		{protocol.Errorf(protocol.CodeStateUnsafe, "state directory /tmp is unsafe: mode 1777 lets group or others write it (it is shared, like /tmp); point PROCMON_STATE_DIR at a directory of your own, or leave it unset").With("path", "/tmp"),
			"state directory /tmp is unsafe: mode 1777 lets group or others write it (it is shared, like /tmp); point PROCMON_STATE_DIR at a directory of your own, or leave it unset"},
		// A damaged record is advised what to do by hand; a run's budget
		// says so itself (the run, not the file), and is not told twice.
		{protocol.Errorf(protocol.CodeStateCorrupt, "monitor record /s/r.json is damaged (x); it is not trusted").With("path", "/s/r.json"),
			"monitor record /s/r.json is damaged (x); it is not trusted; inspect or remove it by hand"},
		{protocol.Errorf(protocol.CodeStateCorrupt, "budget /s/b is empty, want 8192 bytes; it is not trusted. Inspect or remove the run by hand").With("path", "/s/b"),
			"budget /s/b is empty, want 8192 bytes; it is not trusted. Inspect or remove the run by hand"},
		{protocol.Errorf(protocol.CodeUnknownMonitor, "no monitor m_x; see procmon listing"), "no monitor m_x; see procmon listing; list monitors with: procmon list --all-runs"},
	} {
		advise(c.err)
		if c.err.Message != c.want {
			t.Errorf("advised %q,\n want %q", c.err.Message, c.want)
		}
	}
}

// TestToolErrorAdvisesASession: an MCP client cannot select another run,
// so a run that ended or ran out of slots is advised a new session, not
// procmon run new and --run.
func TestToolErrorAdvisesASession(t *testing.T) {
	for _, err := range []error{
		protocol.Errorf(protocol.CodeRunEnded, "run r_x has ended").With("run_id", "r_x"),
		protocol.Errorf(protocol.CodeCommandBudgetExhausted, "run r_x has used its 20 commands").With("run_id", "r_x"),
	} {
		text := (&mcpSession{owned: true}).toolError(err).Content[0].(*mcp.TextContent).Text
		if !strings.Contains(text, "start a new session") || strings.Contains(text, "--run") {
			t.Errorf("tool error %s", text)
		}
	}
}

// TestSessionAdvice: an MCP client is advised the steps its tools take,
// or told that a person must take one; never to select a run with --run
// or to list monitors with a command line it cannot run. A session that
// joined its run (owned false) is not told that a restart makes a new
// one, or that it reconciles what it leaves.
func TestSessionAdvice(t *testing.T) {
	for _, c := range []struct {
		err       *protocol.Error
		joined    bool
		want, not string
	}{
		{protocol.Errorf(protocol.CodeRunEnded, "run r_x has ended").With("run_id", "r_x"), true,
			"a person restarts the server without --run and $PROCMON_RUN, or with another run", "new session"},
		{protocol.Errorf(protocol.CodeCheckpointsIncompat, "run r_x uses native checkpoints, which reject monitor grants").With("run_id", "r_x"), true,
			"a person restarts the server", "--native-checkpoints"},
		{protocol.Errorf(protocol.CodeNeedsReconciliation, "monitor m_x needs reconciliation (why)").With("monitor_id", "m_x"), true,
			"this session joined its run, so it does not end it: a person must run: procmon reconcile m_x", "reconciles m_x as it ends"},
		// Whether process_status is granted, or the session goes on, is
		// not known: nothing is advised.
		{protocol.Errorf(protocol.CodeWaitInterrupted, "wait on m_x was interrupted after 5 ms; the service keeps running").With("monitor_id", "m_x").With("elapsed_ms", 5), false,
			`keeps running","details"`, "procmon status"},
		{protocol.Errorf(protocol.CodeUnknownMonitor, "no monitor m_x in /s"), false, "a start in this session's run returned", "procmon list"},
		{protocol.Errorf(protocol.CodeUnknownRun, `no run "r_x" in /s`).With("run_id", "r_x"), true, "a person restarts the server", "procmon run new"},
		// Another run than the session's: a monitor's, gone.
		{protocol.Errorf(protocol.CodeUnknownRun, `no run "r_y" in /s`).With("run_id", "r_y"), true, `in /s","details"`, "restart"},
		{protocol.Errorf(protocol.CodeToolNotAllowed, "run r_x does not allow process_logs").With("run_id", "r_x").With("tool", "process_logs"), false,
			"restart the server", "--run ID"},
		{protocol.Errorf(protocol.CodeToolNotAllowed, "run r_x does not allow process_logs").With("run_id", "r_x").With("monitor_id", "m_x").With("tool", "process_logs"), false,
			"the run that started m_x decides", "procmon run end"},
		{protocol.Errorf(protocol.CodeMonitorsDisabled, "process monitors are disabled (x)"), false, "a person enables them with: procmon configure --enable", "--run"},
		{protocol.Errorf(protocol.CodeMonitorsDisabled, "disabled (run r_x was created while they were off)").With("run_id", "r_x"), false, "start a new session", "--run ID"},
		{protocol.Errorf(protocol.CodeNeedsReconciliation, "monitor m_x needs reconciliation (why)").With("monitor_id", "m_x"), false,
			"no tool settles a lost guardian: a person can with: procmon reconcile m_x (this session reconciles those of its own run as it ends)", "procmon status"},
		{protocol.Errorf(protocol.CodeNeedsReconciliation, "exec depends on monitor m_x, which is not running").With("monitor_id", "m_x").With("status", "cancelled"), false,
			"it has ended: start it again, then retry", "reconcile"},
	} {
		text := (&mcpSession{owned: !c.joined, runID: "r_x"}).toolError(c.err).Content[0].(*mcp.TextContent).Text
		if !strings.Contains(text, c.want) || strings.Contains(text, c.not) {
			t.Errorf("tool error %s: want %q, not %q", text, c.want, c.not)
		}
	}
}
