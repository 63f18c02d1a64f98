#!/usr/bin/env bash
# bench/agent_cycle.sh: the agent's whole cycle, and a test client's exec,
# next to what a hand-rolled version costs, measured in one run.
#
#   cycle  start python3 -m http.server on a free port, wait for its
#          "Serving HTTP" line, fetch one page, stop it; wall time of the
#          whole cycle, median of N (default 20), the sides interleaved so
#          that load on a shared machine falls on all alike:
#            cli    procmon start, procmon wait --output, urllib, procmon cancel
#            mcp    the same four steps as tools/call requests to ONE
#                   long-lived procmon mcp over stdio (fetching with urllib)
#            popen  subprocess.Popen with stdout on a pipe read until the
#                   line, urllib, os.killpg(SIGTERM), wait
#   exec   procmon exec -- true, next to bench/forkexec: an fsync of one
#          small file and a fork+exec+wait of true.
#
# Prints each median, and the ratios cli/popen, mcp/popen, exec/forkexec.
#
# Usage: bash bench/agent_cycle.sh [N]     (from anywhere in a clone)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_init procmon-agent-cycle
cleanup() {
	"$tmp/procmon" run end --run "${BENCH_RUN:-default}" </dev/null >/dev/null 2>&1 || true
	[[ -n ${BENCH_KEEP:-} ]] || rm -rf "$tmp"
}
bench_traps cleanup
bench_build procmon .
bench_build forkexec ./bench/forkexec
"$tmp/procmon" configure --enable </dev/null >/dev/null
# A budget large enough for every cycle and exec of the run.
cat >"$tmp/settings.json" <<'JSON'
{"sandbox": {"mode": "host", "process_monitor": true,
 "work_duration": {"protocol": "forge-work-duration-v2", "timeout_seconds": null},
 "monitor_owner_grace_seconds": 30, "monitor_timeout_seconds": null,
 "max_output_bytes": 1000000, "command_limit": null}}
JSON
"$tmp/procmon" configure <"$tmp/settings.json" >/dev/null
BENCH_RUN=$("$tmp/procmon" run new </dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
export BENCH_RUN PROCMON_RUN=$BENCH_RUN

python3 - "$tmp" "${1:-20}" <<'PY'
import json, os, signal, socket, statistics, subprocess, sys, time, urllib.request

tmp, n = sys.argv[1], int(sys.argv[2])
procmon, forkexec = os.path.join(tmp, "procmon"), os.path.join(tmp, "forkexec")
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
READY = "Serving HTTP"

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port

def server_argv(port):
    return ["python3", "-u", "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", tmp]

def fetch(port):
    with opener.open(f"http://127.0.0.1:{port}/", timeout=30) as r:
        assert r.status == 200 and r.read()

def cli(cmd, *args, stdin=None):
    out = subprocess.run([procmon, cmd, *args], input=stdin, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"procmon {cmd}: {out.stdout}{out.stderr}")
    return json.loads(out.stdout)

def cycle_cli():
    port = free_port()
    t = time.perf_counter()
    mid = cli("start", "--", *server_argv(port))["monitor_id"]
    assert cli("wait", mid, "--output", READY, "--timeout", "30")["outcome"] == "satisfied"
    fetch(port)
    r = cli("cancel", mid)
    took = time.perf_counter() - t
    assert r["group_empty_verified"], r
    return took

class MCP:
    def __init__(self):
        self.p = subprocess.Popen([procmon, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.next = 0
        self.call_raw("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
    def call_raw(self, method, params):
        self.next += 1
        self.send({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
        while True:
            msg = json.loads(self.p.stdout.readline())
            if msg.get("id") == self.next:
                if "error" in msg:
                    raise SystemExit(f"mcp {method}: {msg['error']}")
                return msg["result"]
    def tool(self, name, args):
        res = self.call_raw("tools/call", {"name": name, "arguments": args})
        if res.get("isError"):
            raise SystemExit(f"mcp {name}: {res['content'][0]['text']}")
        return res["structuredContent"]
    def close(self):
        self.p.stdin.close()
        self.p.wait()

def cycle_mcp(m):
    port = free_port()
    t = time.perf_counter()
    mid = m.tool("start_process", {"argv": server_argv(port)})["monitor_id"]
    ev = m.tool("wait_process", {"monitor_id": mid, "condition": {"kind": "output", "text": READY}, "timeout_seconds": 30})
    assert ev["outcome"] == "satisfied", ev
    fetch(port)
    r = m.tool("cancel_process", {"monitor_id": mid})
    took = time.perf_counter() - t
    assert r["group_empty_verified"], r
    return took

def cycle_popen():
    port = free_port()
    t = time.perf_counter()
    p = subprocess.Popen(server_argv(port), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    for line in p.stdout:
        if READY.encode() in line:
            break
    fetch(port)
    os.killpg(p.pid, signal.SIGTERM)
    p.wait()
    took = time.perf_counter() - t
    p.stdout.close()
    return took

def exec_procmon():
    t = time.perf_counter()
    r = cli("exec", "--", "true")
    took = time.perf_counter() - t
    assert r["exit_code"] == 0 and r["group_empty_verified"], r
    return took

def exec_forkexec():
    t = time.perf_counter()
    subprocess.run([forkexec, os.path.join(tmp, "slot"), "true"], check=True)
    return time.perf_counter() - t

m = MCP()
times = {k: [] for k in ("cli", "mcp", "popen", "exec", "forkexec")}
for _ in range(2):  # warm the page cache and python3's imports
    cycle_cli(); cycle_mcp(m); cycle_popen(); exec_procmon(); exec_forkexec()
for _ in range(n):
    times["cli"].append(cycle_cli())
    times["mcp"].append(cycle_mcp(m))
    times["popen"].append(cycle_popen())
    times["exec"].append(exec_procmon())
    times["forkexec"].append(exec_forkexec())
m.close()
med = {k: statistics.median(v) * 1000 for k, v in times.items()}
print(f"load: {open('/proc/loadavg').read().strip()}  (median of {n}, ms)")
for k in times:
    print(f"  {k:9s} {med[k]:8.2f} ms")
print(f"cycle  cli/popen  {med['cli'] / med['popen']:.2f}x   (target <= 1.3)")
print(f"cycle  mcp/popen  {med['mcp'] / med['popen']:.2f}x   (target <= 1.15)")
print(f"exec   exec/forkexec {med['exec'] / med['forkexec']:.2f}x   (target <= 1.3)")
PY
# Nothing of the run may be left: every monitor has its receipt.
"$tmp/procmon" list --run "$BENCH_RUN" </dev/null | python3 -c '
import json, sys
rows = json.load(sys.stdin)["monitors"]
left = [r["monitor_id"] for r in rows if r.get("status") in ("running", "settling", "needs_reconciliation")]
sys.exit(f"left running: {left}" if left else 0)'
