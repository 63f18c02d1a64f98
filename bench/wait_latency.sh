#!/usr/bin/env bash
# bench/wait_latency.sh: how quickly `procmon wait` notices readiness, next
# to a bare inotify waiter measured in the same run, and what an idle wait
# costs.
#
#   readiness  a child (python3) is released through a FIFO once its waiter
#              is watching, sleeps a random 0-1 s, takes the wall time in
#              ns, prints READY and only then stores that stamp in a file.
#              Two latencies from that stamp: to the waiter process having
#              exited (seen by the driver: what the target is about), and
#              to the waiter's one line of answer on its stdout. A waiter
#              holding inotify watches pays at exit for the kernel retiring
#              them (an SRCU grace period, 0.2-15 ms), which dominates the
#              bare waiter's "returned"; procmon wait on a live monitor
#              takes its changes from the guardian and holds none.
#              Median of N for each side, the sides interleaved so that
#              load on a shared machine falls on both alike.
#                procmon  the child under `procmon start`, waited on with
#                         `procmon wait ID --output READY`
#                bare     the same child with stdout on a plain file,
#                         waited on with bench/inotifywaiter
#              and, to show where procmon's time goes, the bare waiter on
#              a monitor's output.log: the guardian's relay alone.
#   idle CPU   `procmon wait --output` on a monitor that never prints the
#              text: utime+stime from /proc/PID/stat over 10 s (after 1 s
#              to settle), as a percent of one core, with the same from
#              the threads' schedstat (ns, where a tick is too coarse);
#              then SIGINT, which must give wait_interrupted and exit 130.
#
# Usage: bash bench/wait_latency.sh     (from anywhere in a clone)
#   BENCH_N=20      samples per median (at least 20)
#   BENCH_IDLE=10   seconds of idle CPU measurement
#   BENCH_KEEP=1    keep the temp dir
#
# Needs bash, go and python3. It runs `procmon configure --enable`, whose
# example settings allow 20 starts per run, so it makes a new run (procmon
# run new) for every 20 starts. It touches nothing outside a temp dir (its
# own PROCMON_STATE_DIR), cancels every monitor it started, and signals
# only the processes it started itself, by pid, never by name.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

bench_init procmon-wait-bench

# Fallback cleanup for an interrupted run: cancel every monitor the driver
# recorded in its ledger (cancel is idempotent).
bench_traps bench_ledger_cleanup

echo "building procmon and the bare waiter into $tmp ..." >&2
bench_build procmon .
bench_build inotifywaiter ./bench/inotifywaiter
"$tmp/procmon" configure --enable >/dev/null

cat >"$tmp/child.py" <<'PY'
# The service: released through a FIFO, it waits a random 0-1 s, stamps
# the wall time, prints READY, then stores the stamp and stays up.
import random, sys, time
fifo, stamp = sys.argv[1], sys.argv[2]
open(fifo).close()
time.sleep(random.random())
t = time.time_ns()
sys.stdout.write("READY\n")
sys.stdout.flush()
with open(stamp, "w") as f:
    f.write(str(t))
time.sleep(1000)
PY

bench_python <<'PY'
import json, os, signal, subprocess, sys, time

tmp = sys.argv[1]
sys.path.insert(0, tmp)  # benchlib.py, from bench/lib.sh
from benchlib import CLK, PM, STATE, log, med, note, p10_p90, pm, stat

BARE = os.path.join(tmp, "inotifywaiter")
CHILD = ["python3", os.path.join(tmp, "child.py")]
N = max(20, int(os.environ.get("BENCH_N", "20")))
IDLE = int(os.environ.get("BENCH_IDLE", "10"))
children = []  # Popen objects of bare children, stopped at the end
slots = {"run": None, "used": 20}


def start(argv):
    """procmon start in a run with a command slot left."""
    if slots["used"] >= 20:
        slots["run"], slots["used"] = pm("run", "new")["run_id"], 0
    slots["used"] += 1
    r = pm("--run", slots["run"], "start", "--", *argv)
    note("monitor", r["monitor_id"])
    return r["monitor_id"]


def watching(pid):
    """Whether pid holds an inotify descriptor (the bare waiter) or a socket
    (procmon wait subscribes to its guardian's change notices)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target == "anon_inode:inotify" or target.startswith("socket:"):
            return True
    return False


def await_watching(p):
    # No event announces another process's new watch; look every 1 ms.
    deadline = time.monotonic() + 30
    while not watching(p.pid):
        if p.poll() is not None:
            raise SystemExit(f"waiter exited early: {p.returncode} {p.stdout.read() if p.stdout else ''}")
        if time.monotonic() > deadline:
            raise SystemExit("waiter never started watching")
        time.sleep(0.001)


def release(fifo):
    fd = os.open(fifo, os.O_WRONLY)
    os.close(fd)


def read_stamp(path):
    deadline = time.monotonic() + 10
    while True:
        try:
            with open(path) as f:
                s = f.read()
            if s:
                return int(s)
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"no stamp in {path}")
        time.sleep(0.005)


def timed(w, stamp, good):
    """Latencies from the stamp to the waiter's answer (its one line on
    stdout) and to its exit, in ms."""
    line = w.stdout.readline()
    answered = time.time_ns()
    rest = w.stdout.read()
    w.wait()
    returned = time.time_ns()
    if w.returncode != 0 or not good(line):
        raise SystemExit(f"{w.args[0]}: exit {w.returncode}: {line + rest!r}")
    t = read_stamp(stamp)
    return (answered - t) / 1e6, (returned - t) / 1e6


def sample_procmon(i, bare_on_log=False):
    """The child under procmon start, waited on by procmon wait, or (for
    the breakdown) by the bare waiter on the monitor's output.log."""
    name = f"relay{i}" if bare_on_log else f"pm{i}"
    fifo, stamp = os.path.join(tmp, f"{name}.fifo"), os.path.join(tmp, f"{name}.stamp")
    os.mkfifo(fifo)
    mid = start([*CHILD, fifo, stamp])
    try:
        if bare_on_log:
            argv = [BARE, os.path.join(STATE, "monitors", mid, "output.log"), "READY"]
        else:
            argv = [PM, "wait", mid, "--output", "READY", "--timeout", "60"]
        w = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        await_watching(w)
        release(fifo)
        return timed(w, stamp, lambda out: bare_on_log or json.loads(out).get("outcome") == "satisfied")
    finally:
        pm("cancel", "--grace", "1", mid)


def sample_bare(i):
    fifo, stamp = os.path.join(tmp, f"bare{i}.fifo"), os.path.join(tmp, f"bare{i}.stamp")
    plain = os.path.join(tmp, f"bare{i}.log")
    os.mkfifo(fifo)
    with open(plain, "ab") as out:
        c = subprocess.Popen([*CHILD, fifo, stamp], stdout=out, stdin=subprocess.DEVNULL)
    children.append(c)
    try:
        w = subprocess.Popen([BARE, plain, "READY"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        await_watching(w)
        release(fifo)
        return timed(w, stamp, lambda out: True)
    finally:
        c.kill()
        c.wait()


def cpu_ticks(pid):
    _, _, utime, stime = stat(pid)
    return utime + stime


def cpu_ns(pid):
    """CPU time of every thread of pid in ns, from schedstat: finer than
    the 1/CLK ticks of stat."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            total += int(f.read().split()[0])
    return total


def idle_cpu():
    mid = start(["sleep", "1000"])
    try:
        w = subprocess.Popen([PM, "wait", mid, "--output", "NEVER PRINTED"],
                             stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        await_watching(w)
        started = time.monotonic()
        time.sleep(1)
        t0, c0, n0 = time.monotonic(), cpu_ticks(w.pid), cpu_ns(w.pid)
        time.sleep(IDLE)
        t1, c1, n1 = time.monotonic(), cpu_ticks(w.pid), cpu_ns(w.pid)
        w.send_signal(signal.SIGINT)
        out = w.stdout.read()
        w.wait()
        err = json.loads(out).get("error", {})
        if w.returncode != 130 or err.get("code") != "wait_interrupted":
            raise SystemExit(f"SIGINT to procmon wait: exit {w.returncode}: {out!r}")
        window = (c1 - c0) / CLK / (t1 - t0) * 100
        whole = c1 / CLK / (t1 - started) * 100
        fine = (n1 - n0) / 1e9 / (t1 - t0) * 100
        return window, whole, c1 - c0, fine
    finally:
        pm("cancel", "--grace", "1", mid)


try:
    # One of each first, unmeasured, so both binaries and python are warm.
    sample_procmon("warm")
    sample_bare("warm")
    pm_wait, bare, relay = [], [], []  # (answered, returned) ms per sample
    for i in range(N):
        pm_wait.append(sample_procmon(i))
        bare.append(sample_bare(i))
        relay.append(sample_procmon(i, bare_on_log=True))
        log(f"  sample {i + 1:2d}/{N} (answered / returned ms): procmon {pm_wait[-1][0]:6.2f} / {pm_wait[-1][1]:6.2f}"
            f"   bare {bare[-1][0]:6.2f} / {bare[-1][1]:6.2f}   bare on output.log {relay[-1][0]:6.2f} / {relay[-1][1]:6.2f}")
    log(f"idle CPU: {IDLE} s of procmon wait on a monitor that never prints the text ...")
    window, whole, ticks, fine = idle_cpu()
finally:
    for c in children:
        if c.poll() is None:
            c.kill()
            c.wait()


def row(name, xs):
    lo, hi = p10_p90(xs)
    return f"  {name:14s} {med(xs):8.2f} ms   (p10 {lo:.2f} / p90 {hi:.2f})"


print()
print(f"readiness latency, median of {N} (load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs)")
for k, what in ((1, "stamp -> waiter process returned (exited)"), (0, "stamp -> waiter's answer on its stdout")):
    p, b, r = [x[k] for x in pm_wait], [x[k] for x in bare], [x[k] for x in relay]
    print(what)
    print(row("procmon wait", p))
    print(row("bare inotify", b))
    target = "   (target <= 1.3 x)" if k == 1 else "   (no target: a look at where the time goes)"
    print(f"  ratio          {med(p) / med(b):8.2f} x{target}")
    print(row("bare on log", r) + "   (the guardian's relay alone: bare waiter on output.log)")
print(f"idle procmon wait CPU over {IDLE} s: {window:.3f} % of a core   (target < 1 %)")
print(f"  utime+stime {ticks} ticks of 1/{CLK} s ({whole:.3f} % including start-up); "
      f"schedstat {fine:.4f} % of a core")
PY
