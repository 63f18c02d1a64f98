#!/usr/bin/env bash
# Runs every test of procmon on a fresh machine: formatting and vet, the Go
# tests (unit, testscripts driving the real binary) with the race detector,
# the fault suite, a short fuzz of the streaming redactor, and the Python
# shim's tests against a freshly built binary. Needs only Go and python3
# (and, for the full-disk fault test, root and unshare(1); it says why
# when it skips).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...
go vet -tags faultpoints ./...

echo "== builds for other systems (where every command answers unsupported_platform)"
GOOS=darwin go build ./...
GOOS=freebsd go build ./...

echo "== go test -race"
# A race-built program sleeps a second as it exits (atexit_sleep_ms), and
# the testscripts run the test binary as procmon hundreds of times.
GORACE="atexit_sleep_ms=0 ${GORACE:-}" go test -race -count=1 ./...

echo "== the fault suite (kills and stops procmon at the points of custody; FAULTS_SOAK=10m to soak)"
# Without the race detector: a race-built procmon takes a second to start,
# and the suite runs hundreds of them. The code it drives runs under the
# race detector in the tests above.
go test -tags faultpoints -count=1 -run '^TestFaults' ./internal/e2e

echo "== fuzz the redactor (short; run longer by hand with -fuzztime 5000000x)"
# A count, not a duration: Go 1.26's fuzz coordinator can fail a run that
# found nothing with "context deadline exceeded" as a -fuzztime duration
# ends (go.dev/issue/75804, fixed in Go 1.27). 150000 runs take about 15 s
# on an idle 2-core machine.
go test -run '^$' -fuzz '^FuzzChunking$' -fuzztime 150000x -fuzzminimizetime 5s ./internal/redact

echo "== Python shim"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/procmon" .
PROCMON_BIN="$tmp/procmon" python3 -m unittest discover -s shims/python -v
