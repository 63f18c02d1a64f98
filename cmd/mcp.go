//go:build linux

package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/tidwall/gjson"
	"golang.org/x/sys/unix"

	"procmon/internal/proc"
	"procmon/internal/protocol"
	"procmon/internal/state"
	"procmon/internal/wait"
)

// mcpProgressInterval is how often a wait_process or execute_command call
// in progress tells a client that asked for progress that it is still at
// work.
const mcpProgressInterval = time.Second

func newMCPCmd(env *Env, g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the agent tools over the Model Context Protocol on stdio",
		Long: `Serve start_process, wait_process, process_status, process_logs,
cancel_process and execute_command over the Model Context Protocol on
stdin and stdout, with procmon schema's schemas as their input and output
schemas. A typed error is a tool error whose text is the error object.
Messages are one per line, without batches; a line that is no JSON-RPC
message, or a batch, is answered with the JSON-RPC error for it (parse
error, invalid request), and the session goes on.

The session is one agent invocation: the server creates a run bound to
itself as owner (its frozen policy and command budget are the session's),
and when the client disconnects, or the server is stopped or killed, every
monitor the session started is drained; one whose guardian was lost is
reconciled as the server ends, which it says on stderr. A client that
closes stdin is answered first: the calls in progress have 30 s to end,
then are interrupted as on SIGTERM (unless nobody reads stdout). To
join an existing run instead, give it: procmon mcp --run r_... (or
$PROCMON_RUN); that run is then neither created nor ended by the server,
and the tools listed are those it grants.

  claude mcp add procmon -- procmon mcp`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			// A client that exited takes stdout's reader with it: a write
			// there then fails (EPIPE), where SIGPIPE would kill the server
			// before its session ends (its run, the lost monitors it
			// reconciles). Caught, not ignored: an ignored SIGPIPE would be
			// inherited by what the server runs.
			pipe := make(chan os.Signal, 1)
			signal.Notify(pipe, syscall.SIGPIPE)
			defer signal.Stop(pipe)
			return runMCP(ctx, env, g, c.Flags().Changed("run"))
		},
	}
}

// mcpSession is the run a server acts in, and how it serves each tool.
type mcpSession struct {
	env *Env

	// stopped ends when the server is told to stop (SIGTERM, SIGINT,
	// SIGHUP), or when its client has closed stdin and calls are still
	// unanswered mcpStopBound later; the calls in progress end with it.
	stopped context.Context

	mu     sync.Mutex
	runID  string
	owned  bool  // created for this session, ended with it
	runErr error // why the run could not be created yet
	// badRun is why the run given to the server cannot be used: every
	// call answers it, since a server's stdout carries JSON-RPC only.
	badRun error
}

func runMCP(ctx context.Context, env *Env, g *globals, runGiven bool) error {
	// Told to stop, the server ends the calls in progress (their contexts
	// end with s.stopped, see addTools), and closes the session once each
	// is answered: closed at once, it dropped the answer of a call still
	// draining (an exec's result).
	stopped, stopCalls := context.WithCancel(ctx)
	defer stopCalls()
	s := &mcpSession{env: env, runID: g.run, stopped: stopped}
	if s.runID == "" {
		s.runID = env.Getenv("PROCMON_RUN")
	}
	switch {
	case runGiven && g.run == "":
		// Taken for absent, it made a session run where the person meant
		// to join one.
		s.badRun = protocol.Errorf(protocol.CodeInvalidRequest, `procmon mcp was started with an empty --run: a person restarts the server without it, or with a run id (r_..., or "default")`)
	case s.runID != "":
		if state.ValidRunID(s.runID) != nil {
			s.badRun = protocol.Errorf(protocol.CodeInvalidRequest, `procmon mcp was started with the run %q (from --run or $PROCMON_RUN), which is no run id: a person restarts the server without it, or with a run id (r_..., or "default")`, s.runID)
		}
	default:
		// Made now, so the session's budget and policy are frozen at its
		// start; if monitors are not configured yet, every call tries again
		// and says why it cannot.
		s.sessionRun()
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "procmon", Title: "procmon: process custody for agents", Version: Version}, &mcp.ServerOptions{
		Instructions: "Start long-running services with start_process, make ONE wait_process call for their readiness line, run test clients with execute_command (depends_on the services), read process_logs, and cancel_process when done. Every monitor this session starts is drained when the session ends.",
	})
	if err := s.addTools(server); err != nil {
		return err
	}
	open := &openCalls{calls: map[jsonrpc.ID]bool{}, changed: make(chan struct{}, 1)}
	runCtx, endRun := context.WithCancel(context.Background())
	defer endRun()
	defer context.AfterFunc(ctx, func() {
		open.awaitNone(mcpStopBound, runCtx.Done())
		endRun()
	})()
	// A client that closes stdin (a script piping its requests, a client
	// shutting down) is answered too: the SDK ends the session when its
	// read side ends, and writes no answer from then on, so the end of
	// stdin waits for the calls in progress. They have mcpStopBound to
	// end on their own, and are then stopped as by a signal; a client that
	// is gone (no reader left on stdout) waits for none.
	inputEnded := func() {
		gone := readerGone(env.Stdout, runCtx.Done())
		if !open.awaitNone(mcpStopBound, gone) {
			stopCalls()
			open.awaitNone(mcpStopBound, gone)
		}
	}
	// The SDK's reader ends the session at the first line it cannot read:
	// one bad line from a client drained every service the session
	// started. Such lines are answered here instead (readMessages), and
	// the SDK reads the rest; answers and the SDK's writes share stdout
	// message by message.
	stdout := &lockedWriter{w: env.Stdout}
	messages, toSDK := io.Pipe()
	go readMessages(env.Stdin, toSDK, stdout)
	transport := &mcp.IOTransport{Reader: messages, Writer: nopWriteCloser{stdout}}
	err := server.Run(runCtx, answeringTransport{transport, open, inputEnded})
	s.mu.Lock()
	owned, runID := s.owned, s.runID
	s.mu.Unlock()
	if owned {
		// The session is over: its monitors go with it. (Were the server
		// killed instead, each guardian would see its owner exit.)
		if ended, endErr := runEnd(env, runID); endErr != nil {
			fmt.Fprintf(env.Stderr, "procmon mcp: end run %s: %v\n", runID, endErr)
		} else {
			s.settleLost(ended)
		}
	}
	// A client that exited (stdout's reader gone) has disconnected as
	// one that closed stdin has.
	if err != nil && ctx.Err() == nil && err != io.EOF && !errors.Is(err, syscall.EPIPE) {
		fmt.Fprintf(env.Stderr, "procmon mcp: %v\n", err)
	}
	return nil
}

// settleLost reconciles the monitors of the session's ended run whose
// custody was lost (a guardian killed): nobody is left to, since the
// session was their agent, and a client has no reconcile tool. What it
// could not settle is said on stderr, the one place a server may speak.
func (s *mcpSession) settleLost(ended *runEndResponse) {
	dir, err := openState(s.env)
	if err != nil {
		fmt.Fprintf(s.env.Stderr, "procmon mcp: %v\n", err)
		return
	}
	for _, row := range ended.Errors {
		if row.Error.Code != protocol.CodeNeedsReconciliation {
			fmt.Fprintf(s.env.Stderr, "procmon mcp: end run %s: %s: %s\n", ended.RunID, row.MonitorID, row.Error.Message)
			continue
		}
		m, err := proc.Reconcile(dir, row.MonitorID)
		if err != nil {
			fmt.Fprintf(s.env.Stderr, "procmon mcp: reconcile %s: %v\n", row.MonitorID, err)
			continue
		}
		fmt.Fprintf(s.env.Stderr, "procmon mcp: %s had lost its guardian: reconciled (custody %s, containment %s)\n", row.MonitorID, m.Receipt.Custody, m.Receipt.Containment)
	}
}

// mcpStopBound is how long a server told to stop waits for its calls in
// progress to be answered: an exec drains its command first, for its
// grace (5 s by default) and at most 5 s more. A client that closed stdin
// gives its calls as long to end on their own before they are stopped
// (the help says 30 s).
const mcpStopBound = 30 * time.Second

// answeringTransport is a transport that keeps the calls it has read and
// not answered yet (openCalls), and calls inputEnded before it reports
// the end of its input.
type answeringTransport struct {
	mcp.Transport
	open       *openCalls
	inputEnded func()
}

func (t answeringTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return answeringConn{c, t.open, t.inputEnded}, nil
}

type answeringConn struct {
	mcp.Connection
	open       *openCalls
	inputEnded func()
}

func (c answeringConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err != nil {
		// The SDK's connection ends its session on any read error (EOF,
		// or a batch it refuses), from when it sees it.
		c.inputEnded()
		return m, err
	}
	if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
		c.open.read(r.ID)
	}
	return m, err
}

func (c answeringConn) Write(ctx context.Context, m jsonrpc.Message) error {
	err := c.Connection.Write(ctx, m)
	if err != nil && ctx.Err() == nil {
		// As the SDK's connection judges a failed write: stdout is broken,
		// and no answer will be written any more.
		c.open.broke()
	}
	if r, ok := m.(*jsonrpc.Response); ok && r.ID.IsValid() {
		c.open.answered(r.ID)
	}
	return err
}

// openCalls keeps the calls read and not answered yet, by id: a call
// whose id is already in use is refused without an answer.
type openCalls struct {
	mu      sync.Mutex
	calls   map[jsonrpc.ID]bool
	broken  bool          // a write failed: no call will be answered
	changed chan struct{} // a token after each answer
}

func (o *openCalls) read(id jsonrpc.ID) {
	o.mu.Lock()
	o.calls[id] = true
	o.mu.Unlock()
}

func (o *openCalls) answered(id jsonrpc.ID) {
	o.mu.Lock()
	delete(o.calls, id)
	o.mu.Unlock()
	o.notify()
}

func (o *openCalls) broke() {
	o.mu.Lock()
	o.broken = true
	o.mu.Unlock()
	o.notify()
}

func (o *openCalls) notify() {
	select {
	case o.changed <- struct{}{}:
	default:
	}
}

// awaitNone waits until every call read has been answered, and reports
// whether it was; it gives up when no answer can be written any more, when
// bound passes, or when abandon is closed.
func (o *openCalls) awaitNone(bound time.Duration, abandon <-chan struct{}) bool {
	timeout := time.NewTimer(bound)
	defer timeout.Stop()
	for {
		o.mu.Lock()
		n, broken := len(o.calls), o.broken
		o.mu.Unlock()
		if n == 0 || broken {
			return n == 0
		}
		select {
		case <-o.changed:
		case <-timeout.C:
			return false
		case <-abandon:
			return false
		}
	}
}

// readerGone is closed once nobody reads w any more: the other end of the
// pipe or socket w writes to is closed (a client that exited), or done is
// closed. It is polled every readerPoll until then; a writer that is no
// descriptor is never gone.
func readerGone(w io.Writer, done <-chan struct{}) <-chan struct{} {
	sc, ok := w.(syscall.Conn)
	if !ok {
		return done
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return done
	}
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		for {
			var hungUp bool
			// POLLERR (a pipe) and POLLHUP (a socket) are reported
			// whatever the events asked for: none are.
			rc.Control(func(fd uintptr) {
				fds := []unix.PollFd{{Fd: int32(fd)}}
				if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
					hungUp = fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
				}
			})
			if hungUp {
				return
			}
			select {
			case <-done:
				return
			case <-time.After(readerPoll):
			}
		}
	}()
	return gone
}

// readerPoll is how often readerGone looks.
const readerPoll = 100 * time.Millisecond

// lockedWriter makes each Write to w whole: the SDK writes a message in
// one Write, and so does readMessages.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// notMessage says what makes msg, which the SDK decodes, no JSON-RPC
// message all the same: with no method, it is a response, which has a
// result or an error ({"jsonrpc": "2.0", "id": 1} was dropped, unanswered,
// as a response to no request); and a progress token is a string or an
// integer (MCP 2025-06-18), where an object was echoed back in every
// progress notification.
func notMessage(msg []byte) error {
	if r := gjson.ParseBytes(msg); !r.Get("method").Exists() && !r.Get("result").Exists() && !r.Get("error").Exists() {
		return errors.New("a message has a method (a request or a notification), or a result or an error (a response)")
	}
	switch t := gjson.GetBytes(msg, "params._meta.progressToken"); {
	case !t.Exists(), t.Type == gjson.String, t.Type == gjson.Number && !strings.ContainsAny(t.Raw, ".eE"):
		return nil
	}
	return errors.New("params._meta.progressToken is a string or an integer")
}

// readMessages passes each line of in that is a JSON-RPC message on to
// the SDK (out), and answers every other line on stdout itself, as
// JSON-RPC asks: a line that is not JSON (or longer than the SDK takes)
// with a parse error; JSON that is no message, or a batch, with an
// invalid request, with the line's id if it has one, else null. (The SDK
// ends the session on a batch it refuses, and MCP 2025-06-18 has none.)
// Blank lines are passed over. The end of in, or an error reading it,
// ends out.
//
// The answers are written by a goroutine of their own, and dropped when
// answersQueued wait already: written here, a client that sent bad lines
// and read nothing (stdout's pipe full) kept this reader from ever
// reaching the end of stdin, which ends the session.
func readMessages(in io.Reader, out *io.PipeWriter, stdout io.Writer) {
	answers := make(chan []byte, answersQueued)
	defer close(answers)
	go func() {
		for b := range answers {
			stdout.Write(b)
		}
	}()
	answer := func(code int64, message string, id json.RawMessage) {
		if id == nil {
			id = json.RawMessage("null")
		}
		type errorObject struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		}
		b, _ := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   errorObject     `json:"error"`
		}{"2.0", id, errorObject{code, message}})
		select {
		case answers <- append(b, '\n'):
		default:
		}
	}
	br := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > mcp.DefaultMaxLineLength {
			tooLong, line = true, line[:0]
		} else if !tooLong {
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		msg := bytes.TrimSpace(line)
		switch {
		case tooLong:
			answer(jsonrpc.CodeParseError, fmt.Sprintf("Parse error: a line longer than %d bytes", mcp.DefaultMaxLineLength), nil)
		case len(msg) == 0:
		case !json.Valid(msg):
			answer(jsonrpc.CodeParseError, "Parse error: the line is not JSON", nil)
		case msg[0] == '[':
			answer(jsonrpc.CodeInvalidRequest, "Invalid Request: batches are not supported; send one message a line", nil)
		default:
			_, derr := jsonrpc.DecodeMessage(msg)
			if derr == nil {
				derr = notMessage(msg)
			}
			if derr != nil {
				var id json.RawMessage
				if msg[0] == '{' {
					if v := gjson.GetBytes(msg, "id"); v.Type == gjson.String || v.Type == gjson.Number {
						id = json.RawMessage(v.Raw)
					}
				}
				answer(jsonrpc.CodeInvalidRequest, "Invalid Request: "+derr.Error(), id)
				break
			}
			if _, werr := out.Write(append(msg, '\n')); werr != nil {
				return // the session is over
			}
		}
		line, tooLong = line[:0], false
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			out.CloseWithError(err)
			return
		}
	}
}

// answersQueued is how many answers of readMessages may wait for a client
// that does not read them.
const answersQueued = 64

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// sessionRun is the run the session acts in, created on first need and
// bound to this process as its owner.
func (s *mcpSession) sessionRun() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.badRun != nil {
		return "", s.badRun
	}
	if s.runID != "" {
		return s.runID, nil
	}
	owner := os.Getpid()
	r, err := runNew(s.env, runNewRequest{OwnerPID: &owner})
	if err != nil {
		s.runErr = err
		return "", err
	}
	s.runID, s.owned, s.runErr = r.RunID, true, nil
	return s.runID, nil
}

// mcpTool is one tool: its schemas' command and how a call is served.
type mcpTool struct {
	command string
	serve   func(ctx context.Context, req *mcp.CallToolRequest, g *globals, args json.RawMessage) (any, error)
}

func (s *mcpSession) addTools(server *mcp.Server) error {
	tools := []mcpTool{
		{"start", s.startProcess},
		{"wait", s.waitProcess},
		{"status", s.processStatus},
		{"logs", s.processLogs},
		{"cancel", s.cancelProcess},
		{"exec", s.executeCommand},
	}
	// A run the server joins lists only what it grants: a tool it
	// refuses would answer tool_not_allowed to every call. A run that
	// cannot be read now lists every tool, whose calls then say why.
	granted := func(string) bool { return true }
	if s.runID != "" && s.badRun == nil {
		if dir, err := lookState(s.env); err == nil {
			if r, err := dir.LoadRun(s.runID); err == nil {
				// A run with native checkpoints refuses every monitor
				// tool (checkpoints_incompatible): exec alone may run.
				granted = func(tool string) bool {
					return r.Allows(tool) && (!r.NativeCheckpoints || tool == state.ExecTool)
				}
			}
		}
	}
	for _, t := range tools {
		set, err := findSchema(t.command)
		if err != nil {
			return err
		}
		if !granted(set.Tool) {
			continue
		}
		in, out := toolSchema(set.ToolInput), toolSchema(set.ToolOutput)
		serve := t.serve
		server.AddTool(&mcp.Tool{Name: set.Tool, Description: set.Description, InputSchema: in, OutputSchema: out},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				runID, err := s.sessionRun()
				if err != nil {
					return s.toolError(err), nil
				}
				args := req.Params.Arguments
				if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
					args = json.RawMessage("{}")
				}
				if len(args) > protocol.MaxRequestBytes {
					// As a request body on stdin: refused before it takes a
					// slot, or reaches exec as an argument list too long.
					return s.toolError(protocol.Errorf(protocol.CodeInvalidRequest, "the arguments are larger than %d bytes", protocol.MaxRequestBytes).With("field", "arguments")), nil
				}
				if bytes.TrimSpace(args)[0] != '{' {
					// Named as MCP names them: there is no "request" here.
					return s.toolError(protocol.Errorf(protocol.CodeInvalidRequest, "the arguments must be a JSON object of the tool's fields, got %.20s", args).With("field", "arguments")), nil
				}
				// The SDK waits for the calls in progress before Run returns,
				// without ending their contexts: a server told to stop ends
				// them itself, so that a wait answers and an exec drains.
				ctx, cancel := context.WithCancel(ctx)
				defer cancel()
				defer context.AfterFunc(s.stopped, cancel)()
				v, err := serve(ctx, req, &globals{run: runID}, args)
				if err != nil {
					return s.toolError(err), nil
				}
				return toolResult(v)
			})
	}
	return nil
}

// toolSchema is a schema as a tool carries it: a plain map, without the
// document's $schema and $id (an MCP schema's dialect is 2020-12 unless
// it says otherwise, and some clients' validators load no other meta
// schemas).
func toolSchema(doc map[string]any) map[string]any {
	data, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	json.Unmarshal(data, &out)
	delete(out, "$schema")
	delete(out, "$id")
	return out
}

// toolResult is a response as structured content, and as text for
// clients that read only text.
func toolResult(v any) (*mcp.CallToolResult, error) {
	var buf bytes.Buffer
	if err := protocol.WriteJSON(&buf, v, false); err != nil {
		return nil, err
	}
	data := json.RawMessage(bytes.TrimSpace(buf.Bytes()))
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}, StructuredContent: data}, nil
}

// toolError is a typed error as a tool error: its text is the error object
// procmon prints, code first, advised in the session's terms
// (sessionAdvice). It carries no structured content, which would have to
// match the tool's output schema.
func (s *mcpSession) toolError(err error) *mcp.CallToolResult {
	pe := protocol.AsError(err)
	if !namesCommand(pe.Message) {
		s.mu.Lock()
		owned, runID := s.owned, s.runID
		s.mu.Unlock()
		if a := sessionAdvice(pe, owned, runID); a != "" {
			pe.Message += "; " + a
		}
	}
	data, _ := json.Marshal(pe.Object())
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}
}

// sessionAdvice is the step advise would add, in an MCP session's terms:
// its client acts through the tools, in the session's one run, and no
// tool lists monitors, makes or selects a run, enables monitors or
// settles a lost guardian. A step only a person can take says so. owned
// says the session made its run (and ends it, reconciling what lost its
// guardian, as the session ends); otherwise it joined the run given by
// --run or $PROCMON_RUN, which a restart joins again. runID is the
// session's run.
func sessionAdvice(pe *protocol.Error, owned bool, runID string) string {
	detail := func(k string) string {
		s, _ := pe.Details[k].(string)
		return s
	}
	otherRun := "a person restarts the server without --run and $PROCMON_RUN, or with another run"
	if owned {
		otherRun = "an MCP session acts in one run: start a new session (restart the server) for a new run"
	}
	switch pe.Code {
	case protocol.CodeRunEnded, protocol.CodeCommandBudgetExhausted:
		return otherRun
	case protocol.CodeUnknownRun:
		if owned || detail("run_id") != runID {
			// A monitor's own run, gone from the state directory.
			return ""
		}
		return "the server was started with --run or $PROCMON_RUN naming it: a person restarts the server without them, or with a run that exists"
	case protocol.CodeUnknownMonitor:
		return "give a monitor_id that a start in this session's run returned"
	case protocol.CodeMonitorsDisabled:
		if detail("run_id") != "" {
			return "the run froze the settings it was made with: once a person has enabled monitors (procmon configure --enable), " + otherRun
		}
		return "a person enables them with: procmon configure --enable"
	case protocol.CodeCheckpointsIncompat:
		return otherRun
	case protocol.CodeToolNotAllowed:
		if id := detail("monitor_id"); id != "" && detail("run_id") != "" {
			return "the run that started " + id + " decides which tools act on it"
		}
		return "the session's run does not grant it: " + otherRun
	case protocol.CodeWaitInterrupted:
		// Whether process_status is granted, and whether the session
		// goes on, is not known here.
		return ""
	case protocol.CodeNeedsReconciliation:
		switch detail("status") {
		case "", state.StatusNeedsReconciliation, state.StatusRunning, state.StatusSettling:
			id := detail("monitor_id")
			switch {
			case id == "":
				return ""
			case owned:
				// The monitor may be another run's, which the error
				// does not say.
				return "no tool settles a lost guardian: a person can with: procmon reconcile " + id + " (this session reconciles those of its own run as it ends)"
			}
			return "no tool settles a lost guardian, and this session joined its run, so it does not end it: a person must run: procmon reconcile " + id
		}
	}
	return advice(pe)
}

// callEnv is env for one call: no stdin.
func (s *mcpSession) callEnv() *Env {
	e := *s.env
	e.Stdin = nil
	e.StdinIsTerminal, e.StdoutIsTerminal = false, false
	return &e
}

func (s *mcpSession) startProcess(_ context.Context, _ *mcp.CallToolRequest, g *globals, args json.RawMessage) (any, error) {
	var req startRequest
	if err := protocol.DecodeStrict(args, &req); err != nil {
		return nil, err
	}
	resp, err := runStart(s.callEnv(), g, req)
	if err != nil {
		return nil, err
	}
	s.reapGuardian(resp.MonitorID)
	return resp, nil
}

// reapGuardian reaps a guardian this server launched once it exits: the
// server outlives its guardians, which are its children (started in their
// own session, they are otherwise detached from it). The pid cannot be
// reused meanwhile, since the child is not reaped before; its pidfd waits
// in the runtime poller, so no thread is parked per guardian.
func (s *mcpSession) reapGuardian(monitorID string) {
	dir, err := openState(s.env)
	if err != nil {
		return
	}
	m, err := dir.LoadMonitor(monitorID)
	if err != nil || m.GuardianPID <= 1 {
		return
	}
	pid := m.GuardianPID
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "guardian-pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return
	}
	go func() {
		defer f.Close()
		rc.Read(proc.PidfdReadable)
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	}()
}

func (s *mcpSession) waitProcess(ctx context.Context, call *mcp.CallToolRequest, _ *globals, args json.RawMessage) (any, error) {
	var req waitRequest
	if err := protocol.DecodeStrict(args, &req); err != nil {
		return nil, err
	}
	if len(req.Condition) == 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidRequest, `field "condition" is required: {"kind": "output", "text": ...}, {"kind": "exit"} or {"kind": "file", "path": ...}`).With("field", "condition")
	}
	cond, err := wait.ParseCondition(req.Condition)
	if err != nil {
		return nil, err
	}
	// The client's cancellation ends the wait (ctx), never the service.
	what := cond.Kind
	if cond.Kind == wait.KindOutput {
		what = fmt.Sprintf("output %q", cond.Text)
	} else if cond.Kind == wait.KindFile {
		what = "file " + cond.Path
	}
	defer reportProgress(ctx, call, func(secs float64) string {
		return fmt.Sprintf("waiting %.0f s on %s for %s", secs, req.MonitorID, what)
	})()
	v, err := runWait(ctx, s.callEnv(), req.MonitorID, cond, req.TimeoutSeconds, nil)
	if err == nil || s.stopped.Err() == nil {
		return v, err
	}
	s.mu.Lock()
	owned := s.owned
	s.mu.Unlock()
	if pe := protocol.AsError(err); pe.Code == protocol.CodeWaitInterrupted && owned {
		// The service does not keep running, as a wait's interruption
		// says: the server stops, and ends the run it made.
		pe.Message = strings.Replace(pe.Message, serviceRunsOn, "the server is stopping, and ends its session's run, which drains the service", 1)
		return nil, pe
	}
	return v, err
}

// reportProgress tells a client that asked for progress, at once and then
// every interval, that the call is still at work, with say's message of
// the seconds it has taken, until the returned function is called. A
// client may keep a call alive on these (the TypeScript SDK's
// resetTimeoutOnProgress), where its request timeout would cancel it.
func reportProgress(ctx context.Context, call *mcp.CallToolRequest, say func(secs float64) string) (stop func()) {
	token := call.Params.GetProgressToken()
	if token == nil {
		return func() {}
	}
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		start := time.Now()
		tick := time.NewTicker(mcpProgressInterval)
		defer tick.Stop()
		for {
			elapsed := time.Since(start)
			call.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      elapsed.Seconds(),
				Message:       say(elapsed.Seconds()),
			})
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	// The last notification goes before the call's answer, never after
	// it: a client takes a token it has closed for no token of its own.
	return func() { close(done); <-ended }
}

func (s *mcpSession) processStatus(_ context.Context, _ *mcp.CallToolRequest, _ *globals, args json.RawMessage) (any, error) {
	var req statusRequest
	if err := protocol.DecodeStrict(args, &req); err != nil {
		return nil, err
	}
	if req.MonitorID == nil {
		return nil, protocol.Errorf(protocol.CodeInvalidRequest, `field "monitor_id" is required`).With("field", "monitor_id")
	}
	return runStatus(s.callEnv(), *req.MonitorID)
}

func (s *mcpSession) processLogs(_ context.Context, _ *mcp.CallToolRequest, _ *globals, args json.RawMessage) (any, error) {
	var req logsRequest
	if err := protocol.DecodeStrict(args, &req); err != nil {
		return nil, err
	}
	return runLogs(s.callEnv(), req)
}

func (s *mcpSession) cancelProcess(_ context.Context, _ *mcp.CallToolRequest, _ *globals, args json.RawMessage) (any, error) {
	var req drainRequest
	if err := protocol.DecodeStrict(args, &req); err != nil {
		return nil, err
	}
	if req.MonitorID == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidRequest, `field "monitor_id" is required`).With("field", "monitor_id")
	}
	graceMs, err := graceMillis(req.GraceSeconds)
	if err != nil {
		return nil, err
	}
	return runCancel(s.callEnv(), req.MonitorID, graceMs)
}

// executeCommand runs "procmon exec" as a child of the server, rather
// than proc.Exec in the server itself: a command's custody makes its
// process a child subreaper, and the drain's verdict that nothing of the
// command is left rests on that process having no other child at all.
// The server has other children (the guardians it launched, which it
// reaps) and would inherit the orphans of any guardian that died, so the
// command is held by a process of its own, running the same code path
// as the command line. The client's cancellation is its SIGTERM: it
// drains the command and reports.
func (s *mcpSession) executeCommand(ctx context.Context, call *mcp.CallToolRequest, g *globals, args json.RawMessage) (any, error) {
	var req execRequest
	if err := protocol.DecodeStrict(args, &req); err != nil {
		return nil, err
	}
	if err := checkExecRequest(&req); err != nil {
		return nil, err
	}
	// The command runs where the server runs unless it names a directory.
	if req.Cwd == "" {
		wd, err := s.env.Getwd()
		if err != nil {
			return nil, protocol.Errorf(protocol.CodeExecFailed, "current directory: %w", err)
		}
		req.Cwd = wd
	}
	dir, err := openState(s.env)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInternal, "find own executable: %w", err)
	}
	body, err := json.Marshal(map[string]any{"request": req})
	if err != nil {
		return nil, err
	}
	c := exec.Command(exe, "exec", "--run", g.run)
	c.Args[0] = "procmon" // as a person would run it (and a test binary dispatches on it)
	c.Env = append(s.env.Environ(), "PROCMON_STATE_DIR="+dir.Path)
	c.Stdin = bytes.NewReader(body)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, s.env.Stderr
	// A server that dies (SIGKILL) ends the session as a client's
	// cancellation does: the command is sent SIGTERM and drained, where
	// it used to run on to its deadline. The signal comes when the thread
	// that started the command ends, so this goroutine keeps its thread
	// until the command has exited.
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.Start(); err != nil {
		return nil, protocol.Errorf(protocol.CodeInternal, "run procmon exec: %w", err)
	}
	// Not reaped before the Wait below: its start time can be read.
	ticks, _ := proc.StartTicks(c.Process.Pid)
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	// Not the command line: a secret in it is redacted from the answer,
	// and a notification is no place to redact it.
	defer reportProgress(ctx, call, func(secs float64) string {
		return fmt.Sprintf("running %.0f s", secs)
	})()
	select {
	case err = <-exited:
	case <-ctx.Done():
		c.Process.Signal(syscall.SIGTERM)
		err = <-exited
	}
	var answer struct {
		Error *struct {
			Code    protocol.Code              `json:"code"`
			Message string                     `json:"message"`
			Details map[string]json.RawMessage `json:"details"`
		} `json:"error"`
	}
	if jerr := json.Unmarshal(out.Bytes(), &answer); jerr != nil {
		return nil, protocol.Errorf(protocol.CodeInternal, "procmon exec answered no JSON (%v)%s: %s", err, sweepExec(dir, c.Process.Pid, ticks), bytes.TrimSpace(out.Bytes()))
	}
	if answer.Error != nil {
		pe := &protocol.Error{Code: answer.Error.Code, Message: answer.Error.Message, Details: rawDetails(answer.Error.Details)}
		// The procmon exec that answered advised a person at a command
		// line: the session advises in its own terms (toolError).
		if a := advice(pe); a != "" {
			pe.Message = strings.TrimSuffix(pe.Message, "; "+a)
		}
		// Nor does a client type a command line (the argv's usage line).
		if i := strings.Index(pe.Message, "; usage: procmon "); i >= 0 {
			pe.Message = pe.Message[:i]
		}
		return nil, pe
	}
	return json.RawMessage(bytes.TrimSpace(out.Bytes())), nil
}

// rawDetails keeps an error's details as procmon exec wrote them: a
// string as a string, which advice reads, and anything else as its JSON,
// so that the result a wait_interrupted carries keeps its fixed key
// order (decoded into maps, it was written again sorted).
func rawDetails(in map[string]json.RawMessage) map[string]any {
	if in == nil {
		return nil
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		var s string
		if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
			out[k] = s
		} else {
			out[k] = v
		}
	}
	return out
}

// sweepExec stops what the command of a procmon exec that died
// unanswered (killed, say) left, as the next list would, and says what
// became of it. Its command died with it, but not what the command
// started: that ran on until the session's end.
func sweepExec(dir *state.Dir, pid int, ticks uint64) string {
	if ticks == 0 {
		return ""
	}
	switch found, left := proc.SweepTracesOf(dir, pid, ticks); {
	case found == 0:
		return ""
	case left == 0:
		return "; what its command started was stopped"
	}
	return "; what its command started may still run, and is stopped by the session's end or a procmon list"
}
