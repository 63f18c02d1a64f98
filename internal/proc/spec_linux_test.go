package proc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

func int64p(v int64) *int64 { return &v }

// fullSpec sets every field of Spec to a value other than its zero, so a
// field the codec forgets fails the round trip.
func fullSpec() Spec {
	return Spec{
		StateDir:       "/state/dir",
		MonitorID:      "m_0123456789abcdefghijklmn",
		RunID:          "r_0123456789abcdefghijklmn",
		Name:           "api ✓",
		Argv:           []string{"python3", "-c", "print('\x00\xff')", ""},
		Cwd:            "/work",
		Env:            []string{"A=1", "TOKEN=s3cr3t-value", "EMPTY="},
		Secrets:        []string{"hunter2hunter2", strings.Repeat("x", 300)},
		CommandOrdinal: 7,
		AdmittedAtMs:   1796041821674,
		AdmittedMonoMs: 81234567,
		MonoClock:      "time:[4026531834]",
		WorkDeadlineMs: int64p(-1),
		MaxOutputBytes: int64p(1 << 40),
		OwnerGraceMs:   30000,
		Owner:          &state.Owner{PID: 4242, StartTicks: 1<<63 + 5},

		Path:               "/usr/bin/python3",
		GuardianStartTicks: 1<<63 + 9,
	}
}

func TestSpecRoundTrip(t *testing.T) {
	full := fullSpec()
	v := reflect.ValueOf(full)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("fullSpec leaves %s zero: the round trip would not test it", v.Type().Field(i).Name)
		}
	}
	for _, s := range []Spec{full, {}, {Argv: []string{"true"}, Env: []string{}}} {
		data, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got Spec
		if err := got.UnmarshalBinary(data); err != nil {
			t.Fatalf("decode: %v", err)
		}
		// An empty list and no list are the same to a guardian.
		norm := func(s *Spec) {
			for _, l := range []*[]string{&s.Argv, &s.Env, &s.Secrets} {
				if len(*l) == 0 {
					*l = nil
				}
			}
		}
		norm(&s)
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, s)
		}
	}
}

func TestSpecDecodeRefusesDamage(t *testing.T) {
	s := fullSpec()
	data, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(data) {
		var got Spec
		if err := got.UnmarshalBinary(data[:n]); err == nil {
			t.Fatalf("a spec cut to %d of %d bytes decoded", n, len(data))
		}
	}
	var got Spec
	if err := got.UnmarshalBinary(append(data, 0)); err == nil {
		t.Fatal("trailing data accepted")
	}
	if err := got.UnmarshalBinary([]byte(`{"argv":["x"]}`)); err == nil {
		t.Fatal("a JSON spec accepted")
	}
	// A count larger than the bytes left is refused before allocating.
	body := []byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}
	bad := append(binary.AppendUvarint([]byte(specMagic), uint64(len(body))), body...)
	if err := got.UnmarshalBinary(bad); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("an absurd list length: %v", err)
	}
}

// The guardian reads its spec from a pipe the launcher has not closed yet:
// the length in front lets it stop at the spec's end without waiting.
func TestReadSpecNeedsNoEOF(t *testing.T) {
	s := fullSpec()
	s.Env = append(s.Env, strings.Repeat("BIG=x", 5000)) // more than one pipe read
	data, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close() // open until the end: no EOF ever comes
	go w.Write(data)
	done := make(chan error, 1)
	var got Spec
	go func() { done <- readSpec(r, &got) }()
	select {
	case err := <-done:
		if err != nil || !reflect.DeepEqual(got, s) {
			t.Fatalf("readSpec: %v, equal %v", err, reflect.DeepEqual(got, s))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("readSpec waited for the end of the pipe")
	}

	// Nothing at all, then the end: the start was refused.
	if err := readSpec(strings.NewReader(""), &got); err != io.EOF {
		t.Fatalf("empty: %v, want io.EOF", err)
	}
}

// A handoff reads back as written: the running record's fields the
// launcher answers with (in binary), or the error (a line of JSON); a
// running handoff cut short is an error, and nothing at all is no handoff.
func TestHandoffRoundTrip(t *testing.T) {
	running := &state.Monitor{
		MonitorID: "m_0123456789abcdefghijklmn", RunID: "default", Name: "api ✓ <v2>",
		Argv: []string{"sleep", "", "1000\n"}, CommandOrdinal: 7, PID: 4242, PGID: 4242,
		StartedAtMs: 1796041821674, OwnershipExpiresAtMs: 1796041881674, WorkDeadlineMs: int64p(-3),
		Phase: state.PhaseRunning,
	}
	noDeadline := *running
	noDeadline.WorkDeadlineMs = nil
	failed := &protocol.ErrorBody{Code: protocol.CodeExecFailed, Message: "cannot execute \"nope\"", Details: map[string]any{"argv0": "nope"}}
	for _, h := range []handoff{{Monitor: running}, {Monitor: &noDeadline}, {Error: failed}} {
		data := appendHandoff(nil, h)
		got, err := readHandoff(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		if !reflect.DeepEqual(got, h) {
			t.Errorf("%q read back as %+v, want %+v", data, got, h)
		}
	}
	data := appendHandoff(nil, handoff{Monitor: running})
	for n := 1; n < len(data); n++ {
		if got, err := readHandoff(bufio.NewReader(bytes.NewReader(data[:n]))); err == nil {
			t.Fatalf("a handoff cut to %d of %d bytes read as %+v", n, len(data), got)
		}
	}
	if got, err := readHandoff(bufio.NewReader(bytes.NewReader(nil))); err != nil || got.Monitor != nil || got.Error != nil {
		t.Fatalf("no handoff: %+v, %v", got, err)
	}
}

// TestSpecDeadlineAt: the work deadline is counted from the admission on
// the monotonic clock that read it, whatever the wall clock reads now;
// from now on the wall clock when the spec names another clock (another
// time namespace), names none, or reads the admission as still to come.
func TestSpecDeadlineAt(t *testing.T) {
	const hour = int64(time.Hour / time.Millisecond)
	now, mono := nowMs(), state.MonoNowMs()
	// Admitted a minute ago, with 90 minutes to run; the wall clock has
	// been stepped two hours forward since, so it counts two hours and a
	// minute.
	admitted := now - 2*hour - 60000
	spec := Spec{AdmittedAtMs: admitted, AdmittedMonoMs: mono - 60000, MonoClock: state.MonoClock(), WorkDeadlineMs: int64p(admitted + 90*60000)}
	fromAdmission := 89 * time.Minute
	fromWall := -30*time.Minute - time.Minute // the stepped wall clock's view
	for _, c := range []struct {
		name string
		edit func(*Spec)
		want time.Duration
	}{
		{"the same clock", func(*Spec) {}, fromAdmission},
		{"another clock", func(s *Spec) { s.MonoClock = "time:[1]" }, fromWall},
		{"no reading", func(s *Spec) { s.AdmittedMonoMs = 0 }, fromWall},
		{"a reading ahead", func(s *Spec) { s.AdmittedMonoMs = mono + hour }, fromWall},
	} {
		s := spec
		c.edit(&s)
		if got := time.Until(s.deadlineAt()); got < c.want-10*time.Second || got > c.want+10*time.Second {
			t.Errorf("%s: the deadline is in %v, want %v", c.name, got, c.want)
		}
	}
}
