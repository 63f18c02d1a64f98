# shellcheck shell=bash
# bench/lib.sh: what the bench scripts share. Source it, do not run it:
#
#   . "$(dirname "$0")/lib.sh"
#
# Every bench here is a bash wrapper (a temp dir, the builds, a fallback
# clean-up for a run cut short) around a python3 driver that measures. The
# bash half is the functions below; the driver's half is the python module
# that bench_python hands it (at the end of this file), so that a process,
# a figure or a leftover is looked at the same way in every bench.
#
# The functions set and read two globals: root (the checkout) and tmp (this
# run's temp dir, removed at exit unless BENCH_KEEP is set).

# bench_init PREFIX: sets root and tmp (a new $TMPDIR/PREFIX.XXXXXX) and
# gives procmon a private state dir in tmp, outside any run of the caller:
# a bench must never see or touch the user's own monitors and settings.
bench_init() {
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
	export PROCMON_STATE_DIR="$tmp/state"
	unset PROCMON_RUN
}

# bench_traps CLEANUP: runs the function CLEANUP on every exit. INT and
# TERM are turned into an exit (status 130) so that ^C cleans up too.
bench_traps() {
	# shellcheck disable=SC2064 # the name is meant to be expanded now
	trap "$1" EXIT
	trap 'exit 130' INT TERM
}

# bench_build NAME PKG: builds PKG (a package path in the checkout) into
# $tmp/NAME with CGO_ENABLED=0: the static build the README installs,
# which is what the start-up figures should be of. (The helpers under
# bench/ use no cgo, so for them the setting changes nothing.)
#
# The binary is then copied into place, as the README installs it. The
# linker writes its output through a mapping, which leaves the file in the
# page cache in 4 KiB pages; a copy (or a read from disk) leaves it in large
# folios, which exec maps with fewer faults. Measured here, a guardian
# boots about 0.3 ms faster from a copy and the holder about 0.2 ms; a
# procmon start, which executes the binary twice, 0.4 to 0.65 ms. Without
# the copy each binary would be timed as it is only until the cache drops it.
bench_build() {
	(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/$1.linked" "$2")
	install -m 0755 "$tmp/$1.linked" "$tmp/$1"
	rm -f "$tmp/$1.linked"
}

# bench_start_ticks PID: prints PID's start time in clock ticks (field 22
# of /proc/PID/stat), nothing when it is gone or a zombie. A pid and its
# start time together name one process, so a recycled pid never matches.
bench_start_ticks() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	s=${s##*) } # the fields after "(comm) ", comm may hold spaces
	# shellcheck disable=SC2086 # split on purpose: one positional a field
	set -- $s
	[[ $1 == Z || $1 == X ]] || echo "${20}"
}

# bench_kill_if_same PID TICKS: SIGKILL to PID only while it is still the
# process that started at TICKS (never a stranger that got the pid since).
bench_kill_if_same() {
	if [[ -n "$2" && "$(bench_start_ticks "$1")" == "$2" ]]; then
		kill -KILL "$1" 2>/dev/null || true
	fi
}

# bench_replay_ledger: the clean-up of a run cut short, from the ledger its
# driver appends to as it goes ($tmp/ledger, lines "run ID", "owner PID
# TICKS" and "monitor ID"; see note() below). Every run is ended first,
# which drains its monitors in parallel, and every owner process still
# there is killed (by pid, only while its start time matches); then every
# monitor is cancelled, which does nothing to one that has ended already.
bench_replay_ledger() {
	local kind arg ticks
	[[ -s "$tmp/ledger" && -x "$tmp/procmon" ]] || return 0
	while read -r kind arg ticks; do
		case "$kind" in
		run) PROCMON_RUN="$arg" "$tmp/procmon" run end >/dev/null 2>&1 || true ;;
		owner) bench_kill_if_same "$arg" "$ticks" ;;
		esac
	done <"$tmp/ledger"
	while read -r kind arg _; do
		if [[ $kind == monitor ]]; then
			"$tmp/procmon" cancel --grace 1 "$arg" >/dev/null 2>&1 || true
		fi
	done <"$tmp/ledger"
}

# bench_ledger_cleanup: the EXIT handler of a bench whose driver keeps a
# ledger (bench_traps bench_ledger_cleanup): replays it, then bench_finish
# with the script's exit status.
bench_ledger_cleanup() {
	local rc=$?
	bench_replay_ledger
	bench_finish "$rc"
}

# bench_finish RC: removes the temp dir (or, with BENCH_KEEP set, says
# where it is kept) and exits with RC. The last step of every cleanup.
bench_finish() {
	if [[ -z "${BENCH_KEEP:-}" ]]; then
		rm -rf "$tmp"
	else
		echo "kept $tmp" >&2
	fi
	exit "$1"
}

# bench_python: runs the python3 driver read from stdin (a heredoc), with
# $tmp as its one argument. The shared helpers are written next to it as
# $tmp/benchlib.py; the driver imports them after putting $tmp first on
# sys.path (they are not put on PYTHONPATH, which the processes the bench
# starts and measures would inherit).
bench_python() {
	bench_pylib >"$tmp/benchlib.py"
	python3 - "$tmp"
}

# bench_pylib: prints the python helpers every driver shares.
bench_pylib() {
	cat <<'PY'
"""Helpers shared by the bench drivers (written by bench/lib.sh).

Processes are only ever named by pid together with their start time (never
by name), so that a check or a signal cannot reach a stranger that got a
recycled pid."""
import json, os, random, statistics, subprocess, sys, threading, time

TMP = sys.argv[1]  # this run's temp dir (bench_python passes it)
PM = os.path.join(TMP, "procmon")
STATE = os.environ["PROCMON_STATE_DIR"]
CLK = os.sysconf("SC_CLK_TCK")

started = []  # (pid, start ticks, what) of every process to be gone at the end
_lock = threading.Lock()  # drivers start monitors from several threads
_ledger = None


def log(*a):
    """Progress goes to stderr: stdout is the report."""
    print(*a, file=sys.stderr, flush=True)


def note(*words):
    """Appends one line to $tmp/ledger, which the shell replays to clean up
    if the driver is cut short (bench_replay_ledger): note("run", id),
    note("owner", pid, ticks), note("monitor", id)."""
    global _ledger
    with _lock:
        if _ledger is None:
            _ledger = open(os.path.join(TMP, "ledger"), "a", buffering=1)
        _ledger.write(" ".join(str(w) for w in words) + "\n")


def call(argv, stdin=None, env=None, name=None):
    """Runs argv (stdin: bytes to feed it, else /dev/null); returns (wall ms,
    stdout). A non-zero exit ends the bench with the command's output, since
    a figure taken from a failed command would mean nothing."""
    t0 = time.perf_counter_ns()
    p = subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       stdin=None if stdin is not None else subprocess.DEVNULL)
    t1 = time.perf_counter_ns()
    if p.returncode != 0:
        raise SystemExit(f"{name or ' '.join(argv)}: exit {p.returncode}\n{p.stdout.decode()}{p.stderr.decode()}")
    return (t1 - t0) / 1e6, p.stdout


def pm(*args, stdin=None, run=None):
    """procmon ARGS (in run RUN when given, else the environment's), its JSON
    answer parsed."""
    env = dict(os.environ, PROCMON_RUN=run) if run else None
    return json.loads(call([PM, *args], stdin, env, "procmon " + " ".join(args))[1])


def configure(**sandbox):
    """Stores the seed's example settings (procmon configure --enable) with
    the given sandbox fields changed, e.g. command_limit=None for a bench
    that needs more than the example's 20 starts in a run."""
    settings = pm("configure", "--enable")["settings"]
    if sandbox:
        settings["sandbox"].update(sandbox)
        pm("configure", stdin=json.dumps(settings).encode())


def record(mid):
    """The body of a monitor's record.json in the private state dir."""
    with open(os.path.join(STATE, "monitors", mid, "record.json")) as f:
        return json.load(f)["body"]


def stat(pid):
    """(state, start ticks, utime ticks, stime ticks) from /proc/PID/stat, or
    None when pid is gone. A zombie is still there: see alive()."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    x = s[s.rindex(")") + 2:].split()  # comm, in parentheses, may hold spaces
    return x[0], int(x[19]), int(x[11]), int(x[12])


def alive(pid, ticks):
    """Whether the process that started at ticks still runs as pid."""
    s = stat(pid)
    return s is not None and s[0] not in ("Z", "X") and s[1] == ticks


def track(pid, what):
    """Adds pid to the processes that must be gone at the end; returns its
    start ticks (None when it is gone already: nothing to check)."""
    s = stat(pid)
    with _lock:
        started.append((pid, s[1] if s else None, what))
    return s[1] if s else None


def still_alive(procs, within=0.0, step=0.05):
    """Waits up to `within` seconds (looking every `step`) for each of procs,
    (pid, start ticks, ...) tuples, to be gone; returns those still alive."""
    end = time.monotonic() + within
    while True:
        left = [p for p in procs if p[1] is not None and alive(p[0], p[1])]
        if not left or time.monotonic() >= end:
            return left
        time.sleep(step)


def proc_kib(pid, keys, file="status"):
    """The "Key: N kB" fields named in keys from /proc/PID/<file> (status, or
    smaps_rollup for Pss), as {key: KiB}; None when pid is gone or one is
    missing (a zombie has no Vm* lines)."""
    out = {}
    try:
        with open(f"/proc/{pid}/{file}") as f:
            for line in f:
                k = line.split(":", 1)[0]
                if k in keys:
                    out[k] = int(line.split()[1])
    except OSError:
        return None
    return out if len(out) == len(keys) else None


def kib(pid, key="VmRSS", file="status"):
    """One field of proc_kib (VmRSS by default), or None."""
    m = proc_kib(pid, (key,), file)
    return m[key] if m else None


def loadavg():
    """The 1, 5 and 15 minute load averages, as /proc/loadavg has them."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def med(xs):
    """Median, nan for no samples (a report line, not a crash)."""
    return statistics.median(xs) if xs else float("nan")


def p10_p90(xs):
    """The 10th and 90th percentiles: the spread around a median."""
    q = statistics.quantiles(xs, n=10)
    return q[0], q[-1]


def ratio_interval(a, b, level=0.9, resamples=2000):
    """A bootstrap interval for med(a) / med(b), where a[i] and b[i] were
    measured in the same round: rounds are resampled whole, so that drift
    shared by a round stays shared. It is the uncertainty of this run's
    ratio; another run lands further off, by more when the machine's load
    changes between runs (seeded: the same samples give the same
    interval)."""
    rnd = random.Random(1)
    n = len(a)
    rs = sorted(med([a[i] for i in idx]) / med([b[i] for i in idx])
                for idx in ([rnd.randrange(n) for _ in range(n)] for _ in range(resamples)))
    tail = round(resamples * (1 - level) / 2)
    return rs[tail], rs[-1 - tail]
PY
}
