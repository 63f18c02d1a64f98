package proc

import (
	"bufio"
	"bytes"
	"encoding/binary"
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
	WorkDeadlineMs *int64
	MaxOutputBytes *int64
	OwnerGraceMs   int64
	Owner          *state.Owner
}

// The spec crosses one pipe between two copies of the same binary, so it
// needs no self-description: after a magic line and the length of the
// rest, it is written as length-prefixed fields in a fixed order. (A cold
// encoding/json decoder cost the guardian about half a millisecond of its
// start, which the caller waits for; the length lets the guardian start
// without waiting for the caller to close the pipe.)
const specMagic = "procmon-spec-2\n"

// maxSpecBytes bounds what a guardian reads as its spec.
const maxSpecBytes = 16 << 20

// MarshalBinary encodes the spec: the magic line, the length of the body,
// the body.
func (s *Spec) MarshalBinary() ([]byte, error) {
	var b []byte
	putString := func(v string) {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	putStrings := func(vs []string) {
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			putString(v)
		}
	}
	putOptional := func(v *int64) {
		if v == nil {
			b = append(b, 0)
			return
		}
		b = append(b, 1)
		b = binary.AppendVarint(b, *v)
	}
	putString(s.StateDir)
	putString(s.MonitorID)
	putString(s.RunID)
	putString(s.Name)
	putStrings(s.Argv)
	putString(s.Cwd)
	putStrings(s.Env)
	putStrings(s.Secrets)
	b = binary.AppendVarint(b, s.CommandOrdinal)
	b = binary.AppendVarint(b, s.AdmittedAtMs)
	putOptional(s.WorkDeadlineMs)
	putOptional(s.MaxOutputBytes)
	b = binary.AppendVarint(b, s.OwnerGraceMs)
	if s.Owner == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = binary.AppendVarint(b, int64(s.Owner.PID))
		b = binary.AppendUvarint(b, s.Owner.StartTicks)
	}
	if len(b) > maxSpecBytes {
		return nil, fmt.Errorf("spec of %d bytes is over the %d-byte limit", len(b), maxSpecBytes)
	}
	head := binary.AppendUvarint([]byte(specMagic), uint64(len(b)))
	return append(head, b...), nil
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
		return errSpecTruncated
	}
	if n > maxSpecBytes {
		return fmt.Errorf("spec of %d bytes is over the %d-byte limit", n, maxSpecBytes)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return errSpecTruncated
	}
	return s.decodeBody(body)
}

var errSpecTruncated = errors.New("spec is truncated")

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
	var err error
	uvarint := func() uint64 {
		v, n := binary.Uvarint(d)
		if n <= 0 {
			err = errSpecTruncated
			d = nil
			return 0
		}
		d = d[n:]
		return v
	}
	varint := func() int64 { // zigzag, as binary.AppendVarint writes it
		u := uvarint()
		v := int64(u >> 1)
		if u&1 != 0 {
			v = ^v
		}
		return v
	}
	flag := func() bool {
		if len(d) == 0 {
			err = errSpecTruncated
			return false
		}
		f := d[0]
		d = d[1:]
		if f > 1 {
			err = fmt.Errorf("spec has a flag byte %d", f)
		}
		return f == 1
	}
	str := func() string {
		n := uvarint()
		if n > uint64(len(d)) {
			err = errSpecTruncated
			d = nil
			return ""
		}
		v := string(d[:n])
		d = d[n:]
		return v
	}
	strs := func() []string {
		n := uvarint()
		if n > uint64(len(d)) { // every string takes at least one byte
			err = errSpecTruncated
			d = nil
			return nil
		}
		var vs []string
		for range n {
			vs = append(vs, str())
		}
		return vs
	}
	optional := func() *int64 {
		if !flag() {
			return nil
		}
		v := varint()
		return &v
	}
	*s = Spec{
		StateDir:       str(),
		MonitorID:      str(),
		RunID:          str(),
		Name:           str(),
		Argv:           strs(),
		Cwd:            str(),
		Env:            strs(),
		Secrets:        strs(),
		CommandOrdinal: varint(),
		AdmittedAtMs:   varint(),
		WorkDeadlineMs: optional(),
		MaxOutputBytes: optional(),
		OwnerGraceMs:   varint(),
	}
	if flag() {
		pid := varint()
		s.Owner = &state.Owner{PID: int(pid), StartTicks: uvarint()}
	}
	if err != nil {
		return err
	}
	if len(d) != 0 {
		return fmt.Errorf("spec has %d bytes of trailing data", len(d))
	}
	return nil
}

// handoff is the guardian's one message to the launcher: the durable
// running record, or the error that prevented it.
type handoff struct {
	Monitor *state.Monitor      `json:"monitor,omitempty"`
	Error   *protocol.ErrorBody `json:"error,omitempty"`
}

// DefaultDrainGraceMs is how long a group has between SIGTERM and SIGKILL
// unless a cancel names another grace.
const DefaultDrainGraceMs = 5000
