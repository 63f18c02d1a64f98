#!/usr/bin/env bash
# bench/throughput.sh: end-to-end output throughput of procmon's guardian,
# next to a baseline measured in the same run.
#
#   baseline  bench/writer writes 256 MiB of 1 KiB log lines straight into a
#             file (page cache; and once more with an fsync at the end,
#             since the guardian fsyncs output.log before its receipt)
#   guardian  the same writer under `procmon start`, with 40 registered
#             secrets (random 32-byte strings in the start request), no
#             output cap: timed from just before `procmon start` until the
#             monitor's status is `exited` with all 256 MiB in output.log
#             (record polled every 50 ms; the receipt's finished_at_ms is
#             reported as well)
#   stored    the same two compared from the writer's first write, by its
#             own clock: to its last write into the file returning, and to
#             the guardian's last write into output.log (the file's mtime,
#             which the kernel stamps at its tick, a few ms): neither the
#             start, nor the fsync before the receipt, nor the polling
#   one line  the writer sends the same 256 MiB as one line with no newline
#   stand-in  bench/redactprof -copy: the guardian's copy loop (1 MiB pipe,
#             256 KiB reads, GOMAXPROCS 1, O_APPEND log, fsync) outside
#             procmon, with and without the redactor: where the time goes
#
# While a guardian runs its VmRSS is sampled every 100 ms (min/max, and
# the largest VmHWM read; the kernel's RSS counters are approximate to a
# few hundred KiB), and its CPU time (utime+stime) is read so
# that MiB per guardian CPU-second can be given: on a shared, loaded
# machine the wall figure says as much about the neighbours as about
# procmon. output.log is checked byte for byte against the baseline file
# (sha256), so nothing was redacted, lost or reordered.
#
# Usage: bash bench/throughput.sh       (from anywhere in a clone)
#   BENCH_REPS=3        repetitions of baseline + guardian (median reported)
#   BENCH_MIB=256       payload size in MiB
#   BENCH_SECRETS=40    registered secrets
#   BENCH_PERF=1        one extra guardian run under `perf record -g -p`
#                       (needs perf); prints the top symbols
#   BENCH_KEEP=1        keep the temp dir
#
# Needs bash, go, python3. Touches nothing outside a temp dir (its own
# PROCMON_STATE_DIR); signals only the processes it started, by pid.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

bench_init procmon-throughput

# Fallback for an interrupted run: end the run and cancel whatever monitor
# is still live (cancel is idempotent).
bench_traps bench_ledger_cleanup

echo "building procmon and bench/writer into $tmp ..." >&2
bench_build procmon .
bench_build writer ./bench/writer
bench_build redactprof ./bench/redactprof

bench_python <<'PY'
import hashlib, json, os, secrets, shutil, signal, string, subprocess, sys, threading, time

tmp = sys.argv[1]
sys.path.insert(0, tmp)  # benchlib.py, from bench/lib.sh
from benchlib import (CLK, STATE, configure, loadavg, log, med, note, pm, proc_kib, record, started, stat,
                      still_alive, track)

WR = os.path.join(tmp, "writer")
RP = os.path.join(tmp, "redactprof")
POOL = os.path.join(tmp, "pool.bin")
REPS = max(1, int(os.environ.get("BENCH_REPS", "3")))
MIB = int(os.environ.get("BENCH_MIB", "256"))
NBYTES = MIB << 20
NSECRETS = int(os.environ.get("BENCH_SECRETS", "40"))
PERF = os.environ.get("BENCH_PERF", "") not in ("", "0") and shutil.which("perf")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while b := f.read(4 << 20):
            h.update(b)
    return h.hexdigest()


# --- setup -----------------------------------------------------------------
configure(max_output_bytes=None, command_limit=None)  # no output cap, as many starts as it takes
run_id = pm("run", "new")["run_id"]
os.environ["PROCMON_RUN"] = run_id
note("run", run_id)
subprocess.run([WR, "-mkpool", POOL], check=True)
log(f"run {run_id}; payload {MIB} MiB of 1 KiB lines; {NSECRETS} secrets; {REPS} reps; load {loadavg()}")


# --- baseline ---------------------------------------------------------------
def baseline(rep, fsync):
    path = os.path.join(tmp, f"baseline-{rep}{'-fsync' if fsync else ''}.out")
    st = os.path.join(tmp, "baseline-stats.json")
    os.sync()
    t0 = time.perf_counter()
    subprocess.run([WR, "-pool", POOL, "-bytes", str(NBYTES), "-out", path, "-stats", st]
                   + (["-fsync"] if fsync else []), check=True)
    wall = time.perf_counter() - t0
    assert os.path.getsize(path) == NBYTES
    with open(st) as f:
        w = json.load(f)
    return wall, path, (w["end_ns"] - w["start_ns"]) / 1e9


def standin(rep, redact):
    """writer | redactprof -copy: the guardian's loop without procmon."""
    path = os.path.join(tmp, f"standin-{rep}.out")
    os.sync()
    t0 = time.perf_counter()
    w = subprocess.Popen([WR, "-pool", POOL, "-bytes", str(NBYTES)], stdout=subprocess.PIPE)
    c = subprocess.Popen([RP, "-copy", "-out", path, "-copy-secrets", str(NSECRETS)]
                         + ([] if redact else ["-no-redact"]), stdin=w.stdout, stdout=subprocess.PIPE)
    w.stdout.close()
    out, _ = c.communicate()
    w.wait()
    wall = time.perf_counter() - t0
    assert c.returncode == 0 and w.returncode == 0 and os.path.getsize(path) == NBYTES
    os.remove(path)
    return wall, json.loads(out)["cpu_s"]


# --- one guardian run -------------------------------------------------------
def sampler(pid, ticks, stop, out):
    """Every 100 ms: VmRSS, VmHWM and CPU ticks of the guardian, until it
    is gone or stop is set."""
    while not stop.is_set():
        s = stat(pid)
        m = proc_kib(pid, ("VmRSS", "VmHWM"))
        if s is None or s[1] != ticks or s[0] in ("Z", "X") or m is None:
            break
        out.append((time.monotonic(), m["VmRSS"], m["VmHWM"], s[2] + s[3]))
        stop.wait(0.1)


def guardian_run(label, extra_args=(), perf_out=None):
    secs = ["".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32)) for _ in range(NSECRETS)]
    wstats = os.path.join(tmp, f"writer-{label}.json")
    argv = [WR, "-pool", POOL, "-bytes", str(NBYTES), "-stats", wstats, *extra_args]
    body = json.dumps({"request": {"argv": argv, "secrets": secs, "name": label}}).encode()
    os.sync()
    la = loadavg()
    t0_wall_ms = time.time() * 1000
    t0 = time.perf_counter()
    r = pm("start", stdin=body)
    t_started = time.perf_counter() - t0
    mid = r["monitor_id"]
    note("monitor", mid)
    rec = record(mid)
    gpid = rec["guardian_pid"]
    gticks = track(gpid, f"guardian {gpid} of {label}")
    track(r["pid"], f"writer {r['pid']} ({label})")
    samples, stop = [], threading.Event()
    th = threading.Thread(target=sampler, args=(gpid, gticks if gticks is not None else -1, stop, samples),
                          daemon=True)
    th.start()
    perf = None
    if perf_out:
        perf = subprocess.Popen(["perf", "record", "-q", "-F", "1999", "-g", "-o", perf_out, "-p", str(gpid)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Wait for the receipt: one small file read every 50 ms.
    deadline = time.perf_counter() + 600
    while True:
        rec = record(mid)
        if rec.get("receipt"):
            break
        if time.perf_counter() > deadline:
            raise SystemExit(f"{label}: no receipt after 600 s")
        time.sleep(0.05)
    t_done = time.perf_counter() - t0
    stop.set()
    th.join()
    if perf:
        perf.send_signal(signal.SIGINT)
        perf.wait()
    st = pm("status", mid)  # the CLI's view must agree
    log_st = os.stat(os.path.join(STATE, "monitors", mid, "output.log"))
    size = log_st.st_size
    rcpt = rec["receipt"]
    with open(wstats) as f:
        w = json.load(f)
    child_write_s = (w["end_ns"] - w["start_ns"]) / 1e9
    rss = [s[1] for s in samples]
    # (a run too short for one sample with a CPU tick gives nan)
    cpu_s = (samples[-1][3] / CLK) if samples and samples[-1][3] > 0 else float("nan")
    return dict(
        mid=mid, status=st["status"], receipt_status=rcpt["status"], size=size, load=la,
        t_started=t_started, t_done=t_done, t_receipt=(rcpt["finished_at_ms"] - t0_wall_ms) / 1000,
        child_write_s=child_write_s, stored_s=(log_st.st_mtime_ns - w["start_ns"]) / 1e9,
        exit_to_receipt_s=(rcpt["finished_at_ms"] - w["end_ns"] / 1e6) / 1000,
        rss_min=min(rss) if rss else None, rss_max=max(rss) if rss else None,
        hwm=max(s[2] for s in samples) if samples else None, nsamples=len(samples), cpu_s=cpu_s,
        drained=rcpt["output_drained"], lost=rec.get("log_bytes_lost", 0), log_error=rec.get("log_error"),
    )


# --- measurements -----------------------------------------------------------
base, base_sync, base_w, runs, copy_raw, copy_red = [], [], [], [], [], []
ref_hash = None
for rep in range(1, REPS + 1):
    wall, path, write_s = baseline(rep, False)
    base.append(wall)
    base_w.append(write_s)
    if ref_hash is None:
        ref_hash = sha256(path)
    os.remove(path)
    wall_s, path, _ = baseline(rep, True)
    base_sync.append(wall_s)
    os.remove(path)
    copy_raw.append(standin(rep, False))
    copy_red.append(standin(rep, True))
    res = guardian_run(f"lines-{rep}")
    res["same_bytes"] = sha256(os.path.join(STATE, "monitors", res["mid"], "output.log")) == ref_hash
    runs.append(res)
    log(f"rep {rep}: baseline {MIB / wall:.0f} MiB/s (+fsync {MIB / wall_s:.0f}); stand-in loop "
        f"{MIB / copy_raw[-1][0]:.0f} (redacting {MIB / copy_red[-1][0]:.0f}); guardian "
        f"{MIB / res['t_done']:.0f} MiB/s wall, {MIB / res['cpu_s']:.0f} MiB/guardian-CPU-s, "
        f"status {res['status']}, {res['size']} bytes, same bytes {res['same_bytes']}, "
        f"RSS {res['rss_min']}..{res['rss_max']} KiB, load {res['load']}")
    # output.log of a finished monitor is not needed any more: free the disk
    os.remove(os.path.join(STATE, "monitors", res["mid"], "output.log"))

one = guardian_run("oneline", ["-oneline"])
log(f"one line: {MIB / one['t_done']:.0f} MiB/s, status {one['status']}, {one['size']} bytes, "
    f"RSS {one['rss_min']}..{one['rss_max']} KiB (HWM {one['hwm']})")
os.remove(os.path.join(STATE, "monitors", one["mid"], "output.log"))

perf_top = None
if PERF:
    pdata = os.path.join(tmp, "guardian.perf")
    pres = guardian_run("perf", perf_out=pdata)
    os.remove(os.path.join(STATE, "monitors", pres["mid"], "output.log"))
    rep_ = subprocess.run(["perf", "report", "-i", pdata, "--stdio", "--no-children", "-g", "none",
                           "--percent-limit", "1.5"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    perf_top = [l for l in rep_.stdout.splitlines() if l.strip() and not l.startswith("#")][:25]

# --- report -----------------------------------------------------------------
def f0(x):
    return f"{x:.0f}"


ok = all(r["status"] == "exited" and r["size"] == NBYTES and r["same_bytes"] and r["drained"] for r in runs)
b_mibs = MIB / med(base)
bs_mibs = MIB / med(base_sync)
g_mibs = MIB / med([r["t_done"] for r in runs])
g_rcpt = MIB / med([r["t_receipt"] for r in runs])
g_cpu = MIB / med([r["cpu_s"] for r in runs])
print()
print(f"payload {MIB} MiB in 1 KiB lines, {NSECRETS} secrets, median of {REPS}; load during runs: "
      + ", ".join(r["load"] for r in runs))
print(f"{'':44} {'MiB/s':>8} {'vs file':>8}")
print(f"{'baseline: writer -> file (page cache)':44} {f0(b_mibs):>8} {'1.00':>8}")
print(f"{'baseline: writer -> file + fsync':44} {f0(bs_mibs):>8} {bs_mibs / b_mibs:>8.2f}")
print(f"{'guardian: start -> status exited (polled)':44} {f0(g_mibs):>8} {g_mibs / b_mibs:>8.2f}   budget >= 0.80 of the writer")
print(f"{'guardian: start -> receipt finished_at_ms':44} {f0(g_rcpt):>8} {g_rcpt / b_mibs:>8.2f}")
print(f"{'guardian: per guardian CPU-second':44} {f0(g_cpu):>8}")
bw_mibs = MIB / med(base_w)
gs_mibs = MIB / med([r["stored_s"] for r in runs])
print("from the first write, by the writer's clock:")
print(f"{'  writer -> file, last write returned':44} {f0(bw_mibs):>8} {'1.00':>8}")
print(f"{'  guardian: output.log complete (its mtime)':44} {f0(gs_mibs):>8} {gs_mibs / bw_mibs:>8.2f}   "
      "(no start, no fsync, no polling on either side)")
print(f"{'child write phase (pipe-bound)':44} {f0(MIB / med([r['child_write_s'] for r in runs])):>8}")
for label, xs in (("stand-in loop, no redaction", copy_raw), ("stand-in loop, redaction", copy_red)):
    mw = MIB / med([x[0] for x in xs])
    print(f"{label:44} {f0(mw):>8} {mw / b_mibs:>8.2f}   {MIB / med([x[1] for x in xs]):.0f} MiB per loop CPU-second")
print(f"start handoff {med([r['t_started'] for r in runs]) * 1000:.0f} ms; child's last write -> receipt "
      f"{med([r['exit_to_receipt_s'] for r in runs]) * 1000:.0f} ms (drain + fsync of output.log)")
print(f"all runs exited with {NBYTES} bytes identical to the baseline file: {ok}")
print()
print(f"{'guardian VmRSS (KiB)':28} {'min':>8} {'max':>8} {'VmHWM':>8} {'samples':>8}")
for r in runs:
    print(f"{'1 KiB lines ' + r['mid'][-6:]:28} {r['rss_min']:>8} {r['rss_max']:>8} {r['hwm']:>8} {r['nsamples']:>8}")
print(f"{f'one {MIB} MiB line':28} {one['rss_min']:>8} {one['rss_max']:>8} {one['hwm']:>8} {one['nsamples']:>8}"
      f"   ({one['status']}, {one['size']} bytes stored, {MIB / one['t_done']:.0f} MiB/s)")
if perf_top:
    print()
    print("perf record -g -p <guardian> (self time, top symbols):")
    for l in perf_top:
        print("  " + l)

# --- everything started is gone ---------------------------------------------
left = [what for _, _, what in still_alive(started, 0.5)]
for mid in [r["mid"] for r in runs] + [one["mid"]]:
    assert record(mid).get("receipt"), mid
pm("run", "end")
print()
print("left behind: " + (", ".join(left) if left else "nothing"))
if left or not ok:
    sys.exit(1)
PY
