package wait

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"procmon/internal/protocol"
)

// wantRefusal fails unless err is invalid_condition naming field (when
// field is not "-") with a message containing every fragment.
func wantRefusal(t *testing.T, err error, field string, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want invalid_condition naming %q", field)
	}
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidCondition {
		t.Fatalf("error %v (%T); want code %s", err, err, protocol.CodeInvalidCondition)
	}
	if field != "-" && pe.Details["field"] != field {
		t.Errorf("error %q names field %v; want %q", err, pe.Details["field"], field)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not mention %q", err, f)
		}
	}
}

func TestParseConditionAccepts(t *testing.T) {
	digest := strings.Repeat("0a", 32)
	cases := []struct {
		raw  string
		want Condition
	}{
		{`{"kind":"exit"}`, Condition{Kind: "exit"}},
		{` { "kind" : "output", "text" : "Listening" } `, Condition{Kind: "output", Text: "Listening"}},
		{`{"text":"caf\u00e9 \ud83d\ude00 \"q\"\n","kind":"output"}`, Condition{Kind: "output", Text: "café 😀 \"q\"\n"}},
		{`{"kind":"output","text":"naïve"}`, Condition{Kind: "output", Text: "naïve"}},
		{`{"kind":"file","path":"ready.json"}`, Condition{Kind: "file", Path: "ready.json"}},
		{`{"kind":"file","path":"run/ready.json","sha256":"` + digest + `"}`, Condition{Kind: "file", Path: "run/ready.json", SHA256: digest}},
	}
	for _, tc := range cases {
		got, err := ParseCondition(json.RawMessage(tc.raw))
		if err != nil {
			t.Errorf("ParseCondition(%s): %v", tc.raw, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseCondition(%s) = %+v; want %+v", tc.raw, got, tc.want)
		}
	}
}

func TestParseConditionRefuses(t *testing.T) {
	kinds := []string{`"output"`, `"exit"`, `"file"`}
	cases := []struct {
		name      string
		raw       string
		field     string
		fragments []string
	}{
		{"a string", `"exit"`, "condition", []string{"must be a JSON object"}},
		{"a list", `[{"kind":"exit"}]`, "condition", []string{"must be a JSON object"}},
		{"unknown field", `{"kind":"exit","timeout":5}`, "timeout", []string{"unknown"}},
		{"unknown field on output", `{"kind":"output","text":"x","regex":true}`, "regex", []string{"unknown"}},
		{"field in other case", `{"kind":"exit","Text":"x"}`, "Text", []string{"unknown"}},
		{"kind in other case", `{"KIND":"exit"}`, "kind", kinds},
		{"text wrong type", `{"kind":"output","text":5}`, "text", []string{"must be a string"}},
		{"text null", `{"kind":"output","text":null}`, "text", []string{"must be a string"}},
		{"path wrong type", `{"kind":"file","path":["a"]}`, "path", []string{"must be a string"}},
		{"sha256 wrong type", `{"kind":"file","path":"a","sha256":1}`, "sha256", []string{"must be a string"}},
		{"kind wrong type", `{"kind":1}`, "kind", append([]string{"must be a string"}, kinds...)},
		{"missing kind", `{"text":"x"}`, "kind", kinds},
		{"kind http", `{"kind":"http","url":"http://localhost/"}`, "kind", append([]string{`"http"`}, kinds...)},
		{"kind port", `{"kind":"port","port":8080}`, "kind", append([]string{`"port"`}, kinds...)},
		{"kind pid", `{"kind":"pid"}`, "kind", append([]string{`"pid"`}, kinds...)},
		{"kind empty", `{"kind":""}`, "kind", kinds},
		{"text on file", `{"kind":"file","path":"x","text":"y"}`, "text", []string{"output"}},
		{"path on output", `{"kind":"output","text":"x","path":"y"}`, "path", []string{"file"}},
		{"sha256 on output", `{"kind":"output","text":"x","sha256":"` + strings.Repeat("a", 64) + `"}`, "sha256", []string{"file"}},
		{"text on exit", `{"kind":"exit","text":"x"}`, "text", []string{"output"}},
		{"empty text on exit", `{"kind":"exit","text":""}`, "text", []string{"output"}},
		{"missing text", `{"kind":"output"}`, "text", nil},
		{"empty text", `{"kind":"output","text":""}`, "text", []string{"empty"}},
		{"non-UTF-8 text", "{\"kind\":\"output\",\"text\":\"a\xffb\"}", "text", []string{"UTF-8"}},
		{"lone surrogate text", `{"kind":"output","text":"a\ud800b"}`, "text", []string{"UTF-8"}},
		{"lone low surrogate text", `{"kind":"output","text":"\udc00"}`, "text", []string{"UTF-8"}},
		{"missing path", `{"kind":"file"}`, "path", nil},
		{"empty path", `{"kind":"file","path":""}`, "path", []string{"empty"}},
		{"short sha256", `{"kind":"file","path":"a","sha256":"abc"}`, "sha256", []string{"64"}},
		{"long sha256", `{"kind":"file","path":"a","sha256":"` + strings.Repeat("a", 65) + `"}`, "sha256", []string{"64"}},
		{"non-hex sha256", `{"kind":"file","path":"a","sha256":"` + strings.Repeat("g", 64) + `"}`, "sha256", []string{"64"}},
		{"upper-case sha256", `{"kind":"file","path":"a","sha256":"` + strings.Repeat("A", 64) + `"}`, "sha256", []string{"lowercase"}},
		{"empty sha256", `{"kind":"file","path":"a","sha256":""}`, "sha256", []string{"empty"}},
		{"duplicate kind", `{"kind":"exit","kind":"exit"}`, "kind", []string{"more than once"}},
		{"duplicate text", `{"kind":"output","text":"a","text":"b"}`, "text", []string{"more than once"}},
		{"not an object", `["exit"]`, "-", []string{"object"}},
		{"a string", `"exit"`, "-", []string{"object"}},
		{"empty", ``, "-", []string{"JSON"}},
		{"truncated", `{"kind":"exit"`, "-", []string{"JSON"}},
		{"trailing object", `{"kind":"exit"} {"kind":"exit"}`, "-", []string{"after"}},
		{"trailing garbage", `{"kind":"exit"} x`, "-", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseCondition(json.RawMessage(tc.raw))
			if err == nil {
				t.Fatalf("ParseCondition(%s) = %+v; want refusal", tc.raw, c)
			}
			wantRefusal(t, err, tc.field, tc.fragments...)
		})
	}
}

func TestParseConditionRefusalIsExitStatus2(t *testing.T) {
	_, err := ParseCondition(json.RawMessage(`{"kind":"http"}`))
	if got := protocol.AsError(err).Code.ExitStatus(); got != 2 {
		t.Fatalf("exit status %d; want 2", got)
	}
}

var testRules = Rules{
	Root:         "/srv/app",
	StateDir:     "/srv/app/.procmon",
	PrivatePaths: []string{".git", ".ssh", ".env", "config/secrets", "", "."},
}

func TestValidateRefusesPaths(t *testing.T) {
	cases := []struct {
		path   string
		reason string
	}{
		{"", "empty"},
		{"a\x00b", "nul"},
		{"\x00", "nul"},
		{"../x", "dotdot"},
		{"..", "dotdot"},
		{"a/../b", "dotdot"},
		{"a/..", "dotdot"},
		{"/etc/passwd", "absolute"},
		{"/", "absolute"},
		{"./x", "dot_component"},
		{".", "dot_component"},
		{"a/./b", "dot_component"},
		{"a//b", "empty_component"},
		{"x/", "empty_component"},
		{".git/config", "private"},
		{".git", "private"},
		{"sub/.git/HEAD", "private"},
		{".env", "private"},
		{".ssh/id_ed25519", "private"},
		{"config/secrets", "private"},
		{"config/secrets/db.json", "private"},
		{"vendor/config/secrets/x", "private"},
		{".procmon", "state_dir"},
		{".procmon/monitors/web.json", "state_dir"},
	}
	for _, tc := range cases {
		c := Condition{Kind: KindFile, Path: tc.path}
		err := c.Validate(testRules)
		if err == nil {
			t.Errorf("Validate(%q) accepted; want refusal %s", tc.path, tc.reason)
			continue
		}
		wantRefusal(t, err, "path")
		if got := protocol.AsError(err).Details["reason"]; got != tc.reason {
			t.Errorf("Validate(%q) reason %v; want %s (%v)", tc.path, got, tc.reason, err)
		}
	}
	// A path whose only fault is its spelling is told its clean form;
	// one whose clean form is refused too is not.
	for p, want := range map[string]string{"./x": `write it in clean form: "x"`, "a/./b": `write it in clean form: "a/b"`, "x/": `write it in clean form: "x"`,
		".": "write it in clean form", "./../x": "write it in clean form", "./a/../b": "write it in clean form"} {
		msg := Condition{Kind: KindFile, Path: p}.Validate(testRules).Error()
		if !strings.HasSuffix(msg, want) {
			t.Errorf("Validate(%q) = %q; want it to end %q", p, msg, want)
		}
	}
}

func TestValidateAcceptsPaths(t *testing.T) {
	for _, p := range []string{
		"ready.json", "run/ready.json", ".envrc", ".github/x", "config/app.json",
		"configs/secrets", "secrets", "config", ".procmonx", "a b/ü.json", "...",
	} {
		if err := (Condition{Kind: KindFile, Path: p}).Validate(testRules); err != nil {
			t.Errorf("Validate(%q): %v", p, err)
		}
	}
}

func TestValidateStateDirElsewhere(t *testing.T) {
	r := Rules{Root: "/srv/app", StateDir: "/srv/app/run/state/"}
	for p, refused := range map[string]bool{
		"run/state":      true,
		"run/state/x":    true,
		"run/stateful":   false,
		"run/ready.json": false,
		".procmon/x":     false,
	} {
		err := (Condition{Kind: KindFile, Path: p}).Validate(r)
		if refused {
			wantRefusal(t, err, "path", "state directory")
		} else if err != nil {
			t.Errorf("Validate(%q): %v", p, err)
		}
	}
	// A root inside the state directory leaves nothing to observe.
	r = Rules{Root: "/var/lib/procmon/x", StateDir: "/var/lib/procmon"}
	wantRefusal(t, (Condition{Kind: KindFile, Path: "a"}).Validate(r), "path", "state directory")
}

func TestValidateShape(t *testing.T) {
	digest := strings.Repeat("f", 64)
	cases := []struct {
		c     Condition
		field string
	}{
		{Condition{Kind: "http"}, "kind"},
		{Condition{}, "kind"},
		{Condition{Kind: KindOutput}, "text"},
		{Condition{Kind: KindOutput, Text: "a\xffb"}, "text"},
		{Condition{Kind: KindOutput, Text: "x", Path: "a"}, "path"},
		{Condition{Kind: KindExit, Text: "x"}, "text"},
		{Condition{Kind: KindExit, SHA256: digest}, "sha256"},
		{Condition{Kind: KindFile, Path: "a", Text: "x"}, "text"},
		{Condition{Kind: KindFile, Path: "a", SHA256: "xyz"}, "sha256"},
		{Condition{Kind: KindFile, Path: "a\xff"}, "path"},
	}
	for _, tc := range cases {
		wantRefusal(t, tc.c.Validate(testRules), tc.field)
	}
	for _, c := range []Condition{
		{Kind: KindExit},
		{Kind: KindOutput, Text: "Listening"},
		{Kind: KindFile, Path: "a", SHA256: digest},
	} {
		if err := c.Validate(testRules); err != nil {
			t.Errorf("Validate(%+v): %v", c, err)
		}
	}
}

func TestValidateNeedsAbsoluteRules(t *testing.T) {
	err := (Condition{Kind: KindFile, Path: "a"}).Validate(Rules{Root: "srv", StateDir: "/s"})
	if !protocol.HasCode(err, protocol.CodeInternal) {
		t.Fatalf("Validate with a relative root: %v; want internal", err)
	}
	// Rules do not matter to other kinds.
	if err := (Condition{Kind: KindExit}).Validate(Rules{}); err != nil {
		t.Fatalf("exit with empty rules: %v", err)
	}
}
