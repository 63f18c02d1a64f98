#!/usr/bin/env bash
# A real run of procmon's main job on this machine: build it, start a web
# server under custody, make ONE wait for its readiness line, use it, read
# its redacted logs, stop it and show the receipt that proves nothing is
# left. Needs only Go and python3; touches nothing outside a temp dir.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PROCMON_STATE_DIR="$tmp/state"
procmon="$tmp/bin/procmon"
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

echo "building procmon..."
CGO_ENABLED=0 go build -o "$procmon" .

say procmon configure --enable
"$procmon" configure --enable --pretty

mkdir -p "$tmp/site"
echo '<h1>hello from a service in custody</h1>' > "$tmp/site/index.html"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

say "API_TOKEN=… procmon start --name web --cwd site -- python3 -u -m http.server $port --bind 127.0.0.1"
start=$(cd "$tmp" && API_TOKEN=demo-secret-value-1234 "$procmon" start --name web --cwd site -- \
  sh -c 'echo "token is $API_TOKEN"; exec python3 -u -m http.server "$0" --bind 127.0.0.1' "$port")
echo "$start"
id=$(echo "$start" | field monitor_id)
pid=$(echo "$start" | field pid)

say procmon wait "$id" --output "'Serving HTTP'" --timeout 30
"$procmon" wait "$id" --output "Serving HTTP" --timeout 30 --pretty

say "curl http://127.0.0.1:$port/"
python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode().strip())' "http://127.0.0.1:$port/"

say procmon logs "$id"
"$procmon" logs "$id" --pretty

say procmon status "$id"
"$procmon" status "$id" --pretty

say procmon cancel "$id"
receipt=$("$procmon" cancel "$id" --pretty)
echo "$receipt"

if kill -0 "$pid" 2>/dev/null; then
  echo "demo: the server (pid $pid) is still running" >&2
  exit 1
fi
echo
echo "The server (pid $pid) is gone, its group verified empty, and the token never reached the log."
