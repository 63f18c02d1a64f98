package state

import (
	"bytes"
	"encoding/json"
	"fmt"
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
}

func checksum(body []byte) string {
	return strconv.FormatUint(xxhash.Sum64(body), 16)
}

// encodeRecord is v as a checksummed record of the given kind, one line.
// A monitor record is encoded by AppendMonitorJSON, the rest by
// encoding/json; the envelope, by appendEnvelope.
func encodeRecord(kind string, v any) ([]byte, error) {
	var body []byte
	if m, ok := v.(*Monitor); ok {
		body = AppendMonitorJSON(make([]byte, 0, 1024), m)
	} else {
		var err error
		if body, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("encode %s: %w", kind, err)
		}
	}
	return appendEnvelope(make([]byte, 0, len(body)+128), kind, body), nil
}

// appendEnvelope appends the one-line record of a body already encoded
// (compact JSON), as json.Marshal encodes an envelope, and a newline.
func appendEnvelope(b []byte, kind string, body []byte) []byte {
	b = append(b, `{"schema":`...)
	b = strconv.AppendInt(b, SchemaVersion, 10)
	b = append(b, `,"kind":`...)
	b = protocol.AppendString(b, kind, true)
	b = append(b, `,"checksum":`...)
	b = protocol.AppendString(b, checksum(body), true)
	b = append(b, `,"body":`...)
	b = append(b, body...)
	return append(b, "}\n"...)
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

func decodeRecord(path, kind string, data []byte, v any) error {
	corrupt := func(why string) error {
		return protocol.Errorf(protocol.CodeStateCorrupt, "%s record %s is damaged (%s); it is not trusted. Inspect or remove it by hand", kind, path, why).With("path", path)
	}
	env, ok := parseEnvelope(data)
	if !ok {
		if err := json.Unmarshal(data, &env); err != nil {
			return corrupt("not valid JSON: " + err.Error())
		}
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
	if r, ok := v.(*Run); ok && decodeRunFast(env.Body, r) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(env.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return corrupt("body: " + err.Error())
	}
	return nil
}
