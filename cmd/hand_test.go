//go:build linux

package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

func TestParseSeconds(t *testing.T) {
	good := map[string]int64{"0": 0, "30": 30, "30s": 30, "2m": 120, "1h": 3600, "1m30s": 90, " 5 ": 5, "1500ms": 0}
	delete(good, "1500ms") // not whole seconds: refused below
	for in, want := range good {
		got, err := parseSeconds(in)
		if err != nil || got != want {
			t.Errorf("parseSeconds(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":       "empty duration",
		"1.5s":   "not a whole number of seconds",
		"1500ms": "not a whole number of seconds",
		"5x":     "unknown unit",
		"soon":   "not a duration",
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
	} {
		if got := shellQuote(strings.Split(argv, "\x00")); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", argv, got, want)
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
		MonitorID: id, RunID: run, Name: name, Argv: []string{"sleep", name}, StartedAtMs: started,
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
		{"bbbb", "m_bbbb000000000000000000000c", ""},
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
