#!/usr/bin/env bash
# bench/owner.sh: what happens when a run's owner exits, and what 200 live
# monitors in one run cost.
#
#   1. owner exit: a run bound with --owner-pid to a `sleep 1000` this
#      script starts; 20 cooperative services (sleep 1000) started in it;
#      the owner is killed (that pid only) and the time is taken until
#      every one of the 20 shows status cancelled with reason owner_exited
#      (`procmon list` polled every 50 ms), and until the last receipt's
#      finished_at_ms. Repeated BENCH_OWNER_REPS times, median reported.
#   2. 200 monitors: a run (command_limit null, monitor_owner_grace_seconds
#      3, so a heartbeat every 1 s) with 200 `sleep 1000`; watched for
#      BENCH_WATCH seconds with `procmon list` every 5 s: every status must
#      stay running (needs_reconciliation is a missed heartbeat),
#      heartbeat_seq must advance by about one per second, the ownership
#      window must never lapse (the smallest margin left is reported). Then
#      the guardians' RSS (sum of VmRSS, and of RssAnon, the private part),
#      their CPU over the window, the machine's load; then `procmon run end`
#      and a check that all 200 services and guardians are gone.
#
# Usage: bash bench/owner.sh            (from anywhere in a clone)
#   BENCH_OWNER_REPS=7   repetitions of part 1 (5 to 10 is sensible)
#   BENCH_MONITORS=200   services in part 2
#   BENCH_WATCH=60       seconds watched in part 2
#   BENCH_PAR=4          concurrent `procmon start` calls while filling part 2
#   BENCH_KEEP=1         keep the temp dir
#
# Needs bash, go, python3. Touches nothing outside a temp dir (its own
# PROCMON_STATE_DIR); signals only the owner processes it started, by pid
# after checking their start time.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

bench_init procmon-owner

# Fallback for an interrupted run: end every run it created (which drains
# their monitors in parallel), cancel any monitor still live, and kill an
# owner it started that is still there (pid and start time must match).
bench_traps bench_ledger_cleanup

echo "building procmon into $tmp ..." >&2
bench_build procmon .

bench_python <<'PY'
import os, signal, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, sys.argv[1])  # benchlib.py, from bench/lib.sh
from benchlib import (CLK, configure, loadavg, log, med, note, pm, proc_kib, record, started, stat,
                      still_alive, track)

REPS = max(1, int(os.environ.get("BENCH_OWNER_REPS", "7")))
NMON = int(os.environ.get("BENCH_MONITORS", "200"))
WATCH = int(os.environ.get("BENCH_WATCH", "60"))
PAR = max(1, int(os.environ.get("BENCH_PAR", "4")))


def start_sleep(run, label):
    r = pm("start", "--name", label, "--", "sleep", "1000", run=run)
    assert r["status"] == "running", r
    mid = r["monitor_id"]
    note("monitor", mid)
    g = record(mid)["guardian_pid"]
    return dict(mid=mid, pid=r["pid"], pticks=track(r["pid"], f"service {r['pid']} ({label})"),
                gpid=g, gticks=track(g, f"guardian {g} ({label})"))


# --- part 1: owner exit -----------------------------------------------------
configure()  # the example settings: owner grace 30 s, 20 starts per run
log(f"part 1: {REPS} x (owner + 20 sleeps, kill the owner); load {loadavg()}")
p1 = []
for rep in range(1, REPS + 1):
    owner = subprocess.Popen(["sleep", "1000"], stdin=subprocess.DEVNULL)
    oticks = stat(owner.pid)[1]
    note("owner", owner.pid, oticks)
    run = pm("run", "new", "--owner-pid", str(owner.pid))["run_id"]
    note("run", run)
    t0 = time.perf_counter()
    mons = [start_sleep(run, f"o{rep}-{i}") for i in range(20)]
    fill_s = time.perf_counter() - t0
    lst = pm("list", run=run)["monitors"]
    assert len(lst) == 20 and all(m["status"] == "running" for m in lst), lst
    la = loadavg()
    # kill the owner: that pid only, then reap it
    t_kill_ms = time.time() * 1000
    tk = time.perf_counter()
    os.kill(owner.pid, signal.SIGTERM)
    owner.wait()
    polls, bad = 0, []
    while True:
        time.sleep(0.05)
        polls += 1
        lst = pm("list", run=run)["monitors"]
        done = [m for m in lst if m["status"] not in ("running", "settling")]
        bad = [m for m in done if not (m["status"] == "cancelled" and m.get("reason") == "owner_exited")]
        if len(done) == 20 or bad:
            break
        if time.perf_counter() - tk > 60:
            raise SystemExit(f"rep {rep}: only {len(done)} of 20 drained after 60 s")
    seen_s = time.perf_counter() - tk
    if bad:
        raise SystemExit(f"rep {rep}: unexpected terminal status: {bad[0]}")
    fin = [record(m["mid"])["receipt"]["finished_at_ms"] for m in mons]
    rc = [record(m["mid"])["receipt"] for m in mons]
    assert all(r["group_empty_verified"] and r["containment"] == "complete" for r in rc), rc
    left = still_alive([(m["pid"], m["pticks"]) for m in mons] + [(m["gpid"], m["gticks"]) for m in mons], 5,
                       step=0.01)
    pm("run", "end", run=run)
    res = dict(seen=seen_s, first=(min(fin) - t_kill_ms) / 1000, last=(max(fin) - t_kill_ms) / 1000,
               fill=fill_s, polls=polls, left=len(left), load=la)
    p1.append(res)
    log(f"  rep {rep}: all 20 cancelled/owner_exited seen after {seen_s * 1000:.0f} ms "
        f"(receipts {res['first'] * 1000:.0f}..{res['last'] * 1000:.0f} ms after the kill); "
        f"filled in {fill_s:.1f} s; left alive {len(left)}; load {la}")

# --- part 2: 200 monitors ---------------------------------------------------
configure(monitor_owner_grace_seconds=3, command_limit=None)
run = pm("run", "new")["run_id"]
note("run", run)
load_before = loadavg()
log(f"part 2: starting {NMON} sleeps ({PAR} at a time); load {load_before}")
t0 = time.perf_counter()
with ThreadPoolExecutor(PAR) as ex:
    mons = list(ex.map(lambda i: start_sleep(run, f"s{i}"), range(NMON)))
fill_s = time.perf_counter() - t0
log(f"  {NMON} started in {fill_s:.1f} s; watching for {WATCH} s")
by_mid = {m["mid"]: m for m in mons}
by_pid = {m["pid"]: m["mid"] for m in mons}


def cpu_ticks():
    """(utime, stime) summed over the guardians, in clock ticks."""
    u = k = 0
    for m in mons:
        s = stat(m["gpid"])
        if s:
            u, k = u + s[2], k + s[3]
    return u, k


samples = []  # (t, now_ms, {mid: (status, seq, expires)})
cpu0, tw0 = cpu_ticks(), time.monotonic()
next_t = tw0
while True:
    now = time.monotonic()
    if now < next_t:
        time.sleep(next_t - now)
    t = time.monotonic() - tw0
    lst = pm("list", run=run)["monitors"]
    now_ms = time.time() * 1000
    # Rows are keyed by pid: procmon list leaves monitor_id out of a
    # readable row (listRow's own MonitorID, empty and omitempty, shadows
    # the embedded view's).
    snap = {}
    for m in lst:
        mid = m.get("monitor_id") or by_pid.get(m.get("pid"))
        if mid:
            snap[mid] = (m.get("status"), m.get("heartbeat_seq"), m.get("ownership_expires_at_ms"))
    samples.append((t, now_ms, snap))
    if t >= WATCH:
        break
    next_t += 5
cpu1, tw1 = cpu_ticks(), time.monotonic()
load_after = loadavg()
mem = [proc_kib(m["gpid"], ("VmRSS", "RssAnon", "Threads")) or {} for m in mons]
threads = sum(x.get("Threads", 0) for x in mem)
rss_sum = sum(x.get("VmRSS", 0) for x in mem)
anon_sum = sum(x.get("RssAnon", 0) for x in mem)

not_running = {}  # mid -> statuses seen other than running
min_margin = None
for _, now_ms, snap in samples:
    for mid in by_mid:
        st, seq, exp = snap.get(mid, ("missing", None, None))
        if st != "running":
            not_running.setdefault(mid, set()).add(st)
            continue
        margin = exp - now_ms  # ms left in the ownership window when sampled (read before now_ms)
        min_margin = margin if min_margin is None else min(min_margin, margin)
first, last = samples[0], samples[-1]
span_s = (last[1] - first[1]) / 1000
adv = [last[2][mid][1] - first[2][mid][1] for mid in by_mid if last[2].get(mid, (None, None))[1] is not None]
steps = []  # per-5-s advance of every monitor
for a, b in zip(samples, samples[1:]):
    for mid in by_mid:
        if a[2].get(mid, (0, None))[1] is not None and b[2].get(mid, (0, None))[1] is not None:
            steps.append((b[2][mid][1] - a[2][mid][1], (b[1] - a[1]) / 1000))
lapsed = sorted(not_running)

t_end = time.perf_counter()
end = pm("run", "end", run=run)
end_s = time.perf_counter() - t_end
receipts = end["monitors"]
end_ok = (len(receipts) == NMON and not end.get("errors")
          and all(r.get("status") == "cancelled" and r.get("reason") == "run_ended" for r in receipts))
svc_left = still_alive([(m["pid"], m["pticks"]) for m in mons], 5, step=0.01)
grd_left = still_alive([(m["gpid"], m["gticks"]) for m in mons], 10, step=0.01)

# --- report -----------------------------------------------------------------
print()
print(f"part 1: owner exit -> 20 monitors drained ({REPS} reps; load at kill: {', '.join(r['load'] for r in p1)})")
print(f"{'':52} {'median':>8} {'min':>8} {'max':>8}")
for key, label in (("seen", "kill -> all 20 cancelled/owner_exited (list, 50 ms)"),
                   ("first", "kill -> first receipt finished_at_ms"),
                   ("last", "kill -> last receipt finished_at_ms")):
    xs = [r[key] * 1000 for r in p1]
    print(f"{label:52} {med(xs):>6.0f}ms {min(xs):>6.0f}ms {max(xs):>6.0f}ms")
print(f"{'starting the 20 (sequential procmon start)':52} {med([r['fill'] for r in p1]):>7.1f}s")
print(f"target: median under 1 s -> {'met' if med([r['seen'] for r in p1]) < 1 else 'NOT met'}; "
      f"left alive after drain: {sum(r['left'] for r in p1)}")
print()
print(f"part 2: {NMON} monitors, one run, heartbeat every 1 s (grace 3 s); filled in {fill_s:.1f} s")
print(f"  samples: {len(samples)} over {span_s:.1f} s (procmon list every 5 s)")
print(f"  monitors ever not running: {len(lapsed)}" + (f" {lapsed[:5]} {[sorted(not_running[m]) for m in lapsed[:5]]}" if lapsed else ""))
print(f"  heartbeat_seq advance over the window: min {min(adv)} max {max(adv)} "
      f"(expected ~{span_s:.0f}); per 5-s step: min {min(s for s, _ in steps)} max {max(s for s, _ in steps)}")
print(f"  smallest ownership margin seen: {min_margin / 1000:.2f} s of 3 s" if min_margin is not None else "  no margin")
print(f"  guardian RSS: sum VmRSS {rss_sum / 1024:.0f} MiB ({rss_sum / NMON / 1024:.1f} MiB each), "
      f"sum RssAnon {anon_sum / 1024:.0f} MiB ({anon_sum / NMON / 1024:.1f} MiB each)")
ut, kt = (cpu1[0] - cpu0[0]) / CLK, (cpu1[1] - cpu0[1]) / CLK
print(f"  guardian CPU over the window: {ut + kt:.1f} s (user {ut:.1f}, system {kt:.1f}) in {tw1 - tw0:.0f} s = "
      f"{100 * (ut + kt) / (tw1 - tw0):.1f}% of one core, {1000 * (ut + kt) / max(1, sum(adv)):.2f} ms per heartbeat; "
      f"{threads} guardian threads")
print(f"  load average: before filling {load_before}; end of window {load_after}")
print(f"  run end: {end_s:.1f} s, {len(receipts)} receipts, all cancelled/run_ended: {end_ok}; "
      f"services left {len(svc_left)}, guardians left {len(grd_left)}")

left = [what for _, _, what in still_alive(started, 0.2)]
print()
print("left behind: " + (", ".join(left[:10]) + (f" ... ({len(left)})" if len(left) > 10 else "") if left else "nothing"))
if left or not end_ok or lapsed:
    sys.exit(1)
PY
