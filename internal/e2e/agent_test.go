//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tidwall/gjson"

	"procmon/internal/proc"
	"procmon/internal/state"
)

// agentSchemas loads procmon schema's output: every command's request,
// response and error schema, compiled.
type agentSchemas struct {
	raw      map[string]map[string]any // command -> request|response|error -> schema
	tools    map[string]string         // tool -> command
	compiled map[string]*jsonschema.Schema
}

func loadSchemas(t *testing.T, procmon func(args ...string) *exec.Cmd) *agentSchemas {
	t.Helper()
	out := runProcmon(t, procmon, "schema")
	var doc struct {
		Commands []map[string]any `json:"commands"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	s := &agentSchemas{raw: map[string]map[string]any{}, tools: map[string]string{}, compiled: map[string]*jsonschema.Schema{}}
	c := jsonschema.NewCompiler()
	for _, set := range doc.Commands {
		name := set["command"].(string)
		s.raw[name] = map[string]any{}
		if tool, _ := set["tool"].(string); tool != "" {
			s.tools[tool] = name
		}
		for _, part := range []string{"request", "response", "error", "tool_input", "tool_output"} {
			sch, ok := set[part].(map[string]any)
			if !ok {
				continue
			}
			s.raw[name][part] = sch
			if err := c.AddResource(sch["$id"].(string), sch); err != nil {
				t.Fatalf("%s %s: %v", name, part, err)
			}
			compiled, err := c.Compile(sch["$id"].(string))
			if err != nil {
				t.Fatalf("compile %s %s: %v", name, part, err)
			}
			s.compiled[name+" "+part] = compiled
		}
	}
	return s
}

// check validates one JSON document against a command's schema part.
func (s *agentSchemas) check(t *testing.T, command, part string, data []byte) {
	t.Helper()
	sch := s.compiled[command+" "+part]
	if sch == nil {
		t.Fatalf("no %s schema for %q", part, command)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s %s: %v: %s", command, part, err, data)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("%s %s does not match its schema: %v\n%s", command, part, err, data)
	}
}

// TestAgentSchemasDescribeRealResponses runs every command of the
// contract for real and validates each response and error against the
// schema procmon schema prints for it; a command left unexercised fails.
func TestAgentSchemasDescribeRealResponses(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	cwd := t.TempDir()
	procmon := procmonIn(t, stateDir, cwd)
	schemas := loadSchemas(t, procmon)
	seen := map[string]bool{}
	// call runs a command line, with a request body when req is not nil,
	// and validates its answer: the response when it exits 0, else the
	// error.
	call := func(command string, req any, args ...string) []byte {
		t.Helper()
		c := procmon(args...)
		if req != nil {
			body, _ := json.Marshal(map[string]any{"request": req})
			c.Stdin = bytes.NewReader(body)
			schemas.check(t, command, "request", mustJSON(t, req))
		}
		out, err := c.Output()
		if err != nil {
			schemas.check(t, command, "error", out)
			seen[command+" error"] = true
			return out
		}
		schemas.check(t, command, "response", out)
		seen[command] = true
		return out
	}
	field := func(out []byte, key string) string {
		var m map[string]any
		json.Unmarshal(out, &m)
		return fmt.Sprint(m[key])
	}

	call("configure", nil, "configure", "--enable")
	call("run new", nil, "run", "new")
	call("run list", nil, "run", "list")
	out := call("start", map[string]any{"argv": []string{"printer", "-stay", "ready now"}, "name": "web", "secrets": []string{"a-long-secret-1"}}, "start")
	id := field(out, "monitor_id")
	call("wait", map[string]any{"monitor_id": id, "condition": map[string]any{"kind": "output", "text": "ready now"}, "timeout_seconds": 30}, "wait")
	call("wait", map[string]any{"monitor_id": id, "condition": map[string]any{"kind": "file", "path": "never.json"}, "timeout_seconds": 1}, "wait")
	call("status", map[string]any{"monitor_id": id}, "status")
	call("list", nil, "list")
	call("logs", map[string]any{"monitor_id": id, "max_bytes": 5}, "logs")
	call("exec", map[string]any{"argv": []string{"printer", "hello"}, "depends_on": []string{id}}, "exec")
	call("exec", map[string]any{"argv": []string{"exitwith", "SIGTERM"}, "timeout_seconds": 30}, "exec")
	call("cancel", map[string]any{"monitor_id": id, "grace_seconds": 1}, "cancel")
	// Cancel of several monitors, and the list form of status, which the
	// command line gives.
	other := field(call("start", map[string]any{"argv": []string{"printer", "-stay", "two"}}, "start"), "monitor_id")
	call("status", nil, "status")
	if out := call("cancel", nil, "cancel", "--grace", "1", id, other); strings.Count(string(out), `"group_empty_verified":true`) != 2 {
		t.Errorf("cancel of two monitors answered %s", out)
	}
	call("wait", map[string]any{"monitor_id": id, "condition": map[string]any{"kind": "exit"}}, "wait")
	call("reconcile", map[string]any{"monitor_id": id}, "reconcile")
	call("run show", nil, "run", "show")
	call("run end", nil, "run", "end")
	// Errors, each a typed object of the error schema.
	call("status", map[string]any{"monitor_id": "m_00000000000000000000"}, "status")
	call("exec", map[string]any{"argv": []string{"printer"}, "depends_on": []string{id}}, "exec")
	call("start", nil, "start", "--name", "x")

	for _, set := range []string{"configure", "run new", "run list", "run show", "run end", "start", "wait", "status", "list", "logs", "exec", "cancel", "reconcile", "status error", "exec error", "start error"} {
		if !seen[set] {
			t.Errorf("%s was never validated", set)
		}
	}
	for command := range schemas.raw {
		if !seen[command] {
			t.Errorf("command %q has a schema but no real response was validated against it", command)
		}
	}
	assertNothingLeft(t, stateDir)
}

func mustJSON(t *testing.T, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// freePort returns a TCP port nothing listens on at the moment.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// mcpClient connects an MCP client of the official SDK to procmon mcp,
// whose stderr goes to the test's.
func mcpClient(t *testing.T, procmon func(args ...string) *exec.Cmd, progress chan<- *mcp.ProgressNotificationParams) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	return mcpClientTo(t, procmon, progress, os.Stderr)
}

// mcpClientTo is mcpClient with the server's stderr going to stderr.
func mcpClientTo(t *testing.T, procmon func(args ...string) *exec.Cmd, progress chan<- *mcp.ProgressNotificationParams, stderr io.Writer) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "procmon-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if progress != nil {
				select {
				case progress <- req.Params:
				default:
				}
			}
		},
	})
	server := procmon("mcp")
	server.Stderr = stderr
	session, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: server}, nil)
	if err != nil {
		t.Fatalf("connect to procmon mcp: %v", err)
	}
	return session, server
}

// callTool calls a tool and returns its structured result, failing on a
// tool error; the result is validated against the tool's output schema.
func callTool(t *testing.T, s *mcp.ClientSession, schemas *agentSchemas, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error %s", tool, res.Content[0].(*mcp.TextContent).Text)
	}
	data := mustJSON(t, res.StructuredContent)
	schemas.check(t, schemas.tools[tool], "tool_output", data)
	var out map[string]any
	json.Unmarshal(data, &out)
	return out
}

// toolErrorCode calls a tool that must fail and returns its error code.
func toolErrorCode(t *testing.T, s *mcp.ClientSession, schemas *agentSchemas, tool string, args map[string]any) string {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if !res.IsError {
		t.Fatalf("%s succeeded: %v", tool, res.StructuredContent)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	schemas.check(t, schemas.tools[tool], "error", []byte(text))
	var obj struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(text), &obj)
	return obj.Error.Code
}

// TestAgentMCPSession drives procmon mcp through the official SDK's
// client as an agent would: list the tools, start a real web server, wait
// for its readiness line, fetch a page with execute_command, read its
// logs with the registered secret redacted, cancel it; then disconnect,
// which drains what the session left running.
func TestAgentMCPSession(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the session serves a real python3 -m http.server")
	}
	stateDir := filepath.Join(t.TempDir(), "state")
	cwd := t.TempDir()
	os.WriteFile(filepath.Join(cwd, "index.html"), []byte("<p>served under custody</p>\n"), 0o644)
	procmon := procmonIn(t, stateDir, cwd)
	runProcmon(t, procmon, "configure", "--enable")
	schemas := loadSchemas(t, procmon)
	progress := make(chan *mcp.ProgressNotificationParams, 16)
	session, server := mcpClient(t, procmon, progress)
	defer session.Close()

	// The tools, with procmon schema's schemas.
	tools, err := session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		command := schemas.tools[tool.Name]
		for part, got := range map[string]any{"tool_input": tool.InputSchema, "tool_output": tool.OutputSchema} {
			want := strip(schemas.raw[command][part].(map[string]any))
			if !bytes.Equal(mustJSON(t, got), mustJSON(t, want)) {
				t.Errorf("%s: its %s is not procmon schema %s's", tool.Name, part, command)
			}
		}
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
	}
	if got := strings.Join(names, ","); got != "cancel_process,execute_command,process_logs,process_status,start_process,wait_process" {
		t.Fatalf("tools %s", got)
	}

	// Start, wait once, fetch, read the logs, cancel.
	secret := "sk-test-0123456789abcdef"
	port := freePort(t)
	web := callTool(t, session, schemas, "start_process", map[string]any{
		"argv":    []string{"python3", "-u", "-m", "http.server", fmt.Sprint(port), "--bind", "127.0.0.1"},
		"secrets": []string{secret},
		"name":    "web",
	})
	id := web["monitor_id"].(string)
	ev := callTool(t, session, schemas, "wait_process", map[string]any{"monitor_id": id, "condition": map[string]any{"kind": "output", "text": "Serving HTTP"}, "timeout_seconds": 60})
	if ev["outcome"] != "satisfied" {
		t.Fatalf("wait: %v", ev)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/index.html?token=%s", port, secret)
	got := callTool(t, session, schemas, "execute_command", map[string]any{
		"argv":       []string{"python3", "-c", "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode(), end='')", url},
		"secrets":    []string{secret},
		"depends_on": []string{id},
	})
	if got["exit_code"] != float64(0) || got["text"] != "<p>served under custody</p>\n" {
		t.Fatalf("execute_command: %v", got)
	}
	if strings.Contains(fmt.Sprint(got["argv"]), secret) {
		t.Errorf("execute_command shows the secret in its argv: %v", got["argv"])
	}
	ev = callTool(t, session, schemas, "wait_process", map[string]any{"monitor_id": id, "condition": map[string]any{"kind": "output", "text": "GET /index.html"}, "timeout_seconds": 60})
	if ev["outcome"] != "satisfied" {
		t.Fatalf("wait for the request line: %v", ev)
	}
	logs := callTool(t, session, schemas, "process_logs", map[string]any{"monitor_id": id})
	text := logs["text"].(string)
	if !strings.Contains(text, "GET /index.html?token=[REDACTED]") || strings.Contains(text, secret) {
		t.Fatalf("logs do not show the request with the secret redacted:\n%s", text)
	}
	if st := callTool(t, session, schemas, "process_status", map[string]any{"monitor_id": id}); st["status"] != "running" {
		t.Fatalf("status %v", st)
	}
	receipt := callTool(t, session, schemas, "cancel_process", map[string]any{"monitor_id": id})
	if receipt["status"] != "cancelled" || receipt["group_empty_verified"] != true {
		t.Fatalf("cancel: %v", receipt)
	}

	// Typed errors are tool errors carrying the code.
	if code := toolErrorCode(t, session, schemas, "process_status", map[string]any{"monitor_id": "m_00000000000000000000"}); code != "unknown_monitor" {
		t.Errorf("unknown monitor: code %q", code)
	}
	if code := toolErrorCode(t, session, schemas, "execute_command", map[string]any{"argv": []string{"true"}, "depends_on": []string{id}}); code != "needs_reconciliation" {
		t.Errorf("exec on a cancelled monitor: code %q", code)
	}
	if code := toolErrorCode(t, session, schemas, "start_process", map[string]any{"argv": []string{"true"}, "bogus": 1}); code != "invalid_request" {
		t.Errorf("unknown field: code %q", code)
	}
	// Arguments that are no object are named as MCP names them.
	res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "process_status", Arguments: "x"})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"field":"arguments"`) {
		t.Errorf("arguments that are a string: %v %+v; want invalid_request naming arguments", err, res)
	}

	// A wait the client cancels ends; the service keeps running. The
	// wait tells the client it is waiting.
	left := callTool(t, session, schemas, "start_process", map[string]any{"argv": []string{"sleeper"}})
	leftID := left["monitor_id"].(string)
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		_, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "wait_process", Meta: mcp.Meta{"progressToken": "w1"},
			Arguments: map[string]any{"monitor_id": leftID, "condition": map[string]any{"kind": "output", "text": "never printed"}}})
		waited <- err
	}()
	select {
	case p := <-progress:
		if p.ProgressToken != "w1" || !strings.Contains(p.Message, leftID) {
			t.Errorf("progress %+v", p)
		}
	case <-time.After(patience):
		t.Fatal("no progress notification from a waiting wait_process")
	}
	cancel()
	select {
	case err := <-waited:
		if err == nil {
			t.Error("a cancelled wait answered")
		}
	case <-time.After(patience):
		t.Fatal("a cancelled wait did not end")
	}
	if st := callTool(t, session, schemas, "process_status", map[string]any{"monitor_id": leftID}); st["status"] != "running" {
		t.Fatalf("after the wait was cancelled: %v", st)
	}
	// The server still answers SIGTERM, SIGINT and SIGHUP by ending its
	// session: a cancelled wait once left them ignored for its life.
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", server.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			ignored, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			const hupIntTerm = 1<<(syscall.SIGHUP-1) | 1<<(syscall.SIGINT-1) | 1<<(syscall.SIGTERM-1)
			if err != nil || ignored&hupIntTerm != 0 {
				t.Errorf("after a cancelled wait the server ignores signals %s", strings.TrimSpace(v))
			}
		}
	}

	// The client goes: the session's run ends and drains what it left.
	session.Close()
	server.Wait()
	m := recordOf(t, stateDir, leftID)
	if m.Receipt == nil || m.Receipt.Reason != "run_ended" || !m.Receipt.GroupEmptyVerified {
		t.Fatalf("after the client disconnected: %+v", m.Receipt)
	}
	assertNothingLeft(t, stateDir)
}

// TestAgentMCPBadRun: a server given a run id that is not valid still
// speaks only JSON-RPC on stdout, and answers each call with the error.
// It used to write a procmon error object there and exit, which a client
// reads as a server that broke its protocol, the reason lost. An empty
// --run is no run id either: it was taken for no --run, and the server
// made a run of its own where one was to be joined.
func TestAgentMCPBadRun(t *testing.T) {
	for _, run := range []string{"bogus", ""} {
		t.Run(fmt.Sprintf("run=%q", run), func(t *testing.T) {
			stateDir := filepath.Join(t.TempDir(), "state")
			procmon := procmonIn(t, stateDir, t.TempDir())
			runProcmon(t, procmon, "configure", "--enable")
			schemas := loadSchemas(t, procmon)
			session, server := mcpClient(t, func(args ...string) *exec.Cmd { return procmon(append(args, "--run", run)...) }, nil)
			if code := toolErrorCode(t, session, schemas, "process_status", map[string]any{"monitor_id": "m_" + strings.Repeat("0", 26)}); code != "invalid_request" {
				t.Fatalf("process_status in run %q: %s, want invalid_request", run, code)
			}
			if code := toolErrorCode(t, session, schemas, "start_process", map[string]any{"argv": []string{"sleeper"}}); code != "invalid_request" {
				t.Fatalf("start_process in run %q: %s, want invalid_request", run, code)
			}
			// Nothing was started, no run was made, and the server ends
			// with its client.
			if out := runProcmon(t, procmon, "list", "--all-runs"); strings.Contains(string(out), "m_") {
				t.Fatalf("a monitor exists: %s", out)
			}
			if out := string(runProcmon(t, procmon, "run", "list")); strings.Contains(out, "r_") {
				t.Fatalf("a run was made: %s", out)
			}
			session.Close()
			server.Wait()
			assertNothingLeft(t, stateDir)
		})
	}
}

// TestAgentMCPServerKilled kills procmon mcp outright: its guardians see
// their run's owner exit and drain every monitor of the session, and the
// command an execute_command runs is drained too (it used to run on to its
// deadline).
func TestAgentMCPServerKilled(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	schemas := loadSchemas(t, procmon)
	session, server := mcpClient(t, procmon, nil)
	defer session.Close()
	var ids []string
	for range 2 {
		ids = append(ids, callTool(t, session, schemas, "start_process", map[string]any{"argv": []string{"sleeper"}})["monitor_id"].(string))
	}
	go session.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_command",
		Arguments: map[string]any{"argv": []string{"sleeper", "under-execute-command"}}})
	pid, _ := awaitProcess(t, "sleeper", "under-execute-command")
	command := []int{pid}
	// The command's custodian (procmon exec) removes its trace from the
	// state directory after the command is gone: it is waited for too.
	if st, ok := statOf(command[0]); ok {
		command = append(command, st.ppid)
	}
	for _, pid := range command {
		if ticks, err := proc.StartTicks(pid); err == nil {
			t.Cleanup(func() {
				if proc.Matches(pid, ticks) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
		}
	}
	server.Process.Signal(syscall.SIGKILL)
	for _, id := range ids {
		r := awaitRecordedReceipt(t, stateDir, id, "after its session's server was killed")
		if r.Reason != "owner_exited" || !r.GroupEmptyVerified {
			t.Errorf("%s: %+v", id, r)
		}
	}
	for _, pid := range command {
		if ticks, err := proc.StartTicks(pid); err == nil && !awaitGone(pid, ticks) {
			t.Fatalf("execute_command's command or its procmon exec (pid %d) outlived its server by %v", pid, patience)
		}
	}
	assertNothingLeft(t, stateDir)
}

// TestAgentMCPServerStopped stops procmon mcp with SIGTERM while a
// wait_process and an execute_command are in progress: both are answered
// (the exec once its command is drained), the session's run ends and
// drains its monitor, and the server exits. It used
// to hang until the calls ended on their own (an exec's 600 s), since the
// SDK waits for the calls in progress without ending them. The exec
// reports progress meanwhile, which a client may keep its call alive on,
// and arguments beyond the request cap are refused as on stdin.
func TestAgentMCPServerStopped(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	schemas := loadSchemas(t, procmon)
	progress := make(chan *mcp.ProgressNotificationParams, 16)
	session, server := mcpClient(t, procmon, progress)
	defer session.Close()

	huge := strings.Repeat("x", 4<<20)
	if code := toolErrorCode(t, session, schemas, "start_process", map[string]any{"argv": []string{"sleeper", huge}}); code != "invalid_request" {
		t.Fatalf("start_process with 4 MiB of arguments: %s, want invalid_request", code)
	}
	id := callTool(t, session, schemas, "start_process", map[string]any{"argv": []string{"sleeper"}})["monitor_id"].(string)
	type answer struct {
		tool string
		res  *mcp.CallToolResult
		err  error
	}
	answered := make(chan answer, 2)
	go func() {
		res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait_process",
			Arguments: map[string]any{"monitor_id": id, "condition": map[string]any{"kind": "output", "text": "never printed"}}})
		answered <- answer{"wait_process", res, err}
	}()
	go func() {
		res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_command", Meta: mcp.Meta{"progressToken": "x1"},
			Arguments: map[string]any{"argv": []string{"sleeper", "stopped-server"}}})
		answered <- answer{"execute_command", res, err}
	}()
	select {
	case p := <-progress:
		if p.ProgressToken != "x1" || !strings.HasPrefix(p.Message, "running ") {
			t.Errorf("progress %+v", p)
		}
	case <-time.After(patience):
		t.Fatal("no progress notification from a running execute_command")
	}
	command, ticks := awaitProcess(t, "sleeper", "stopped-server")
	// The client's transport waits for the server once the connection
	// ends, so the test watches its pid rather than wait for it too.
	serverTicks, err := proc.StartTicks(server.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	server.Process.Signal(syscall.SIGTERM)
	if !awaitGone(server.Process.Pid, serverTicks) {
		server.Process.Signal(syscall.SIGKILL)
		t.Fatalf("procmon mcp did not exit within %v of its SIGTERM, with calls in progress", patience)
	}
	// Each call was answered before the server exited: the wait and the
	// exec as interrupted, the exec with its drained command's result.
	for range 2 {
		select {
		case a := <-answered:
			if a.err != nil || a.res == nil {
				t.Fatalf("%s was not answered: %v", a.tool, a.err)
			}
			text := a.res.Content[0].(*mcp.TextContent).Text
			switch a.tool {
			case "wait_process":
				// The server ends the run it made: the service does not
				// keep running, as an interrupted wait otherwise says.
				if !a.res.IsError || gjson.Get(text, "error.code").String() != "wait_interrupted" ||
					!strings.Contains(text, "the server is stopping, and ends its session's run") || strings.Contains(text, "keeps running") {
					t.Errorf("wait_process answered %s, want wait_interrupted saying the session's run ends", text)
				}
			case "execute_command":
				r := gjson.Get(text, "error.details.result")
				if !a.res.IsError || gjson.Get(text, "error.code").String() != "wait_interrupted" ||
					r.Get("status").String() != "cancelled" || !r.Get("group_empty_verified").Bool() {
					t.Errorf("execute_command answered %s, want wait_interrupted with its drained command's result", text)
				}
				// The result's keys come in the CLI's fixed order, not
				// sorted as a map would write them.
				var keys []string
				r.ForEach(func(k, _ gjson.Result) bool { keys = append(keys, k.String()); return len(keys) < 3 })
				if strings.Join(keys, ",") != "run_id,command_ordinal,argv" {
					t.Errorf("execute_command's result begins with keys %v, want run_id, command_ordinal, argv", keys)
				}
			}
		case <-time.After(patience):
			t.Fatal("a call in progress did not end with its server")
		}
	}
	if r := awaitRecordedReceipt(t, stateDir, id, "after its session's server was stopped"); r.Reason != "run_ended" || !r.GroupEmptyVerified {
		t.Errorf("%s: %+v", id, r)
	}
	if !awaitGone(command, ticks) {
		t.Fatalf("execute_command's command outlived its server by %v", patience)
	}
	assertNothingLeft(t, stateDir)
}

// TestAgentMCPListsTheJoinedRunsTools: a server that joins a run lists
// only the tools the run grants, where it listed all six and answered
// tool_not_allowed to every call of the others; a run with native
// checkpoints, which refuses every monitor tool, lists execute_command
// alone.
func TestAgentMCPListsTheJoinedRunsTools(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	run := gjson.GetBytes(runProcmon(t, procmon, "run", "new", "--tools", "start_process,wait_process"), "run_id").String()
	checkpoints := gjson.GetBytes(runProcmon(t, procmon, "run", "new", "--native-checkpoints"), "run_id").String()
	for _, c := range []struct{ run, want string }{
		{run, "start_process,wait_process"},
		{checkpoints, "execute_command"},
		// A run that cannot be read lists every tool, whose calls say why.
		{"r_" + strings.Repeat("0", 26), "cancel_process,execute_command,process_logs,process_status,start_process,wait_process"},
	} {
		session, server := mcpClient(t, func(args ...string) *exec.Cmd { return procmon(append(args, "--run", c.run)...) }, nil)
		tools, err := session.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range tools.Tools {
			names = append(names, tool.Name)
		}
		if got := strings.Join(names, ","); got != c.want {
			t.Errorf("run %s: tools %s, want %s", c.run, got, c.want)
		}
		session.Close()
		server.Wait()
	}
	assertNothingLeft(t, stateDir)
}

// TestAgentMCPExecAdvice: execute_command's errors, answered by the
// procmon exec the server runs, are advised as every tool's: once, and in
// a session's terms. The exec's own advice for a person came through, so
// a dependency's was said twice and an ended run advised --run ID, which
// no MCP client can give. This session joined its run, which a restart
// would join again: a person must restart the server with another.
func TestAgentMCPExecAdvice(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	schemas := loadSchemas(t, procmon)
	run := gjson.GetBytes(runProcmon(t, procmon, "run", "new"), "run_id").String()
	ended := startMonitor(t, procmon, "start", "--run", run, "--", "printer", "done")
	runProcmon(t, procmon, "wait", "--run", run, ended, "--exit", "--timeout", "30s")
	session, server := mcpClient(t, func(args ...string) *exec.Cmd { return procmon(append(args, "--run", run)...) }, nil)
	message := func(args map[string]any) string {
		t.Helper()
		res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_command", Arguments: args})
		if err != nil || !res.IsError {
			t.Fatalf("execute_command %v: %v %+v, want a tool error", args, err, res)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		schemas.check(t, "exec", "error", []byte(text))
		return gjson.Get(text, "error.message").String()
	}
	if m := message(map[string]any{"argv": []string{"printer"}, "depends_on": []string{ended}}); strings.Count(m, "start it again") != 1 {
		t.Errorf("a dependency that has ended: %q, want its advice once", m)
	}
	for _, argv := range [][]string{{}, {""}} {
		if m := message(map[string]any{"argv": argv}); strings.Contains(m, "procmon ") {
			t.Errorf("argv %q: %q names a command line", argv, m)
		}
	}
	runProcmon(t, procmon, "run", "end", "--run", run)
	if m := message(map[string]any{"argv": []string{"printer"}}); !strings.Contains(m, "a person restarts the server without --run and $PROCMON_RUN, or with another run") || strings.Contains(m, "--run ID") {
		t.Errorf("an ended run: %q, want a restart with another run advised, not --run ID", m)
	}
	session.Close()
	server.Wait()
	assertNothingLeft(t, stateDir)
}

// TestAgentMCPExecKilled kills the procmon exec that runs an
// execute_command while a descendant of the command has left its session
// (setsid): the command dies with its custodian, the escapee does not.
// The server, which saw its exec die unanswered, stops what the exec's
// trace names at once and says so; the escapee used to run on until the
// session's end, with nothing said.
func TestAgentMCPExecKilled(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	work := t.TempDir()
	procmon := procmonIn(t, stateDir, work)
	runProcmon(t, procmon, "configure", "--enable")
	session, server := mcpClient(t, procmon, nil)
	defer session.Close()
	answered := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_command",
			Arguments: map[string]any{"argv": []string{"forker", "pids.txt"}}})
		answered <- res
	}()
	var forker, escapee int
	var ticks uint64
	d := &state.Dir{Path: stateDir}
	traced := func() bool {
		b, _ := os.ReadFile(filepath.Join(work, "pids.txt"))
		f := strings.Fields(string(b))
		if len(f) != 3 {
			return false
		}
		forker, _ = strconv.Atoi(f[0])
		escapee, _ = strconv.Atoi(f[2])
		ticks, _ = proc.StartTicks(escapee)
		ids, _ := d.MonitorIDs()
		return slices.ContainsFunc(ids, func(id string) bool {
			e, err := d.LoadTraceEscapes(id)
			return err == nil && slices.ContainsFunc(e.EscapedSessions, func(s state.EscapedSession) bool { return s.SID == escapee })
		})
	}
	for deadline := time.Now().Add(patience); !traced(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no trace of the exec names the escapee's session in %v", patience)
		}
	}
	st, ok := statOf(forker)
	if !ok {
		t.Fatalf("forker %d is gone", forker)
	}
	syscall.Kill(st.ppid, syscall.SIGKILL) // the command's procmon exec
	var res *mcp.CallToolResult
	select {
	case res = <-answered:
	case <-time.After(patience):
		t.Fatal("execute_command was not answered once its procmon exec was killed")
	}
	if res == nil || !res.IsError {
		t.Fatalf("execute_command answered %+v, want a tool error", res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, "what its command started was stopped") {
		t.Errorf("execute_command answered %s, want it to say what its command started was stopped", text)
	}
	// Nothing but the server has looked at the state directory.
	if proc.Matches(escapee, ticks) {
		t.Fatalf("the escapee %d of a killed exec runs on in its session", escapee)
	}
	session.Close()
	server.Wait()
	assertNothingLeft(t, stateDir)
}

// TestAgentMCPSessionEndReconciles: a monitor of the session whose
// guardian was killed is reconciled when the session ends, and what it
// left is stopped. It used to stay needs_reconciliation, a member of its
// group running, with nothing said: a client has no reconcile tool, and the
// session was its only agent.
func TestAgentMCPSessionEndReconciles(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	schemas := loadSchemas(t, procmon)
	var stderr bytes.Buffer
	session, server := mcpClientTo(t, procmon, nil, &stderr)
	defer session.Close()
	// The member outlives its guardian (the service's leader dies with it).
	id := callTool(t, session, schemas, "start_process", map[string]any{"argv": []string{"sh", "-c", "sleeper session-member & exec sleeper"}})["monitor_id"].(string)
	m := recordOf(t, stateDir, id)
	member, ticks := awaitProcess(t, "sleeper", "session-member")
	syscall.Kill(m.GuardianPID, syscall.SIGKILL)
	if !awaitGone(m.GuardianPID, m.GuardianStartTicks) {
		t.Fatalf("guardian %d outlived its SIGKILL", m.GuardianPID)
	}
	session.Close()
	server.Wait()
	if !awaitGone(member, ticks) {
		t.Fatalf("a member of a monitor whose guardian was killed outlived its session by %v; stderr %q", patience, stderr.String())
	}
	r := recordOf(t, stateDir, id).Receipt
	if r == nil || r.Custody != state.CustodyReconciled || !r.GroupEmptyVerified {
		t.Fatalf("after the session ended: %+v; stderr %q", r, stderr.String())
	}
	if !strings.Contains(stderr.String(), id+" had lost its guardian: reconciled") {
		t.Errorf("the server said %q", stderr.String())
	}
	assertNothingLeft(t, stateDir)
}

// awaitProcess waits until a process whose command line is exactly args
// runs, and returns its pid and start time; should it outlive the test,
// the test's end kills it.
func awaitProcess(t *testing.T, args ...string) (int, uint64) {
	t.Helper()
	for deadline := time.Now().Add(patience); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, pid := range pidsWithArgs(args...) {
			if ticks, err := proc.StartTicks(pid); err == nil {
				t.Cleanup(func() {
					if proc.Matches(pid, ticks) {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				})
				return pid, ticks
			}
		}
	}
	t.Fatalf("%q did not start within %v", args, patience)
	return 0, 0
}

// pidsWithArgs lists the processes whose command line is exactly args.
func pidsWithArgs(args ...string) []int {
	want := strings.Join(args, "\x00") + "\x00"
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []int
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && string(b) == want {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			out = append(out, pid)
		}
	}
	return out
}

// TestAgentMCPHugeWindows: a max_bytes up to the largest int64 is a bound
// like any other for process_logs and execute_command, and the server
// that answered it goes on serving the session.
func TestAgentMCPHugeWindows(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	schemas := loadSchemas(t, procmon)
	session, server := mcpClient(t, procmon, nil)
	defer session.Close()
	// A json.Number, since a float64 cannot hold these exactly.
	huge := json.Number("9223372036854775807")
	id := callTool(t, session, schemas, "start_process", map[string]any{"argv": []string{"printer", "0123456789abcde"}})["monitor_id"].(string)
	if ev := callTool(t, session, schemas, "wait_process", map[string]any{"monitor_id": id, "condition": map[string]any{"kind": "exit"}, "timeout_seconds": 60}); ev["outcome"] != "satisfied" {
		t.Fatalf("wait for the exit: %v", ev)
	}
	logs := callTool(t, session, schemas, "process_logs", map[string]any{"monitor_id": id, "offset": 16, "max_bytes": json.Number("9223372036854775792")})
	if logs["text"] != "" || logs["next_offset"] != float64(16) {
		t.Errorf("process_logs from the end: %v", logs)
	}
	logs = callTool(t, session, schemas, "process_logs", map[string]any{"monitor_id": id, "max_bytes": huge})
	if logs["text"] != "0123456789abcde\n" {
		t.Errorf("process_logs of all of it: %v", logs)
	}
	got := callTool(t, session, schemas, "execute_command", map[string]any{"argv": []string{"printer", "abc"}, "max_bytes": huge})
	if got["exit_code"] != float64(0) || got["text"] != "abc\n" {
		t.Errorf("execute_command: %v", got)
	}
	if st := callTool(t, session, schemas, "process_status", map[string]any{"monitor_id": id}); st["status"] != "exited" {
		t.Errorf("status after the huge windows: %v", st)
	}
	session.Close()
	server.Wait()
	assertNothingLeft(t, stateDir)
}

// strip removes what a tool's schema leaves out of a schema document.
func strip(doc map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range doc {
		if k != "$schema" && k != "$id" {
			out[k] = v
		}
	}
	return out
}

// inspectorCLI returns the MCP Inspector's command line client, installed
// from npm into the user's cache directory when missing; the reason when
// it cannot be had.
func inspectorCLI(t *testing.T) (string, string) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", "npm is not installed, so the MCP Inspector cannot be fetched"
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "procmon-test", "inspector")
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(bin); err == nil {
		return bin, ""
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", dir, "@modelcontextprotocol/inspector")
	if out, err := install.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("npm install @modelcontextprotocol/inspector failed (%v): %s", err, bytes.TrimSpace(out))
	}
	return bin, ""
}

// TestAgentMCPInspector has procmon mcp driven by an MCP client written
// elsewhere: the MCP Inspector's CLI mode. Each of its calls is a session
// of its own, so a monitor it starts is drained when it is done.
func TestAgentMCPInspector(t *testing.T) {
	inspector, why := inspectorCLI(t)
	if inspector == "" {
		t.Skip(why)
	}
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	schemas := loadSchemas(t, procmon)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The server is this test binary acting as procmon (it dispatches on
	// its argv[0]), which the Inspector cannot name: a script does.
	server := filepath.Join(t.TempDir(), "procmon-mcp")
	script := fmt.Sprintf("#!/bin/bash\nexport PROCMON_STATE_DIR=%q PROCMON_RUN=\nexec -a procmon %q mcp\n", stateDir, exe)
	if err := os.WriteFile(server, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	inspect := func(args ...string) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, inspector, append([]string{"--cli", server}, args...)...)
		out, err := c.Output()
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, out)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, out)
		}
		return v
	}

	listed := inspect("--method", "tools/list")
	var names []string
	for _, tool := range listed["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	if len(names) != 6 {
		t.Fatalf("tools %v", names)
	}

	started := inspect("--method", "tools/call", "--tool-name", "start_process", "--tool-arg", `argv=["sleeper"]`)
	result := started["structuredContent"].(map[string]any)
	schemas.check(t, "start", "response", mustJSON(t, result))
	id := result["monitor_id"].(string)
	// The Inspector's session is over: the monitor went with it.
	if r := awaitRecordedReceipt(t, stateDir, id, "when the Inspector's session ended"); !r.GroupEmptyVerified || (r.Reason != "run_ended" && r.Reason != "owner_exited") {
		t.Errorf("receipt %+v", r)
	}

	// The Inspector sends each argument as text, converted by the type the
	// input schema declares: a condition and a number must each have one.
	waited := inspect("--method", "tools/call", "--tool-name", "wait_process", "--tool-arg", "monitor_id="+id,
		"--tool-arg", `condition={"kind":"exit"}`, "--tool-arg", "timeout_seconds=60")
	if waited["isError"] == true {
		t.Fatalf("wait_process through the Inspector: %v", waited)
	}
	result = waited["structuredContent"].(map[string]any)
	schemas.check(t, "wait", "response", mustJSON(t, result))
	if result["outcome"] != "satisfied" {
		t.Errorf("wait_process: %v", result)
	}

	ran := inspect("--method", "tools/call", "--tool-name", "execute_command", "--tool-arg", `argv=["printer","from the inspector"]`,
		"--tool-arg", "timeout_seconds=60")
	if ran["isError"] == true {
		t.Fatalf("execute_command through the Inspector: %v", ran)
	}
	result = ran["structuredContent"].(map[string]any)
	schemas.check(t, "exec", "response", mustJSON(t, result))
	if result["exit_code"] != float64(0) || result["text"] != "from the inspector\n" || result["work_deadline_ms"] == nil {
		t.Errorf("execute_command: %v", result)
	}

	failed := inspect("--method", "tools/call", "--tool-name", "process_status", "--tool-arg", "monitor_id=m_00000000000000000000")
	if failed["isError"] != true || !strings.Contains(fmt.Sprint(failed["content"]), `"code":"unknown_monitor"`) {
		t.Errorf("a typed error through the Inspector: %v", failed)
	}
	assertNothingLeft(t, stateDir)
}

// TestAgentMCPAnswersAtEOF drives procmon mcp as a script does: every
// request on a pipe, then EOF, with calls that take a moment still open
// when stdin ends. Every call is answered, then the session ends as a
// client's disconnect ends it: its run ends and drains the monitor it
// started, and the server exits. It used to drop every answer still
// unwritten at EOF, often even initialize's: the SDK stops writing once
// its read side has ended.
func TestAgentMCPAnswersAtEOF(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	schemas := loadSchemas(t, procmon)
	before := startMonitor(t, procmon, "start", "--", "sleeper", "before-the-session")

	call := func(id int, tool string, args map[string]any) map[string]any {
		return map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}}
	}
	requests := []map[string]any{
		{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
			"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "script", "version": "1"}}},
		{"jsonrpc": "2.0", "method": "notifications/initialized"},
		{"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
		call(3, "start_process", map[string]any{"argv": []string{"sleeper", "eof-session"}}),
		call(4, "wait_process", map[string]any{"monitor_id": before, "condition": map[string]any{"kind": "output", "text": "never printed"}, "timeout_seconds": 1}),
		call(5, "execute_command", map[string]any{"argv": []string{"printer", "-split", "300ms", "slow answer"}}),
	}
	var in bytes.Buffer
	for _, r := range requests {
		in.Write(append(mustJSON(t, r), '\n'))
	}
	var out, stderr bytes.Buffer
	server := procmon("mcp")
	server.Stdin, server.Stdout, server.Stderr = &in, &out, &stderr
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- server.Wait() }()
	if err := awaitExit(t, server, exited, patience, fmt.Sprintf("procmon mcp did not exit within %v of its stdin's end", patience),
		func() string { return fmt.Sprintf("stdout %q", out.String()) }); err != nil {
		t.Fatalf("procmon mcp: %v; stderr %q", err, stderr.String())
	}

	answers := map[int64]gjson.Result{}
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		msg := gjson.Parse(line)
		if !msg.Get("id").Exists() {
			continue // a notification
		}
		id := msg.Get("id").Int()
		if _, twice := answers[id]; twice {
			t.Errorf("request %d was answered twice", id)
		}
		if msg.Get("error").Exists() {
			t.Errorf("request %d: %s", id, msg.Get("error").Raw)
		}
		answers[id] = msg.Get("result")
	}
	if len(answers) != 5 {
		t.Fatalf("answered %d of 5 requests; stdout %q; stderr %q", len(answers), out.String(), stderr.String())
	}
	if n := len(answers[2].Get("tools").Array()); n != 6 {
		t.Errorf("tools/list listed %d tools, want 6", n)
	}
	tool := func(id int64, name string) gjson.Result {
		t.Helper()
		r := answers[id]
		if r.Get("isError").Bool() {
			t.Fatalf("%s: tool error %s", name, r.Get("content.0.text").String())
		}
		schemas.check(t, schemas.tools[name], "tool_output", []byte(r.Get("structuredContent").Raw))
		return r.Get("structuredContent")
	}
	started := tool(3, "start_process").Get("monitor_id").String()
	if o := tool(4, "wait_process").Get("outcome").String(); o != "timeout" {
		t.Errorf("wait_process: outcome %s, want timeout", o)
	}
	if r := tool(5, "execute_command"); r.Get("exit_code").Int() != 0 || !strings.Contains(r.Get("text").String(), "slow answer") {
		t.Errorf("execute_command: %s", r.Raw)
	}
	if r := awaitRecordedReceipt(t, stateDir, started, "after its session's stdin ended"); r.Reason != "run_ended" || !r.GroupEmptyVerified {
		t.Errorf("%s: %+v", started, r)
	}
	runProcmon(t, procmon, "cancel", before)
	assertNothingLeft(t, stateDir)
}

// TestAgentMCPBadLines: a line that is not JSON, or JSON that is no
// JSON-RPC message, is answered with the JSON-RPC error for it (parse
// error, invalid request, with the line's id when it has one), and the
// session goes on: the calls around it are answered, and its monitor
// runs until the session ends. The SDK's reader used to end the session
// at the first such line, draining every monitor it had started.
func TestAgentMCPBadLines(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	server := procmon("mcp")
	stdin, err := server.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := server.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	server.Stderr = &stderr
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	// next reads the server's next message, which must come within
	// patience.
	next := func() gjson.Result {
		t.Helper()
		got := make(chan bool, 1)
		go func() { got <- lines.Scan() }()
		select {
		case ok := <-got:
			if !ok {
				t.Fatalf("procmon mcp ended its output; stderr %q", stderr.String())
			}
		case <-time.After(patience):
			server.Process.Kill()
			t.Fatalf("procmon mcp answered nothing within %v", patience)
		}
		return gjson.Parse(lines.Text())
	}
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`)
	if r := next(); r.Get("id").Int() != 1 || !r.Get("result").Exists() {
		t.Fatalf("initialize: %s", r.Raw)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"start_process","arguments":{"argv":["sleeper","bad-lines"]}}}`)
	started := gjson.Parse(next().Get("result.content.0.text").String()).Get("monitor_id").String()
	if started == "" {
		t.Fatal("start_process answered no monitor_id")
	}
	for _, c := range []struct {
		line string
		code int64
		id   string
	}{
		{"garbage line", -32700, "null"},
		{`{"jsonrpc":"2.0","id":2`, -32700, "null"},
		{`{"id":"seven","method":"tools/list"}`, -32600, `"seven"`},
		{`42`, -32600, "null"},
		{`[]`, -32600, "null"},
		{`[{"jsonrpc":"2.0","id":9,"method":"tools/list"}]`, -32600, "null"},
		// No method, no result, no error: no message (it was dropped as
		// a response to no request).
		{`{"jsonrpc":"2.0","id":51}`, -32600, "51"},
		// A progress token is a string or an integer.
		{`{"jsonrpc":"2.0","id":52,"method":"tools/list","params":{"_meta":{"progressToken":{"a":1}}}}`, -32600, "52"},
		{`{"jsonrpc":"2.0","id":53,"method":"tools/list","params":{"_meta":{"progressToken":1.5}}}`, -32600, "53"},
	} {
		send(c.line)
		if r := next(); r.Get("error.code").Int() != c.code || r.Get("id").Raw != c.id {
			t.Errorf("%q was answered %s; want error %d with id %s", c.line, r.Raw, c.code, c.id)
		}
	}
	send("")
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"process_status","arguments":{"monitor_id":"` + started + `"}}}`)
	if r := next(); r.Get("id").Int() != 3 || gjson.Parse(r.Get("result.content.0.text").String()).Get("status").String() != "running" {
		t.Fatalf("process_status after the bad lines: %s", r.Raw)
	}
	stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- server.Wait() }()
	if err := awaitExit(t, server, exited, patience, fmt.Sprintf("procmon mcp did not exit within %v of its stdin's end", patience), nil); err != nil {
		t.Fatalf("procmon mcp: %v; stderr %q", err, stderr.String())
	}
	if r := awaitRecordedReceipt(t, stateDir, started, "after its session ended"); r.Reason != "run_ended" {
		t.Errorf("%s: %+v", started, r)
	}
	assertNothingLeft(t, stateDir)
}

// TestAgentMCPBadLinesUnread: a client that sends thousands of bad lines
// and reads none of the answers, then closes stdin, still ends its
// session: the answers it does not read do not keep the server from
// reading on to the end of stdin.
func TestAgentMCPBadLinesUnread(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	server := procmon("mcp")
	server.Stdin = strings.NewReader(strings.Repeat("garbage line\n", 5000))
	unread, err := server.StdoutPipe() // held open, never read
	if err != nil {
		t.Fatal(err)
	}
	defer unread.Close()
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- server.Wait() }()
	awaitExit(t, server, exited, patience, fmt.Sprintf("procmon mcp did not end within %v of its stdin's end, with its answers unread", patience), nil)
	assertNothingLeft(t, stateDir)
}

// TestAgentMCPClientGoneAtEOF: a client that exited, closing both its
// ends, is not waited for as one that closed stdin to hear its answers:
// with no reader left on stdout the call in progress is stopped at once
// (its command drained), rather than given the server's stop bound
// (30 s) for an answer nobody reads, and the server ends its session and
// exits cleanly, not killed by SIGPIPE.
func TestAgentMCPClientGoneAtEOF(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	runProcmon(t, procmon, "configure", "--enable")
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdinW.Close()
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdoutR.Close()
	var stderr bytes.Buffer
	server := procmon("mcp")
	server.Stdin, server.Stdout, server.Stderr = stdinR, stdoutW, &stderr
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	stdinR.Close()
	stdoutW.Close()
	exited := make(chan error, 1)
	go func() { exited <- server.Wait() }()
	for _, r := range []map[string]any{
		{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
			"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "gone", "version": "1"}}},
		{"jsonrpc": "2.0", "method": "notifications/initialized"},
		{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "execute_command",
			"arguments": map[string]any{"argv": []string{"sleeper", "client-gone"}}}},
	} {
		stdinW.Write(append(mustJSON(t, r), '\n'))
	}
	if _, err := bufio.NewReader(stdoutR).ReadString('\n'); err != nil {
		t.Fatalf("no answer to initialize: %v; stderr %q", err, stderr.String())
	}
	command, ticks := awaitProcess(t, "sleeper", "client-gone")
	stdoutR.Close()
	stdinW.Close()
	// Well within the 30 s that a client still reading is given.
	if err := awaitExit(t, server, exited, 10*time.Second, "procmon mcp waited for its calls with nobody left to answer", nil); err != nil {
		t.Fatalf("procmon mcp: %v; stderr %q", err, stderr.String())
	}
	if !awaitGone(command, ticks) {
		t.Fatalf("execute_command's command outlived its gone client by %v", patience)
	}
	if stderr.Len() > 0 {
		t.Errorf("the server said %q", stderr.String())
	}
	assertNothingLeft(t, stateDir)
}
