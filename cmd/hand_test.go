//go:build linux

package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"procmon/internal/protocol"
	"procmon/internal/redact"
	"procmon/internal/schema"
	"procmon/internal/state"
)

func TestParseSeconds(t *testing.T) {
	good := map[string]int64{"0": 0, "30": 30, "30s": 30, "2m": 120, "1h": 3600, "1m30s": 90, " 5 ": 5, "1500ms": 0, "1h0m5s": 3605}
	delete(good, "1500ms") // not whole seconds: refused below
	for in, want := range good {
		got, err := parseSeconds(in)
		if err != nil || got != want {
			t.Errorf("parseSeconds(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":             "empty duration",
		"1.5s":         "not a whole number of seconds",
		"1500ms":       "not a whole number of seconds",
		"5x":           "unknown unit",
		"1.5":          "a plain number is whole seconds (like 90); give a fraction with a unit (like 1.5m)",
		"1e3":          "a plain number is whole seconds",
		"2.5.5s":       "unknown unit",
		"soon":         "not a duration",
		"30s1m":        "units out of order or given twice",
		"1m1m":         "units out of order or given twice",
		"2m500ms500ms": "units out of order or given twice",
		"1h.h":         "not a duration",
		"s":            "not a duration",
		".s":           "not a duration",
		"1h.s":         "not a duration",
		"9999999h1h":   "units out of order or given twice",
		// Well formed, past what a Go duration holds.
		"2562048h": "over the limit of 3153600000 seconds (a hundred years)",
	}
	for in, want := range bad {
		if _, err := parseSeconds(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseSeconds(%q) = %v; want an error saying %q", in, err, want)
		}
	}
	for n, want := range map[int64]string{0: "0", 5: "5s", 10: "10s", 60: "1m", 90: "1m30s", 3600: "1h", 5400: "1h30m"} {
		if got := (secondsFlag{&n}).String(); got != want {
			t.Errorf("seconds %d shown as %q, want %q", n, got, want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for argv, want := range map[string]string{
		"python3\x00-m\x00http.server":  "python3 -m http.server",
		"sh\x00-c\x00echo $HOME; ls":    `sh -c 'echo $HOME; ls'`,
		"echo\x00it's":                  `echo 'it'\''s'`,
		"printf\x00":                    "printf ''",
		"env\x00A=b\x00./x\x00--flag=1": "env A=b ./x --flag=1",
		// Control characters and bytes that are no UTF-8 are escaped as
		// bash reads $'...', so they never reach the terminal.
		"printf\x00a\tb\n":        `printf $'a\tb\n'`,
		"echo\x00\x1b[2Jit's\\":   `echo $'\e[2Jit\'s\\'`,
		"echo\x00del\x7f\u0085c1": `echo $'del\x7f\u0085c1'`,
		"cat\x00\xffbin":          `cat $'\xffbin'`,
		"echo\x00\u00e9t\u00e9":   "echo 'été'",
		// A formatting character would not show as itself either.
		"echo\x00web\u200b\U000e0041": `echo $'web\u200b\U000e0041'`,
	} {
		if got := shellQuote(strings.Split(argv, "\x00")); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", argv, got, want)
		}
	}
}

// TestStartRefusesNames: a name start cannot take back on the command
// line, or that would not show as itself, is refused, by flag and by
// request alike, before anything is started.
func TestStartRefusesNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if status, _, raw := runIn(t, dir, "", "configure", "--enable"); status != 0 {
		t.Fatalf("configure --enable: exit %d %s", status, raw)
	}
	var cases []refusal
	for why, name := range map[string]string{
		"empty":         "",
		"too long":      strings.Repeat("x", 65),
		"long in utf8":  strings.Repeat("\u00e9", 33),
		"not utf8":      "caf\xe9",
		"tab":           "tab\there",
		"newline":       "two\nlines",
		"zero width":    "web\u200b",
		"override":      "\u202egnp.exe",
		"a token":       "ghp_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
		"escape":        "evil\x1b[2J\x1b[31mRED",
		"nul":           "a\x00b",
		"del":           "a\x7f",
		"c1":            "a\u0085b",
		"id prefix":     "m_web",
		"a flag":        "--all",
		"a short flag":  "-f",
		"spaces only":   "   ",
		"leading space": " web",
		"trailing nbsp": "web\u00a0",
	} {
		cases = append(cases, refusal{why + " by flag", "", []string{"start", "--name", name, "true"}, "invalid_request", 2, `"field":"name"`})
		if !utf8.ValidString(name) {
			continue // JSON carries text only: decoded, such a byte is U+FFFD
		}
		request, _ := json.Marshal(map[string]any{"request": map[string]any{"argv": []string{"true"}, "name": name}})
		cases = append(cases, refusal{why + " in the request", string(request), []string{"start"}, "invalid_request", 2, `"field":"name"`})
	}
	checkRefusals(t, dir, cases, nil)
	if status, resp, raw := runIn(t, dir, "", "list"); status != 0 || len(resp["monitors"].([]any)) != 0 {
		t.Fatalf("after the refused starts: exit %d %s; want no monitor", status, raw)
	}
	if err := checkName(strings.Repeat("\u00e9", 32)); err != nil {
		t.Errorf("a name of 64 bytes: %v", err)
	}
	for _, name := range []string{"web", "my api", "m", "m-web", "api_m_", "web-", "caf\u00e9", "\u6587"} {
		if err := checkName(name); err != nil {
			t.Errorf("checkName(%q) = %v, want nil", name, err)
		}
	}
}

// TestNameSchemaAgreesWithStart holds the start request's schema for
// name to what start takes (for names whose bytes and characters count
// alike: the schema counts characters).
func TestNameSchemaAgreesWithStart(t *testing.T) {
	compiled := requestSchema(t, "start")
	names := []string{}
	for r := rune(0); r <= 0xffff; r++ {
		if unicode.Is(unicode.Cf, r) {
			names = append(names, "a"+string(r)+"b")
		}
		if unicode.IsSpace(r) {
			names = append(names, string(r)+"web", "web"+string(r), "my"+string(r)+"web")
		}
	}
	for _, name := range append(names, "web", "my api", "m", "m-web", "api_m_", "caf\u00e9", strings.Repeat("x", 64),
		"", strings.Repeat("x", 65), "tab\there", "a\nb", "\x1b[2J", "a\x00", "a\x7f", "a\u0085", "a\u009f", "m_web", "m_", "--all", "-f", "-", "web\u200b", "\u202egnp.exe", "\ufeffweb", "soft\u00adhyphen", "a\u2066b", "ghp_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ") {
		req, _ := json.Marshal(map[string]any{"argv": []string{"true"}, "name": name})
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(req))
		if err != nil {
			t.Fatal(err)
		}
		byStart, bySchema := checkName(name) == nil, compiled.Validate(v) == nil
		if byStart != bySchema && !looksLikeCredential(name) {
			t.Errorf("name %q: start takes it %v, the schema %v", name, byStart, bySchema)
		}
	}
}

// TestSecretsSchemaTakesWhatStartTakes: procmon counts a secret's
// bytes, a schema can count only its characters; a client that checks a
// request against the schema first must not be refused a secret that
// procmon takes ("éééé" and "😀😀" are 8 bytes).
func TestSecretsSchemaTakesWhatStartTakes(t *testing.T) {
	compiled := requestSchema(t, "start")
	for _, secret := range []string{"abcdefgh", "\u00e9\u00e9\u00e9\u00e9", "\U0001F600\U0001F600", "\u6587\u6587\u6587", "a\u00e9\u00e9\u00e9b"} {
		byStart := len(secret) >= redact.MinSecretLen // as start counts
		req, _ := json.Marshal(map[string]any{"argv": []string{"true"}, "secrets": []string{secret}})
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(req))
		if err != nil {
			t.Fatal(err)
		}
		if err := compiled.Validate(v); byStart && err != nil {
			t.Errorf("secret of %d bytes: start takes it, the schema refuses it: %v", len(secret), err)
		}
	}
}

// requestSchema compiles the request schema of a command.
func requestSchema(t *testing.T, command string) *jsonschema.Schema {
	t.Helper()
	sets, err := schemaSets()
	if err != nil {
		t.Fatal(err)
	}
	var request schema.Schema
	for _, set := range sets {
		if set.Command == command {
			request = set.Request
		}
	}
	data, err := json.Marshal(request)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(command+".json", doc); err != nil {
		t.Fatal(err)
	}
	compiled, err := c.Compile(command + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return compiled
}

// TestViewsEscapeNames: a record may hold a name start no longer takes;
// list, status and the start line show it escaped, never as raw control
// characters.
func TestViewsEscapeNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	runIn(t, dir, "", "configure", "--enable")
	names := map[string]string{
		"m_0000000000000000000000001": "tab\there\nnl",
		"m_0000000000000000000000002": "evil\x1b[2J\x1b[31mRED",
		"m_0000000000000000000000003": "c1\u009b31m",
		"m_0000000000000000000000004": "del\x7f",
	}
	for id, name := range names {
		saveMonitor(t, dir, id, state.DefaultRun, name, 100, false)
	}
	shown := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if status := Run(append([]string{"-o", "text"}, args...), testEnv(dir, &out, &errOut)); status != 0 {
			t.Fatalf("%v: exit %d: %s", args, status, errOut.String())
		}
		return out.String()
	}
	list := shown("list")
	if rows := strings.Count(list, "\n"); rows != 1+len(names) {
		t.Errorf("list has %d lines, want a header and %d rows:\n%s", rows, len(names), list)
	}
	for _, want := range []string{`$'tab\there\nnl'`, `$'evil\e[2J\e[31mRED'`, `$'c1\u009b31m'`, `$'del\x7f'`} {
		if !strings.Contains(list, want) {
			t.Errorf("list does not show %s:\n%s", want, list)
		}
	}
	views := []string{list}
	for id := range names {
		views = append(views, shown("status", id))
	}
	var b strings.Builder
	viewStart(&b, palette{}, &startResponse{MonitorID: "m_0000000000000000000000002", Name: names["m_0000000000000000000000002"], Argv: []string{"printf", "\x1b]0;title\x07"}})
	views = append(views, b.String())
	for _, v := range views {
		if !utf8.ValidString(v) || strings.IndexFunc(strings.ReplaceAll(v, "\n", ""), unicode.IsControl) >= 0 {
			t.Errorf("a view holds raw control characters or bytes that are no UTF-8: %q", v)
		}
	}
}

func TestUniquePrefixes(t *testing.T) {
	ids := []string{"m_aaaaaaaa11", "m_aaaaaaaa12", "m_bbbbbbbbbbbb", "m_c"}
	got := uniquePrefixes(ids, shortIDLen)
	want := []string{"m_aaaaaaaa11", "m_aaaaaaaa12", "m_bbbbbbbb", "m_c"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("uniquePrefixes = %v, want %v", got, want)
	}
}

// saveMonitor stores a record for the resolution tests; no process is
// behind it.
func saveMonitor(t *testing.T, stateDir, id, run, name string, started int64, ended bool) {
	t.Helper()
	d, err := state.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	m := &state.Monitor{
		MonitorID: id, RunID: run, Name: name, Argv: []string{"sleep", name}, Cwd: "/w/" + name, StartedAtMs: started, CommandOrdinal: started,
		PID: 4242, PGID: 4242, GuardianPID: 1 << 22, BootID: state.BootID(),
		Phase: state.PhaseRunning, OwnershipExpiresAtMs: 1 << 62,
	}
	if err := os.MkdirAll(d.MonitorDir(id), 0o700); err != nil {
		t.Fatal(err)
	}
	if ended {
		m.Receipt = &state.Receipt{Status: state.StatusCancelled, Reason: "cancel", FinishedAtMs: started + 1}
	}
	if err := d.SaveMonitor(m, false); err != nil {
		t.Fatal(err)
	}
}

func TestResolveMonitorArg(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	env := testEnv(dir, &bytes.Buffer{}, &bytes.Buffer{})
	for _, id := range []string{"m_aaaa000000000000000000000a", "m_aaaa000000000000000000000b", "m_bbbb000000000000000000000c"} {
		if err := os.MkdirAll(filepath.Join(dir, "monitors", id), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct{ arg, want, code string }{
		{"m_bb", "m_bbbb000000000000000000000c", ""},
		{"bbbb", "bbbb", ""}, // no m_: no id, as given (a name, to monitorArgs)
		{"m_aaaa000000000000000000000b", "m_aaaa000000000000000000000b", ""},
		{"m_aaaa", "", "invalid_request"}, // two ids start so
		{"m_zz", "", "unknown_monitor"},   // an id's start that matches none
		{"zz", "zz", ""},                  // no match, and maybe no id: as given, for the command to refuse
		{"../etc", "../etc", ""},          // no id at all: likewise
		{"m_", "m_", ""},
	}
	for _, tc := range cases {
		got, err := resolveMonitorArg(env, tc.arg)
		if tc.code == "unknown_monitor" {
			if !protocol.HasCode(err, protocol.CodeUnknownMonitor) {
				t.Errorf("resolveMonitorArg(%q) = %q, %v; want unknown_monitor", tc.arg, got, err)
			}
			continue
		}
		if tc.code != "" {
			if !protocol.HasCode(err, protocol.Code(tc.code)) || !strings.Contains(err.Error(), "m_aaaa000000000000000000000a") {
				t.Errorf("resolveMonitorArg(%q) = %q, %v; want %s listing the candidates", tc.arg, got, err, tc.code)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("resolveMonitorArg(%q) = %q, %v; want %q", tc.arg, got, err, tc.want)
		}
	}
}

func TestResolveName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	env := testEnv(dir, &bytes.Buffer{}, &bytes.Buffer{})
	g := &globals{}
	const (
		webOld  = "m_0000000000000000000000001"
		webLive = "m_0000000000000000000000002"
		api1    = "m_0000000000000000000000003"
		api2    = "m_0000000000000000000000004"
		gone1   = "m_0000000000000000000000005"
		gone2   = "m_0000000000000000000000006"
		other   = "m_0000000000000000000000007"
	)
	saveMonitor(t, dir, webOld, state.DefaultRun, "web", 100, true)
	saveMonitor(t, dir, webLive, state.DefaultRun, "web", 200, false)
	saveMonitor(t, dir, api1, state.DefaultRun, "api", 300, false)
	saveMonitor(t, dir, api2, state.DefaultRun, "api", 400, false)
	saveMonitor(t, dir, gone2, state.DefaultRun, "gone", 600, true)
	saveMonitor(t, dir, gone1, state.DefaultRun, "gone", 500, true)
	saveMonitor(t, dir, other, "r_elsewhere00000000000000000", "solo", 700, false)

	for name, want := range map[string]string{"web": webLive, "gone": gone2} {
		if got, err := resolveName(env, g, name); err != nil || got != want {
			t.Errorf("--name %s = %q, %v; want %q", name, got, err, want)
		}
	}
	_, err := resolveName(env, g, "api")
	if !protocol.HasCode(err, protocol.CodeInvalidRequest) || !strings.Contains(err.Error(), api1) || !strings.Contains(err.Error(), api2) {
		t.Errorf("--name api = %v; want invalid_request naming %s and %s", err, api1, api2)
	}
	if _, err := resolveName(env, g, "solo"); !protocol.HasCode(err, protocol.CodeUnknownMonitor) {
		t.Errorf("--name solo of another run = %v; want unknown_monitor", err)
	}
	if got, err := resolveName(env, &globals{run: "r_elsewhere00000000000000000"}, "solo"); err != nil || got != other {
		t.Errorf("--run r_elsewhere --name solo = %q, %v; want %q", got, err, other)
	}
}

// TestArgumentsAreIDsOrNames: an argument that starts with m_ is an id
// or the start of one, any other is a name, resolved as --name is; the
// start of an id without its m_ never picks a monitor.
func TestArgumentsAreIDsOrNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	env := testEnv(dir, &bytes.Buffer{}, &bytes.Buffer{})
	g := &globals{}
	const (
		xeu   = "m_xeueoye2000000000000000001" // unnamed
		mmm   = "m_mmmm00000000000000000000002"
		web   = "m_0000000000000000000000003"
		named = "m_0000000000000000000000004" // named x
	)
	saveMonitor(t, dir, xeu, state.DefaultRun, "", 100, false)
	saveMonitor(t, dir, mmm, state.DefaultRun, "", 200, false)
	saveMonitor(t, dir, web, state.DefaultRun, "web", 300, false)

	for arg, want := range map[string]string{"web": web, "m_xeu": xeu, "m_m": mmm, xeu: xeu} {
		if got, err := monitorArgs(env, g, []string{arg}, ""); err != nil || len(got) != 1 || got[0] != want {
			t.Errorf("argument %q = %v, %v; want %s", arg, got, err, want)
		}
	}
	for _, arg := range []string{"x", "xeu", "m", "mmmm", "3kq9"} {
		got, err := monitorArgs(env, g, []string{arg}, "")
		if !protocol.HasCode(err, protocol.CodeUnknownMonitor) || !strings.Contains(err.Error(), `named "`+arg+`"`) {
			t.Errorf("argument %q = %v, %v; want unknown_monitor: no monitor named %q", arg, got, err, arg)
		}
	}
	if _, err := monitorArgs(env, g, []string{"xeu"}, ""); err == nil || !strings.Contains(err.Error(), "m_xeu") {
		t.Errorf("argument xeu: %v; want a hint that ids are given with their m_", err)
	}
	if _, err := monitorArgs(env, g, []string{""}, ""); !protocol.HasCode(err, protocol.CodeInvalidRequest) {
		t.Errorf("an empty argument: %v; want invalid_request, never the unnamed monitor", err)
	}

	saveMonitor(t, dir, named, state.DefaultRun, "x", 400, false)
	if got, err := monitorArgs(env, g, []string{"x", "web"}, ""); err != nil || strings.Join(got, " ") != named+" "+web {
		t.Errorf("arguments x web = %v, %v; want %s %s", got, err, named, web)
	}
	if got, err := oneMonitorArg(env, g, []string{"x"}, "web"); err == nil {
		t.Errorf("an argument and --name: %v; want refused", got)
	}
	// One monitor named twice, by its name and its id or by its id and a
	// prefix of it, is one monitor, in the order first named: cancel gave
	// a receipt for each.
	if got, err := monitorArgs(env, g, []string{"web", "m_xeu", web, "x", xeu}, "web"); err != nil || strings.Join(got, " ") != web+" "+xeu+" "+named {
		t.Errorf("web, m_xeu, web's id, x, xeu's id and --name web = %v, %v; want %s %s %s", got, err, web, xeu, named)
	}
}

// TestCancelOfANameCancelsOnlyThatName: cancel x, with no monitor named
// x, touches no monitor whose id starts m_x.
func TestCancelOfANameCancelsOnlyThatName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	runIn(t, dir, "", "configure", "--enable")
	const xeu = "m_xeueoye2000000000000000001"
	saveMonitor(t, dir, xeu, state.DefaultRun, "", 100, false)
	status, resp, raw := runIn(t, dir, "", "cancel", "x")
	if status != 4 || errorCode(resp) != "unknown_monitor" || !strings.Contains(raw, `is named \"x\"`) {
		t.Fatalf("cancel x: exit %d %s; want unknown_monitor: no monitor named x", status, raw)
	}
	d, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := d.LoadMonitor(xeu); err != nil || m.Receipt != nil {
		t.Fatalf("cancel x touched %s: %+v, %v", xeu, m, err)
	}
}

// TestJSONRequestsKeepExactIDs checks that an id prefix read from a JSON
// request is never resolved: only the command line is for people.
func TestJSONRequestsKeepExactIDs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	saveMonitor(t, dir, "m_0000000000000000000000001", state.DefaultRun, "web", 100, true)
	var out bytes.Buffer
	env := testEnv(dir, &out, &bytes.Buffer{})
	if status := Run([]string{"configure", "--enable"}, env); status != 0 {
		t.Fatalf("configure: exit %d: %s", status, out.String())
	}
	out.Reset()
	env.Stdin = strings.NewReader(`{"request": {"monitor_id": "m_00000"}}`)
	if status := Run([]string{"status"}, env); status != 2 || !strings.Contains(out.String(), `"code":"invalid_request"`) {
		t.Errorf("status with a prefix in the request: exit %d, %s; want invalid_request", status, out.String())
	}
	out.Reset()
	env.Stdin = strings.NewReader("")
	if status := Run([]string{"status", "m_00000"}, env); status != 0 || !strings.Contains(out.String(), `"monitor_id":"m_0000000000000000000000001"`) {
		t.Errorf("status with a prefix argument: exit %d, %s; want the monitor", status, out.String())
	}
}

// TestConfigureHelpShowsTheExample keeps the body in configure --help the
// one --enable stores.
func TestConfigureHelpShowsTheExample(t *testing.T) {
	c := newConfigureCmd(testEnv(t.TempDir(), &bytes.Buffer{}, &bytes.Buffer{}), &globals{})
	start := strings.Index(c.Long, `{"sandbox"`)
	end := strings.Index(c.Long, "}}") + 2
	if start < 0 || end < start {
		t.Fatal("configure --help shows no settings body")
	}
	var shown state.Settings
	if err := protocol.DecodeStrict([]byte(c.Long[start:end]), &shown); err != nil {
		t.Fatalf("the body in configure --help does not decode: %v", err)
	}
	got, _ := json.Marshal(shown)
	want, _ := json.Marshal(state.ExampleSettings())
	if !bytes.Equal(got, want) {
		t.Errorf("configure --help shows %s; --enable stores %s", got, want)
	}
}

// TestEmptyListSaysWhyNoStart: where a start would be refused (monitors
// disabled, a run that does not allow start, has ended or has used its
// slots), an empty list on a terminal says why, with the advice the
// start's refusal gives (the command that enables them, a new run),
// instead of advising a start that would be refused. The JSON is the
// empty listing, as before.
func TestEmptyListSaysWhyNoStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	// lastLine is the line the view ends with, under the table's header.
	lastLine := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if status := Run(append([]string{"list", "-o", "text"}, args...), testEnv(dir, &out, &errOut)); status != 0 {
			t.Fatalf("list -o text %v: exit %d %s %s", args, status, out.String(), errOut.String())
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		return lines[len(lines)-1]
	}
	// startRefusal is what a start in the run is refused with, which the
	// view must say in its own words; nothing is started.
	startRefusedAs := func(code string, args ...string) string {
		t.Helper()
		status, resp, raw := runIn(t, dir, "", append([]string{"start"}, append(args, "--", "sleep", "1")...)...)
		if errorCode(resp) != code || status != 3 {
			t.Fatalf("start %v: exit %d %s; want %s", args, status, raw, code)
		}
		return resp["error"].(map[string]any)["message"].(string)
	}
	startRefusal := func(args ...string) string { return startRefusedAs("monitors_disabled", args...) }
	checkView := func(why, run string, refusal, advice string) {
		t.Helper()
		if !strings.HasSuffix(refusal, advice) {
			t.Fatalf("%s: start says %q, want its advice %q", why, refusal, advice)
		}
		args := []string{"--run", run}
		for _, list := range [][]string{args, append(args, "--all-runs")} {
			if got, want := lastLine(list...), "no monitors: "+refusal; got != want {
				t.Errorf("%s: list %v shows %q, want %q", why, list, got, want)
			}
		}
		want := `{"run_id":"` + run + `","monitors":[]}` + "\n"
		if status, _, raw := runIn(t, dir, "", append([]string{"list"}, args...)...); status != 0 || raw != want {
			t.Errorf("%s: list %v answered exit %d %s, want %s", why, args, status, raw, want)
		}
	}

	enable := "enable them with: procmon configure --enable"
	checkView("never configured", state.DefaultRun, startRefusal(), enable)
	off := `{"sandbox": {"mode": "host", "process_monitor": false}}`
	if status, _, raw := runIn(t, dir, off, "configure"); status != 0 {
		t.Fatalf("configure off: exit %d %s", status, raw)
	}
	checkView("configured off", state.DefaultRun, startRefusal(), enable)
	// A run made while they were off keeps them off, whatever is stored
	// later.
	status, resp, raw := runIn(t, dir, "", "run", "new")
	if status != 0 {
		t.Fatalf("run new: exit %d %s", status, raw)
	}
	frozen := resp["run_id"].(string)
	if status, _, raw := runIn(t, dir, "", "configure", "--enable"); status != 0 {
		t.Fatalf("configure --enable: exit %d %s", status, raw)
	}
	checkView("run made while off", frozen, startRefusal("--run", frozen), "create a new run with procmon run new, and select it with --run ID or PROCMON_RUN=ID")

	// Enabled, an empty list still advises a start.
	if got, want := lastLine(), "no monitors; start one with: procmon start COMMAND [ARGS...]"; got != want {
		t.Errorf("enabled: list shows %q, want %q", got, want)
	}

	// Nor is a start advised in a run that does not allow one, or that
	// has ended.
	newRun := func(args ...string) string {
		t.Helper()
		status, resp, raw := runIn(t, dir, "", append([]string{"run", "new"}, args...)...)
		if status != 0 {
			t.Fatalf("run new %v: exit %d %s", args, status, raw)
		}
		return resp["run_id"].(string)
	}
	execOnly := newRun("--tools", "execute_command")
	checkView("run without start", execOnly, startRefusedAs("tool_not_allowed", "--run", execOnly), "create a run that allows it with procmon run new (without --tools, every tool), and select it with --run ID or PROCMON_RUN=ID")
	ended := newRun()
	if status, _, raw := runIn(t, dir, "", "run", "end", ended); status != 0 {
		t.Fatalf("run end: exit %d %s", status, raw)
	}
	checkView("ended run", ended, startRefusedAs("run_ended", "--run", ended), "create a new one with procmon run new, and select it with --run ID or PROCMON_RUN=ID")

	// Nor in a run that has used its slots (an exec's, which list does
	// not show, taken here directly).
	limited := `{"sandbox": {"mode": "host", "process_monitor": true,
		"work_duration": {"protocol": "forge-work-duration-v2", "timeout_seconds": null},
		"monitor_owner_grace_seconds": 30, "monitor_timeout_seconds": null,
		"max_output_bytes": 1000000, "command_limit": 1}}`
	if status, _, raw := runIn(t, dir, limited, "configure"); status != 0 {
		t.Fatalf("configure a limit of 1: exit %d %s", status, raw)
	}
	spent := newRun()
	limit := int64(1)
	if _, err := (&state.Dir{Path: dir}).TakeOrdinal(spent, &limit, nil); err != nil {
		t.Fatal(err)
	}
	refusal := startRefusedAs("command_budget_exhausted", "--run", spent)
	checkView("run out of slots", spent, refusal, refusal[strings.Index(refusal, ";"):])
}
