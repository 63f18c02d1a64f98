package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestAnswersHideSecretLength runs the same output with a short and a
// long registered secret in it, through exec and through a monitor,
// under an output cap that cuts it and without one: every answer is the
// same, as the redacted text is (SPEC 14: nothing depends on a secret's
// value beyond what the redacted text shows). captured_bytes and the
// capture limit used to count the bytes before redaction, which told the
// secret's length.
func TestAnswersHideSecretLength(t *testing.T) {
	for _, capped := range []bool{false, true} {
		limit := 1000000
		if capped {
			limit = 600
		}
		stateDir := filepath.Join(t.TempDir(), "state")
		procmon := procmonIn(t, stateDir, t.TempDir())
		storeSettings(t, procmon, hostSettings{graceSeconds: 30, maxOutputBytes: limit, commandLimit: 20})
		// The secret, then 1000 bytes of a pattern; capped, the service
		// stays until the cap drains it, so that it never ends first.
		argv := `["sh", "-c", "printer -env API_TOKEN; printer -bytes 1000"]`
		if capped {
			argv = `["sh", "-c", "printer -env API_TOKEN; exec printer -stay -bytes 1000"]`
		}
		answers := map[string][]string{}
		for _, secret := range []string{"s3cretXY", strings.Repeat("L0ngS3cret", 20)} {
			env := `"env": {"API_TOKEN": "` + secret + `"}`
			ex := procmon("exec")
			ex.Stdin = strings.NewReader(`{"request": {"argv": ` + argv + `, ` + env + `}}`)
			out, _ := ex.Output()
			r := gjson.ParseBytes(out)
			if !strings.Contains(r.Get("text").String(), "[REDACTED]") {
				t.Fatalf("exec answered %s", out)
			}
			answers["exec"] = append(answers["exec"], fields(r, "status", "text", "captured_bytes", "stream_bytes", "output_truncated", "truncation"))

			st := procmon("start")
			st.Stdin = strings.NewReader(`{"request": {"argv": ` + argv + `, ` + env + `}}`)
			id := startedID(t, runProcmonCmd(t, st))
			w := procmon("wait")
			w.Stdin = strings.NewReader(`{"request": {"monitor_id": "` + id + `", "condition": {"kind": "exit"}, "timeout_seconds": 60}}`)
			runProcmonCmd(t, w)
			for _, cmd := range []string{"logs", "status"} {
				c := procmon(cmd)
				c.Stdin = strings.NewReader(`{"request": {"monitor_id": "` + id + `"}}`)
				r := gjson.ParseBytes(runProcmonCmd(t, c))
				answers[cmd] = append(answers[cmd], fields(r, "status", "text", "captured_bytes", "stream_bytes", "output_truncated", "truncation", "output_sha256", "log_bytes"))
			}
		}
		for cmd, a := range answers {
			if a[0] != a[1] {
				t.Errorf("capped %v: %s answers differ with the secret's length:\n%s\n%s", capped, cmd, a[0], a[1])
			}
		}
		// The cap, of redacted bytes, cut the stored stream.
		for _, cmd := range []string{"exec", "logs"} {
			want := `status="exited"`
			if capped {
				want = `status="output_limit" `
			}
			if a := answers[cmd][0]; !strings.Contains(a, want) || capped != strings.Contains(a, "stream_bytes=600 ") {
				t.Errorf("capped %v: %s answered %s", capped, cmd, a)
			}
		}
		assertNothingLeft(t, stateDir)
	}
}

// fields renders the named fields of an answer.
func fields(r gjson.Result, names ...string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n + "=" + r.Get(n).Raw + " ")
	}
	return b.String()
}

// TestCapEndsBeforeMarker runs output whose secret's marker straddles
// max_output_bytes, through exec and through a monitor: the stored text
// ends just before the marker, never in a piece of it such as "[REDA",
// and is still counted as cut by the cap.
func TestCapEndsBeforeMarker(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	procmon := procmonIn(t, stateDir, t.TempDir())
	storeSettings(t, procmon, hostSettings{graceSeconds: 30, maxOutputBytes: 600, commandLimit: 20})
	// 595 bytes of printer's pattern, then the secret (its marker takes
	// bytes 595 to 604), then more; the service stays until the cap
	// drains it. How much of the rest is read before the drain varies:
	// the captured count is at least what passed the cap.
	request := `{"request": {"argv": ["sh", "-c", "printer -bytes 595; printer -env API_TOKEN; exec printer -stay -bytes 1000"],
		"env": {"API_TOKEN": "s3cretXY"}}}`
	want := strings.Repeat("0123456789abcdef", 63)[:595]
	check := func(cmd string, r gjson.Result) {
		t.Helper()
		if r.Get("text").String() != want || r.Get("stream_bytes").Int() != 595 ||
			r.Get("captured_bytes").Int() < 606 || r.Get("truncation").Raw != `["capture_limit"]` {
			t.Errorf("%s answered %s", cmd, r.Raw)
		}
	}

	ex := procmon("exec")
	ex.Stdin = strings.NewReader(request)
	out, _ := ex.Output()
	r := gjson.ParseBytes(out)
	if r.Get("status").String() != "output_limit" || !r.Get("group_empty_verified").Bool() {
		t.Errorf("exec answered %s", out)
	}
	check("exec", r)

	st := procmon("start")
	st.Stdin = strings.NewReader(request)
	id := startedID(t, runProcmonCmd(t, st))
	w := procmon("wait")
	w.Stdin = strings.NewReader(`{"request": {"monitor_id": "` + id + `", "condition": {"kind": "exit"}, "timeout_seconds": 60}}`)
	runProcmonCmd(t, w)
	s := gjson.ParseBytes(runProcmon(t, procmon, "status", id))
	if s.Get("status").String() != "output_limit" || !s.Get("receipt.group_empty_verified").Bool() || s.Get("log_bytes").Int() != 595 {
		t.Errorf("status answered %s", s.Raw)
	}
	check("logs", gjson.ParseBytes(runProcmon(t, procmon, "logs", id)))
	assertNothingLeft(t, stateDir)
}
