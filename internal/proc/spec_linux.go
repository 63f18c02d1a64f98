package proc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"procmon/internal/protocol"
	"procmon/internal/state"
)

// Spec is everything a guardian needs, handed to it over a pipe so that
// secrets never touch disk or a command line.
type Spec struct {
	StateDir       string
	MonitorID      string
	RunID          string
	Name           string
	Argv           []string
	Cwd            string
	Env            []string
	Secrets        []string
	CommandOrdinal int64
	AdmittedAtMs   int64
	// AdmittedMonoMs is the admission on state.MonoNowMs's clock, named
	// by MonoClock: the work deadline is counted on it from the admission
	// by a guardian that reads the same clock (its launcher's child
	// does), else from the spec's arrival.
	AdmittedMonoMs int64
	MonoClock      string
	WorkDeadlineMs *int64
	MaxOutputBytes *int64
	OwnerGraceMs   int64
	Owner          *state.Owner

	// Worked out by the launcher while the guardian boots (see Prepare),
	// so that the guardian has less to do before it spawns; zero when the
	// launcher could not, and the guardian works them out itself.
	Path               string // Argv[0] resolved through the child's PATH
	GuardianStartTicks uint64 // the guardian's start time
}

// The spec crosses one pipe between two copies of the same binary, so it
// needs no self-description: after a magic line and the length of the
// rest, it is written as length-prefixed fields in a fixed order. The
// fields are bytes, not text: an argv, an environment or a secret may
// hold bytes that are not UTF-8, which encoding/json would replace with
// U+FFFD, and the service must be given exactly what was asked. (It is
// also quicker: 5 to 30 µs to decode in a fresh process, where
// encoding/json takes 30 to 100, which is under 1% of a start. The length
// lets the guardian start without waiting for the caller to close the
// pipe.)
const specMagic = "procmon-spec-4\n"

// maxSpecBytes bounds what a guardian reads as its spec.
const maxSpecBytes = 16 << 20

// MarshalBinary encodes the spec: the magic line, the length of the body,
// the body.
func (s *Spec) MarshalBinary() ([]byte, error) {
	var w binWriter
	w.str(s.StateDir)
	w.str(s.MonitorID)
	w.str(s.RunID)
	w.str(s.Name)
	w.strs(s.Argv)
	w.str(s.Cwd)
	w.strs(s.Env)
	w.strs(s.Secrets)
	w.varint(s.CommandOrdinal)
	w.varint(s.AdmittedAtMs)
	w.varint(s.AdmittedMonoMs)
	w.str(s.MonoClock)
	w.optional(s.WorkDeadlineMs)
	w.optional(s.MaxOutputBytes)
	w.varint(s.OwnerGraceMs)
	w.flag(s.Owner != nil)
	if s.Owner != nil {
		w.varint(int64(s.Owner.PID))
		w.uvarint(s.Owner.StartTicks)
	}
	w.str(s.Path)
	w.uvarint(s.GuardianStartTicks)
	if len(w.b) > maxSpecBytes {
		return nil, fmt.Errorf("spec of %d bytes is over the %d-byte limit", len(w.b), maxSpecBytes)
	}
	head := binary.AppendUvarint([]byte(specMagic), uint64(len(w.b)))
	return append(head, w.b...), nil
}

// readSpec reads one spec from r, no more: the guardian need not wait for
// the launcher to close the pipe. io.EOF means the launcher closed it
// without sending one.
func readSpec(r io.Reader, s *Spec) error {
	br := bufio.NewReader(r)
	magic := make([]byte, len(specMagic))
	if _, err := io.ReadFull(br, magic); err != nil {
		return err // io.EOF when nothing at all was sent
	}
	if string(magic) != specMagic {
		return errors.New("not a spec from this procmon")
	}
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return errTruncated
	}
	if n > maxSpecBytes {
		return fmt.Errorf("spec of %d bytes is over the %d-byte limit", n, maxSpecBytes)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return errTruncated
	}
	return s.decodeBody(body)
}

var errTruncated = errors.New("truncated")

// UnmarshalBinary decodes a spec written by MarshalBinary; anything short,
// long or malformed is an error.
func (s *Spec) UnmarshalBinary(data []byte) error {
	rest, ok := bytes.CutPrefix(data, []byte(specMagic))
	if !ok {
		return errors.New("not a spec from this procmon")
	}
	n, k := binary.Uvarint(rest)
	if k <= 0 || n != uint64(len(rest)-k) {
		return fmt.Errorf("spec body is %d bytes after its length, which says %d", len(rest)-max(k, 0), n)
	}
	return s.decodeBody(rest[k:])
}

// decodeBody decodes the fields of a spec; anything short, long or
// malformed is an error.
func (s *Spec) decodeBody(d []byte) error {
	r := binReader{d: d}
	*s = Spec{
		StateDir:       r.str(),
		MonitorID:      r.str(),
		RunID:          r.str(),
		Name:           r.str(),
		Argv:           r.strs(),
		Cwd:            r.str(),
		Env:            r.strs(),
		Secrets:        r.strs(),
		CommandOrdinal: r.varint(),
		AdmittedAtMs:   r.varint(),
		AdmittedMonoMs: r.varint(),
		MonoClock:      r.str(),
		WorkDeadlineMs: r.optional(),
		MaxOutputBytes: r.optional(),
		OwnerGraceMs:   r.varint(),
	}
	if r.flag() {
		pid := r.varint()
		s.Owner = &state.Owner{PID: int(pid), StartTicks: r.uvarint()}
	}
	s.Path = r.str()
	s.GuardianStartTicks = r.uvarint()
	return r.end("spec")
}

// binWriter appends the fields of the binary forms that cross the pipes
// between a launcher and its guardian: uvarint lengths and counts, zigzag
// varints, flag bytes.
type binWriter struct{ b []byte }

func (w *binWriter) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *binWriter) varint(v int64)   { w.b = binary.AppendVarint(w.b, v) }

func (w *binWriter) flag(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

func (w *binWriter) str(v string) {
	w.uvarint(uint64(len(v)))
	w.b = append(w.b, v...)
}

func (w *binWriter) strs(vs []string) {
	w.uvarint(uint64(len(vs)))
	for _, v := range vs {
		w.str(v)
	}
}

func (w *binWriter) optional(v *int64) {
	w.flag(v != nil)
	if v != nil {
		w.varint(*v)
	}
}

// binReader reads what binWriter wrote. The first problem sticks: every
// later read returns a zero value, and end reports it.
type binReader struct {
	d   []byte
	err error
}

func (r *binReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.d = nil
}

func (r *binReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.d)
	if n <= 0 {
		r.fail(errTruncated)
		return 0
	}
	r.d = r.d[n:]
	return v
}

func (r *binReader) varint() int64 { // zigzag, as binary.AppendVarint writes it
	u := r.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (r *binReader) flag() bool {
	if len(r.d) == 0 {
		r.fail(errTruncated)
		return false
	}
	f := r.d[0]
	r.d = r.d[1:]
	if f > 1 {
		r.fail(fmt.Errorf("flag byte %d", f))
	}
	return f == 1
}

func (r *binReader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.d)) {
		r.fail(errTruncated)
		return ""
	}
	v := string(r.d[:n])
	r.d = r.d[n:]
	return v
}

func (r *binReader) strs() []string {
	n := r.uvarint()
	if n > uint64(len(r.d)) { // every string takes at least one byte
		r.fail(errTruncated)
		return nil
	}
	var vs []string
	for range n {
		vs = append(vs, r.str())
	}
	return vs
}

func (r *binReader) optional() *int64 {
	if !r.flag() {
		return nil
	}
	v := r.varint()
	return &v
}

// end is the first problem met, or an error if bytes are left over.
func (r *binReader) end(what string) error {
	if r.err != nil {
		return fmt.Errorf("%s: %w", what, r.err)
	}
	if len(r.d) != 0 {
		return fmt.Errorf("%s has %d bytes of trailing data", what, len(r.d))
	}
	return nil
}

// handoff is the guardian's one message to the launcher: the durable
// running record, or the error that prevented it.
type handoff struct {
	Monitor *state.Monitor      `json:"monitor,omitempty"`
	Error   *protocol.ErrorBody `json:"error,omitempty"`
}

// A running handoff crosses the pipe in binary too, so that neither the
// guardian nor the launcher, each a fresh process, builds a JSON codec
// for the record on the way to the answer: runningMark, the length of
// the body, then the record's fields that the answer holds. A line of
// JSON instead took a start from 8.9 to 9.8 ms (medians of 100,
// interleaved). An error handoff is a line of JSON (it starts with '{').
const runningMark = 'R'

// appendHandoff appends h as the guardian writes it.
func appendHandoff(b []byte, h handoff) []byte {
	if m := h.Monitor; m != nil && h.Error == nil {
		var w binWriter
		w.str(m.MonitorID)
		w.str(m.RunID)
		w.str(m.Name)
		w.strs(m.Argv)
		w.varint(m.CommandOrdinal)
		w.varint(int64(m.PID))
		w.varint(int64(m.PGID))
		w.varint(m.StartedAtMs)
		w.varint(m.OwnershipExpiresAtMs)
		w.optional(m.WorkDeadlineMs)
		b = append(b, runningMark)
		b = binary.AppendUvarint(b, uint64(len(w.b)))
		return append(b, w.b...)
	}
	data, _ := json.Marshal(h)
	b = append(b, data...)
	return append(b, '\n')
}

// readHandoff reads the guardian's one message. A pipe closed without one
// is no handoff and no error.
func readHandoff(r *bufio.Reader) (handoff, error) {
	first, err := r.Peek(1)
	if err == io.EOF {
		return handoff{}, nil
	}
	if err != nil {
		return handoff{}, err
	}
	if first[0] != runningMark {
		line, err := r.ReadSlice('\n')
		if err != nil && err != io.EOF {
			return handoff{}, fmt.Errorf("handoff: %w", err)
		}
		var h handoff
		if err := json.Unmarshal(line, &h); err != nil {
			return handoff{}, fmt.Errorf("decode handoff: %w", err)
		}
		return h, nil
	}
	r.ReadByte()
	n, err := binary.ReadUvarint(r)
	if err != nil || n > maxSpecBytes {
		return handoff{}, errors.New("handoff: truncated")
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return handoff{}, errors.New("handoff: truncated")
	}
	br := binReader{d: body}
	m := &state.Monitor{
		MonitorID:            br.str(),
		RunID:                br.str(),
		Name:                 br.str(),
		Argv:                 br.strs(),
		CommandOrdinal:       br.varint(),
		PID:                  int(br.varint()),
		PGID:                 int(br.varint()),
		StartedAtMs:          br.varint(),
		OwnershipExpiresAtMs: br.varint(),
		WorkDeadlineMs:       br.optional(),
		Phase:                state.PhaseRunning,
	}
	if err := br.end("handoff"); err != nil {
		return handoff{}, err
	}
	return handoff{Monitor: m}, nil
}

// DefaultDrainGraceMs is how long a group has between SIGTERM and SIGKILL
// unless a cancel names another grace.
const DefaultDrainGraceMs = 5000
