#!/usr/bin/env bash
# Runs every test of procmon on a fresh machine: formatting and vet, the Go
# tests (unit, testscripts driving the real binary) with the race detector,
# a short fuzz of the streaming redactor, and the Python shim's tests
# against a freshly built binary. Needs only Go and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test -race"
go test -race -count=1 ./...

echo "== fuzz the redactor (short; run longer by hand with -fuzztime 10m)"
go test -run '^$' -fuzz '^FuzzChunking$' -fuzztime 15s ./internal/redact

echo "== Python shim"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/procmon" .
PROCMON_BIN="$tmp/procmon" python3 -m unittest discover -s shims/python -v
