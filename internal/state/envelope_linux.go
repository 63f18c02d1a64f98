package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"github.com/cespare/xxhash/v2"

	"procmon/internal/protocol"
)

// SchemaVersion is the version of every record this build writes.
const SchemaVersion = 1

// envelope is the on-disk form of every record: the body exactly as hashed.
type envelope struct {
	Schema   int             `json:"schema"`
	Kind     string          `json:"kind"`
	Checksum string          `json:"checksum"`
	Body     json.RawMessage `json:"body"`
	// TicksClock says which clock the body's start times are on
	// (TicksInitial): "" in a record of an earlier procmon, or of a kind
	// that holds none. It is the envelope's, not the body's: an earlier
	// procmon reads an envelope leniently and a body strictly, so a new
	// field in the body made every record it met damaged to it.
	TicksClock string `json:"ticks_clock,omitempty"`
}

func checksum(body []byte) string {
	return strconv.FormatUint(xxhash.Sum64(body), 16)
}

// appendGenerated and decodeGenerated encode and decode the records as
// encoding/json does, by code generated from their structs
// (records_json_linux.go, whose header says what that saves; go generate
// writes it again). Without that file, every record goes through
// encoding/json alone.
var (
	appendGenerated = func(b []byte, v any) ([]byte, bool) { return b, false }
	decodeGenerated = func(data []byte, v any) bool { return false }
)

// encodeRecord is v as a checksummed record of the given kind, one line,
// as json.Marshal writes it.
func encodeRecord(kind string, v any) ([]byte, error) {
	body, ok := appendGenerated(make([]byte, 0, 1024), v)
	if !ok {
		var err error
		if body, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("encode %s: %w", kind, err)
		}
	}
	env := envelope{Schema: SchemaVersion, Kind: kind, Checksum: checksum(body), Body: body}
	if _, ok := v.(startTimes); ok {
		env.TicksClock = TicksInitial
	}
	data, ok := appendGenerated(make([]byte, 0, len(body)+128), &env)
	if !ok {
		var err error
		if data, err = json.Marshal(&env); err != nil {
			return nil, fmt.Errorf("encode %s: %w", kind, err)
		}
	}
	return append(data, '\n'), nil
}

// writeRecord stores v as a checksummed record of the given kind at
// dir/name, dir inside the state directory root.
func writeRecord(root, dir, name, kind string, v any, durable bool) error {
	data, err := encodeRecord(kind, v)
	if err != nil {
		return err
	}
	return writeFileAtomic(root, dir, name, data, durable)
}

// readRecord loads the record at dir/name, dir inside the state directory
// root, checked as every file of the state directory is (trusted.go) and
// verifying its schema, kind and checksum. A missing record is
// fs.ErrNotExist.
func readRecord(root, dir, name, kind string, v any) error {
	data, err := readTrusted(root, dir, name)
	if err != nil {
		return err
	}
	return decodeRecord(filepath.Join(dir, name), kind, data, v)
}

// decodeRecord reads data, a record of the given kind, into v, a new
// value, as encoding/json reads it: decodeGenerated reads what the
// writers write, encoding/json whatever else.
func decodeRecord(path, kind string, data []byte, v any) error {
	corrupt := func(why string) error {
		return protocol.Errorf(protocol.CodeStateCorrupt, "%s record %s is damaged (%s); it is not trusted", kind, path, why).With("path", path)
	}
	var env envelope
	if !decodeGenerated(data, &env) {
		// Strict, as a body is read: the clock mark lies outside the
		// checksum, so a damaged one must be refused by its spelling.
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&env); err != nil {
			return corrupt("not valid JSON: " + err.Error())
		}
		if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
			return corrupt("not valid JSON: data after the record")
		}
	}
	if env.TicksClock != "" && env.TicksClock != TicksInitial {
		return corrupt(fmt.Sprintf("ticks_clock %q, this procmon knows %q", env.TicksClock, TicksInitial))
	}
	if env.Schema != SchemaVersion {
		return corrupt(fmt.Sprintf("schema %d, this procmon reads %d", env.Schema, SchemaVersion))
	}
	if env.Kind != kind {
		return corrupt(fmt.Sprintf("kind %q, want %q", env.Kind, kind))
	}
	if env.Checksum != checksum(env.Body) {
		return corrupt("checksum mismatch")
	}
	if !decodeGenerated(env.Body, v) {
		dec := json.NewDecoder(bytes.NewReader(env.Body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return corrupt("body: " + err.Error())
		}
	}
	if r, ok := v.(startTimes); ok && env.TicksClock == "" {
		fromWritersClock(r, TicksOffset())
	}
	return nil
}
