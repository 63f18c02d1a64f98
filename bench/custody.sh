#!/usr/bin/env bash
# bench/custody.sh: what procmon's custody costs, next to two baselines
# measured in the same run.
#
#   holder  bench/holder, a minimal detached custodian: re-exec in a new
#           session, spawn the child in its own group, fsync one pid file
#           (and its directory), then answer "ok" on a pipe.
#   tmux    tmux new-session -d on a private socket (what agents use today).
#
# It prints, in one table:
#   1. start -> durable running handoff, median of N wall times
#      (procmon start / holder start / tmux new-session), ratio to holder
#   2. cancel -> receipt for a cooperative child (sleep), median of N
#   3. VmRSS of the guardian, of the holder process and of the tmux server
#   4. 50 starts in a row, procmon vs holder, then all 50 cancelled / stopped
# and checks at the end that every process it started is gone.
#
# Usage: bash bench/custody.sh        (from anywhere in a clone)
#   BENCH_N=151  timed runs per median (default 151, at least 20)
#   BENCH_BURST=50  starts in a row for part 4
#   BENCH_BURST_ROUNDS=4  rounds of part 4, at least 2 (medians are reported)
#   BENCH_PROCMON=/path/to/procmon  bench a prebuilt binary instead of
#                   building the checkout (e.g. a CGO_ENABLED=0 build)
#   BENCH_KEEP=1    keep the temp dir (state, holder dirs) for inspection
#
# Needs: bash, go, python3 (timing loop and statistics), tmux (the tmux
# column is skipped when it is missing). It touches nothing outside a temp
# dir: a private PROCMON_STATE_DIR, a private tmux server (socket in the
# temp dir), and only the processes it started itself (by pid, process
# group or its own binary's path, never by name).
#
# Notes on reading it: every figure is the wall time of the CLI as seen by a
# python3 subprocess loop, so each includes one fork+exec; the "timer floor"
# row (running `true`) is that overhead. The three tools are interleaved so
# that drift hits all of them alike; on a shared machine the header's "CPU
# idle" and the warning say when the figures measure contention. The seed's
# settings (configure --enable) allow 20 commands per run; this run takes
# ~360 slots, so it stores the same settings with command_limit null (the
# slot is still taken, durably, on every start). The start ratio comes
# with a 90% bootstrap interval, the uncertainty of this run's figure; on
# a shared 2-CPU machine runs differ by more than it says, since the load
# beside them changes (with N=61 back-to-back runs landed up to 0.15
# apart). On ext4 without a journal,
# creating a file skips the inodes freed in the last few minutes: right
# after a run that deleted thousands of files under $TMPDIR (the test
# suite does), each file a start makes there cost up to 0.17 ms instead of
# 0.01, and procmon makes one more than the holder (its control socket).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

bench_init procmon-bench
# A private tmux server: its socket lives in the temp dir (tmux -S), so
# that nothing is left in /tmp/tmux-UID when the server is killed.
sock="$tmp/tmux-procmon-bench-$$"
export BENCH_TMUX_SOCK="$sock"

# Fallback cleanup for an interrupted run (the driver below cleans up and
# verifies on its own, then leaves $tmp/clean). Everything here is found
# through the temp dir, never by process name: the monitors of the private
# state dir, the guardians and holders whose executable is this run's own
# copy ($tmp/procmon, $tmp/holder), the holder dirs, the private tmux server.
ours() { # pids of live processes running this run's binaries
	local p exe
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null) || continue
		if [[ "$exe" == "$tmp/procmon" || "$exe" == "$tmp/holder" ]]; then
			echo "${p#/proc/}"
		fi
	done
}
cleanup() {
	local rc=$? d left=""
	trap - INT TERM
	if [[ ! -e "$tmp/clean" && -x "$tmp/procmon" ]]; then
		echo "cleaning up after an interrupted run ..." >&2
		for _ in 1 2 3 4 5; do
			sleep 0.3 # let a start in flight reach its handoff
			for d in "$PROCMON_STATE_DIR"/monitors/m_*; do
				if [[ -d "$d" ]]; then
					"$tmp/procmon" cancel --grace 1 "${d##*/}" >/dev/null 2>&1 || true
				fi
			done
			for d in "$tmp"/holders/*; do
				if [[ -d "$d" ]]; then
					"$tmp/holder" stop "$d" >/dev/null 2>&1 || true
				fi
			done
			left=$(ours)
			[[ -z "$left" ]] && break
		done
	fi
	if command -v tmux >/dev/null 2>&1; then
		tmux -S "$sock" kill-server >/dev/null 2>&1 || true
	fi
	if [[ -n "$left" ]]; then
		# the temp dir is kept: it says what those processes were doing
		echo "NOT CLEAN: still running from this run: ${left//$'\n'/ }; kept $tmp" >&2
		exit 1
	fi
	bench_finish "$rc"
}
bench_traps cleanup

echo "building procmon and the holder into $tmp ..." >&2
if [[ -n "${BENCH_PROCMON:-}" ]]; then
	cp "$BENCH_PROCMON" "$tmp/procmon" # a prebuilt variant, to compare builds
else
	bench_build procmon .
fi
bench_build holder ./bench/holder

bench_python <<'PY'
import json, os, shutil, statistics, subprocess, sys, time

tmp = sys.argv[1]
sys.path.insert(0, tmp)  # benchlib.py, from bench/lib.sh
from benchlib import PM, call, configure, kib, log, med, p10_p90, proc_kib, ratio_interval, record, started, still_alive, track

HD = os.path.join(tmp, "holder")
N = max(20, int(os.environ.get("BENCH_N", "151")))
BURST = int(os.environ.get("BENCH_BURST", "50"))
ROUNDS = max(2, int(os.environ.get("BENCH_BURST_ROUNDS", "4")))
WARM = 3
HAVE_TMUX = shutil.which("tmux") is not None
TM = ["tmux", "-S", os.environ["BENCH_TMUX_SOCK"], "-f", "/dev/null"]
SLEEP = ["sleep", "1000"]


def guardian_pid(mid):
    return record(mid)["guardian_pid"]


# --- the three ways to start a service -------------------------------------
nth = {"pm": 0, "hd": 0, "tm": 0}
monitors, holders, sessions = [], [], []


def pm_start():
    ms, out = call([PM, "start", "--", *SLEEP])
    r = json.loads(out)
    assert r["status"] == "running" and r["pid"] == r["pgid"], r
    mid = r["monitor_id"]
    monitors.append(mid)
    track(r["pid"], f"procmon child {r['pid']}")
    track(guardian_pid(mid), f"guardian of {mid}")
    return ms, mid


def hd_start():
    nth["hd"] += 1
    d = os.path.join(tmp, "holders", str(nth["hd"]))
    ms, out = call([HD, "start", d, "--", *SLEEP])
    r = json.loads(out)
    holders.append(d)
    track(r["pid"], f"holder child {r['pid']}")
    track(r["holder_pid"], f"holder process {r['holder_pid']}")
    return ms, (d, r["holder_pid"])


def tm_start():
    nth["tm"] += 1
    name = f"s{nth['tm']}"
    ms, _ = call(TM + ["new-session", "-d", "-s", name, " ".join(SLEEP)])
    sessions.append(name)
    return ms, name


def tm_server_pid():
    _, out = call(TM + ["display-message", "-p", "#{pid}"])
    return int(out)


def tm_pane_pids():
    p = subprocess.run(TM + ["list-panes", "-a", "-F", "#{pane_pid}"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    return [int(x) for x in p.stdout.split()] if p.returncode == 0 else []


def pm_cancel(mid):
    ms, out = call([PM, "cancel", mid])
    r = json.loads(out)
    assert r["status"] == "cancelled" and r["group_empty_verified"] and r["containment"] == "complete", r
    return ms


def hd_stop(d):
    ms, _ = call([HD, "stop", d])
    return ms


def cpu_idle(secs):
    """Share of CPU time idle over secs: what the rest of the machine leaves us."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return v[3] + v[4], sum(v[:8])
    i0, t0 = sample()
    time.sleep(secs)
    i1, t1 = sample()
    return (i1 - i0) / max(t1 - t0, 1)


def spread(xs):
    return "p10 {:.1f} / p90 {:.1f}".format(*p10_p90(xs))


rows = []  # (measure, procmon, holder, tmux, ratio, target, verdict)
failures = []


def verdict(ok):
    return "ok" if ok else "MISSED"


try:
    # Settings: the seed's example (configure --enable) with the per-run
    # command limit lifted, since this run takes ~360 command slots and a
    # slot costs the same durable write with or without a limit.
    configure(command_limit=None)

    load0 = open("/proc/loadavg").read().split()[0]
    idle0 = cpu_idle(0.5)
    nprocs = sum(1 for d in os.listdir("/proc") if d.isdigit())
    floor = [call(["true"])[0] for _ in range(WARM + N)][WARM:]

    # 3. RSS: one service each, measured once they have settled.
    log("RSS ...")
    _, rss_mid = pm_start()
    _, (rss_hd, rss_hpid) = hd_start()
    rss_tm = None
    if HAVE_TMUX:
        tm_start()
        rss_tm = tm_server_pid()
        track(rss_tm, "tmux server")
    time.sleep(0.5)
    rss_g = guardian_pid(rss_mid)
    gk = proc_kib(rss_g, ("VmRSS", "RssAnon", "RssFile")) or {}
    rss = {"guardian": gk.get("VmRSS"), "guardian_anon": gk.get("RssAnon"),
           "guardian_file": gk.get("RssFile"), "holder": kib(rss_hpid),
           "tmux": kib(rss_tm) if rss_tm else None}
    bench_t0 = time.monotonic()

    # 1. start -> durable running handoff, interleaved so drift hits all three.
    log(f"start x{WARM}+{N} ...")
    starters = [("pm", pm_start), ("hd", hd_start)] + ([("tm", tm_start)] if HAVE_TMUX else [])
    for _ in range(WARM):
        for _, f in starters:
            f()
    t = {k: [] for k, _ in starters}
    pm_timed, hd_timed = [], []
    for i in range(N):
        order = starters[i % len(starters):] + starters[:i % len(starters)]
        for k, f in order:
            ms, ref = f()
            t[k].append(ms)
            if k == "pm":
                pm_timed.append(ref)
            elif k == "hd":
                hd_timed.append(ref[0])
    r1 = med(t["pm"]) / med(t["hd"])
    rows.append(("start -> running (median ms)", f"{med(t['pm']):.1f}", f"{med(t['hd']):.1f}",
                 f"{med(t['tm']):.1f}" if HAVE_TMUX else "-", f"{r1:.2f}x", "<= 1.5x holder", verdict(r1 <= 1.5)))
    rows.append(("  spread (ms)", spread(t["pm"]), spread(t["hd"]), spread(t["tm"]) if HAVE_TMUX else "-", "", "", ""))
    lo, hi = ratio_interval(t["pm"], t["hd"])
    rows.append(("  pm/holder, 90% bootstrap interval", "", "", "", f"{lo:.2f}-{hi:.2f}", "", ""))

    # 2. cancel -> receipt (cooperative sleep), holder stop alongside.
    log(f"cancel x{WARM}+{N} ...")
    for mid in monitors[1:1 + WARM]:
        pm_cancel(mid)
    for d in holders[1:1 + WARM]:
        hd_stop(d)
    c = {"pm": [], "hd": []}
    for mid, d in zip(pm_timed, hd_timed):
        c["pm"].append(pm_cancel(mid))
        c["hd"].append(hd_stop(d))
    rows.append(("cancel -> receipt (median ms)", f"{med(c['pm']):.1f}", f"{med(c['hd']):.1f} (stop)", "-",
                 f"{med(c['pm']) / med(c['hd']):.2f}x", "<= 2x stop", verdict(med(c["pm"]) <= 2 * med(c["hd"]))))
    rows.append(("  spread (ms)", spread(c["pm"]), spread(c["hd"]), "-", "", "", ""))

    # 4. BURST starts in a row, then all cancelled / stopped. ROUNDS rounds,
    # in turn holder first and procmon first, so that drift on a shared
    # machine (and the work of the other tool's processes, just started)
    # does not favour either; the figures are their medians: one round can
    # be off by a third on a busy machine.
    log(f"{BURST} in a row, {ROUNDS} rounds ...")
    burst = {"pm": [], "hd": []}
    down = {"pm": [], "hd": []}
    pss_g = None
    for rnd in range(ROUNDS):
        order = (("hd", hd_start), ("pm", pm_start)) if rnd % 2 == 0 else (("pm", pm_start), ("hd", hd_start))
        refs = {}
        for k, f in order:
            f()  # one warm start right before
            refs[k] = []
            t0 = time.perf_counter_ns()
            for _ in range(BURST):
                refs[k].append(f()[1])
            burst[k].append((time.perf_counter_ns() - t0) / 1e6)
        if pss_g is None:
            # What one more guardian costs once BURST of them share the binary's pages.
            pss_g = kib(guardian_pid(refs["pm"][-1]), "Pss", "smaps_rollup")
        t0 = time.perf_counter_ns()
        for mid in refs["pm"]:
            pm_cancel(mid)
        down["pm"].append((time.perf_counter_ns() - t0) / 1e6)
        t0 = time.perf_counter_ns()
        for d, _ in refs["hd"]:
            hd_stop(d)
        down["hd"].append((time.perf_counter_ns() - t0) / 1e6)
    bpm, bhd = med(burst["pm"]), med(burst["hd"])
    r4 = bpm / bhd
    rows.append((f"{BURST} starts in a row (median ms)", f"{bpm:.0f}", f"{bhd:.0f}", "-",
                 f"{r4:.2f}x", "<= 1.5x holder", verdict(r4 <= 1.5)))
    rows.append(("  rounds (ms)", " / ".join(f"{x:.0f}" for x in burst["pm"]), " / ".join(f"{x:.0f}" for x in burst["hd"]), "", "", "", ""))
    tc, th = med(down["pm"]), med(down["hd"])
    rows.append((f"then cancel/stop all {BURST} (median ms)", f"{tc:.0f}", f"{th:.0f}", "-", f"{tc / th:.2f}x", "", ""))

    # RSS again, now that the first guardian has lived through the bench.
    rss_later = kib(rss_g)
    later_s = time.monotonic() - bench_t0 + 0.5
    mib = lambda k: f"{k / 1024:.1f}" if k is not None else "?"
    rows.append(("RSS after start (MiB)", mib(rss["guardian"]), mib(rss["holder"]), mib(rss["tmux"]) if HAVE_TMUX else "-",
                 f"{rss['guardian'] / rss['holder']:.1f}x", "guardian <= 6 MiB", verdict(rss["guardian"] <= 6 * 1024)))
    rows.append(("  guardian anon / file-backed", f"{mib(rss['guardian_anon'])} / {mib(rss['guardian_file'])}", "", "", "", "", ""))
    rows.append((f"  guardian RSS after {later_s:.0f} s", mib(rss_later), "", "", "", "", ""))
    rows.append((f"  guardian PSS, {BURST} alive", mib(pss_g), "", "", "", "", ""))
    rows.append(("timer floor: run `true` (median ms)", f"{med(floor):.1f}", "", "", "", "", ""))
finally:
    # Cancel / stop everything still running, then verify all of it is gone.
    for mid in monitors:
        try:
            subprocess.run([PM, "cancel", mid], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        except Exception as e:
            log(f"cancel {mid}: {e}")
    for d in holders:
        subprocess.run([HD, "stop", d], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if HAVE_TMUX:
        for pid in tm_pane_pids():
            track(pid, f"tmux pane {pid}")
        subprocess.run(TM + ["kill-server"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    left = [w for _, _, w in still_alive(started, 5)]

if not left:
    open(os.path.join(tmp, "clean"), "w").close()  # nothing for the shell's fallback to do
if left:
    print(f"NOT CLEAN: {len(left)} of {len(started)} processes still alive: " + ", ".join(left[:10]))
    sys.exit(1)

head = ("measure", "procmon", "holder", "tmux", "pm/holder", "target", "")
w = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
fmt = lambda r: "  ".join(str(x).ljust(w[i]) if i == 0 else str(x).rjust(w[i]) if i < 5 else str(x).ljust(w[i])
                          for i, x in enumerate(r)).rstrip()
load1 = open("/proc/loadavg").read().split()[0]
bi = subprocess.run(["go", "version", "-m", PM], stdout=subprocess.PIPE, text=True).stdout
cgo = "CGO_ENABLED=1" if "CGO_ENABLED=1" in bi else "CGO_ENABLED=0"
with open(PM, "rb") as f:
    linked = "dynamically linked" if b"ld-linux" in f.read(4096) else "static"
print(f"procmon custody bench: N={N} (after {WARM} warm-ups each), {os.cpu_count()} CPUs, "
      f"{subprocess.run(['uname', '-r'], stdout=subprocess.PIPE, text=True).stdout.strip()}, "
      f"load {load0} -> {load1}, CPU idle before start {idle0:.0%}, {nprocs} processes on the machine")
print(f"procmon binary: {cgo}, {linked}, {os.path.getsize(PM) / 2**20:.1f} MiB; holder {os.path.getsize(HD) / 2**20:.1f} MiB")
print(fmt(head))
print("  ".join("-" * x for x in w))
for r in rows:
    print(fmt(r))
if med(floor) > 2.5 or idle0 < 0.6:
    print(f"WARNING: the machine is busy (CPU idle {idle0:.0%} before start, running `true` takes {med(floor):.1f} ms): "
          "these figures measure contention as much as procmon; run again when it is idle")
print(f"cleanup: all {len(started)} started processes (children, guardians, holders, tmux) are gone")
PY
