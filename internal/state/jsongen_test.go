package state

import (
	"reflect"
	"testing"

	"procmon/internal/protocol/jsongen"
)

// recordJSON is records_json_linux.go: the codec of every record, made
// from the record structs; go generate writes it.
var recordJSON = jsongen.Spec{
	File: "records_json_linux.go", Package: "state", Dispatch: true,
	Encode: recordTypes, Decode: recordTypes,
	Doc: `The encoders and decoders of the records, generated from their structs,
which stay the one place the fields are spelled. They exist because a
fresh process that meets a record on the way to its user would
otherwise pay encoding/json for building each type's codec by
reflection. Measured against encoding/json in one run (a trace of 100
starts, piped status calls and cancels each, interleaved, 2 cores, load
2.7), as time in record encoding and decoding per process: the
guardian's first record, which start waits for, 336 µs against 12 here;
the start command 381 against 165; status 413 against 171; cancel 414
against 176. That is about 4% of a start (13.5 ms there) and 4% of a
piped status (5.9 ms), the figures of README's Performance section.`,
}

// recordTypes are the types stored as records (through encodeRecord) or
// beside them (Maker), and the envelope that holds each record.
var recordTypes = []reflect.Type{
	reflect.TypeFor[Monitor](), reflect.TypeFor[Run](), reflect.TypeFor[Settings](),
	reflect.TypeFor[budget](), reflect.TypeFor[Maker](), reflect.TypeFor[TraceEscapes](),
	reflect.TypeFor[envelope](),
}

//go:generate env PROCMON_UPDATE=1 go test -run TestGeneratedJSONIsCurrent .

func TestGeneratedJSONIsCurrent(t *testing.T) { jsongen.Check(t, recordJSON) }
