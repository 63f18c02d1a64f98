"""Tests of procmon_tools against the real procmon binary.

The binary is $PROCMON_BIN; without it, one is built from the repository
with `go build` into a temporary directory. Every test has its own state
directory, and proves that the processes it started are gone.

    python3 -m unittest discover -s shims/python -v
"""

import hashlib
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from procmon_tools import (  # noqa: E402
    INTERRUPT_ANSWER_SECONDS,
    TOOLS,
    ProcmonError,
    cancel_process,
    execute_command,
    process_logs,
    process_status,
    start_process,
    wait_process,
)

REPO_ROOT = Path(__file__).resolve().parents[2]

# How long a test waits for processes to disappear or a service to answer.
PATIENCE_SECONDS = 10
# Bounds every wait_process call of these tests, so none can hang CI.
WAIT_SECONDS = 30

SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]
UNKNOWN_ID = "m_" + "0" * 26
# The tools that act on an existing monitor.
MONITOR_TOOLS = ("wait_process", "process_status", "process_logs", "cancel_process")

PROCMON = ""


def setUpModule():
    global PROCMON
    PROCMON = os.environ.get("PROCMON_BIN", "")
    if PROCMON:
        PROCMON = os.path.abspath(PROCMON)
        if not os.access(PROCMON, os.X_OK):
            raise RuntimeError(f"PROCMON_BIN={PROCMON} is not an executable file")
        return
    build_dir = tempfile.TemporaryDirectory(prefix="procmon-bin-")
    unittest.addModuleCleanup(build_dir.cleanup)
    PROCMON = os.path.join(build_dir.name, "procmon")
    try:
        build = subprocess.run(
            ["go", "build", "-o", PROCMON, "."],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
        )
    except FileNotFoundError:
        raise RuntimeError(
            "PROCMON_BIN is not set and `go` is not on PATH to build procmon"
        ) from None
    if build.returncode != 0:
        raise RuntimeError(f"go build failed in {REPO_ROOT}:\n{build.stderr}")


class ProcmonToolsTest(unittest.TestCase):
    """Base: a fresh, enabled state directory per test."""

    def setUp(self):
        scratch = tempfile.TemporaryDirectory(prefix="procmon-shim-")
        self.addCleanup(scratch.cleanup)
        self.scratch = Path(scratch.name)
        self.state_dir = str(self.scratch / "state")
        # PROCMON_BIN in env= also exercises how the shim finds the binary.
        self.env = {
            "PROCMON_BIN": PROCMON,
            "PROCMON_STATE_DIR": self.state_dir,
            "PROCMON_RUN": "",
        }
        # Registered first so that it runs last, after every cancel.
        self.addCleanup(self.assert_nothing_left)
        configured = subprocess.run(
            [PROCMON, "configure", "--enable"],
            env={**os.environ, **self.env},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        self.assertEqual(configured.returncode, 0, configured.stdout + configured.stderr)

    def call(self, tool, request, **options):
        return tool(request, env=self.env, **options)

    def start_owned(self, request):
        """Start a service that is cancelled, and proven gone, after the test."""
        started = self.call(start_process, request)
        self.addCleanup(self.cancel_and_verify, started["monitor_id"], started["pid"])
        return started

    def cancel_and_verify(self, monitor_id, pid):
        receipt = self.call(cancel_process, {"monitor_id": monitor_id, "grace_seconds": 2})
        self.assertIn(receipt["status"], {"cancelled", "exited", "timed_out", "output_limit"})
        self.assertTrue(receipt["group_empty_verified"], receipt)
        self.assert_pid_gone(pid)

    def assert_pid_gone(self, pid):
        """Wait, bounded, until pid has exited and been reaped."""
        deadline = time.monotonic() + PATIENCE_SECONDS
        _await_exit([pid], deadline)
        # The exit is an event; the reaping that follows it is not, and is
        # quick: the guardian reaps before it writes the receipt.
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.01)
        self.fail(f"pid {pid} is still there {PATIENCE_SECONDS} s after its cancel")

    def assert_nothing_left(self):
        """No service, guardian or procmon command of this test still runs."""
        deadline = time.monotonic() + PATIENCE_SECONDS
        left = _processes_of(self.state_dir)
        while left and time.monotonic() < deadline:
            _await_exit(left, deadline)
            left = _processes_of(self.state_dir)
        if left:
            described = [f"{pid}: {_cmdline(pid)}" for pid in left]
            for pid in left:
                # Ours beyond doubt: they carry this test's state directory.
                _kill_quietly(pid)
            self.fail("processes left behind:\n" + "\n".join(described))


class HTTPServerTest(ProcmonToolsTest):
    """The agent's story: start a dev server, wait once, use it, cancel."""

    def test_http_server_lifecycle(self):
        site = self.scratch / "site"
        site.mkdir()
        body = "<h1>served under procmon custody</h1>\n"
        (site / "index.html").write_text(body)
        port = _free_port()

        started = self.start_owned({
            "argv": [sys.executable, "-u", "-m", "http.server", str(port), "--bind", "127.0.0.1"],
            "cwd": str(site),
            "name": "http",
        })
        monitor_id = started["monitor_id"]
        self.assertRegex(monitor_id, r"^m_[0-9a-z]{20,32}$")
        self.assertEqual(started["status"], "running")
        self.assertNotIn("exit_code", started)
        self.assertGreater(started["pid"], 0)

        ready = self.call(wait_process, {
            "monitor_id": monitor_id,
            "condition": {"kind": "output", "text": "Serving HTTP"},
            "timeout_seconds": WAIT_SECONDS,
        })
        self.assertEqual(ready["outcome"], "satisfied", ready)
        self.assertEqual(ready["monitor_id"], monitor_id)
        self.assertEqual(ready["observation"]["status"], "running")
        self.assertNotIn("exit_code", ready["observation"])

        with _direct_opener().open(f"http://127.0.0.1:{port}/index.html", timeout=PATIENCE_SECONDS) as page:
            self.assertEqual(page.status, 200)
            self.assertEqual(page.read().decode(), body)

        # http.server logs each request on stderr, which procmon captures in
        # the same stream as stdout; waiting for it avoids racing the capture.
        request_line = '"GET /index.html HTTP/1.1" 200'
        logged = self.call(wait_process, {
            "monitor_id": monitor_id,
            "condition": {"kind": "output", "text": request_line},
            "timeout_seconds": WAIT_SECONDS,
        })
        self.assertEqual(logged["outcome"], "satisfied", logged)

        logs = self.call(process_logs, {"monitor_id": monitor_id})
        self.assertEqual(logs["monitor_id"], monitor_id)
        self.assertIn("Serving HTTP", logs["text"])
        self.assertIn(request_line, logs["text"])
        encoded = logs["text"].encode()
        self.assertEqual(logs["output_bytes"], len(encoded))
        self.assertEqual(logs["output_sha256"], hashlib.sha256(encoded).hexdigest())

        # procmon's cursor: small windows from offset 0 add up to the same text.
        pages, offset = [], 0
        for _ in range(len(encoded)):
            page = self.call(process_logs, {"monitor_id": monitor_id, "offset": offset, "max_bytes": 64})
            if not page["text"]:
                break
            self.assertEqual(page["offset"], offset)
            pages.append(page["text"])
            offset = page["next_offset"]
        self.assertEqual("".join(pages), logs["text"])

        status = self.call(process_status, {"monitor_id": monitor_id})
        self.assertEqual(status["status"], "running")
        self.assertEqual(status["pid"], started["pid"])

        receipt = self.call(cancel_process, {"monitor_id": monitor_id})
        self.assertEqual(receipt["monitor_id"], monitor_id)
        self.assertEqual(receipt["status"], "cancelled")
        self.assertIs(receipt["group_empty_verified"], True)
        self.assert_pid_gone(started["pid"])

        after = self.call(process_status, {"monitor_id": monitor_id})
        self.assertEqual(after["status"], "cancelled")
        # Cancel is idempotent: the same receipt comes back.
        self.assertEqual(self.call(cancel_process, {"monitor_id": monitor_id}), receipt)


class WaitTest(ProcmonToolsTest):

    def test_wait_timeout_leaves_service_running(self):
        started = self.start_owned({"argv": SLEEPER})
        evidence = self.call(wait_process, {
            "monitor_id": started["monitor_id"],
            "condition": {"kind": "output", "text": "never printed"},
            "timeout_seconds": 1,
        })
        self.assertEqual(evidence["outcome"], "timeout", evidence)
        status = self.call(process_status, {"monitor_id": started["monitor_id"]})
        self.assertEqual(status["status"], "running")

    def test_crash_before_readiness_ends_the_wait(self):
        started = self.start_owned({"argv": [sys.executable, "-c", "print('port in use'); raise SystemExit(4)"]})
        evidence = self.call(wait_process, {
            "monitor_id": started["monitor_id"],
            "condition": {"kind": "output", "text": "Serving HTTP"},
            "timeout_seconds": WAIT_SECONDS,
        })
        self.assertEqual(evidence["outcome"], "process_ended", evidence)
        self.assertEqual(evidence["observation"]["exit_code"], 4)
        logs = self.call(process_logs, {"monitor_id": started["monitor_id"]})
        self.assertIn("port in use", logs["text"])

    def test_exit_condition_is_satisfied_by_a_failed_process(self):
        started = self.start_owned({"argv": [sys.executable, "-c", "import sys; sys.exit(3)"]})
        evidence = self.call(wait_process, {
            "monitor_id": started["monitor_id"],
            "condition": {"kind": "exit"},
            "timeout_seconds": WAIT_SECONDS,
        })
        self.assertEqual(evidence["outcome"], "satisfied", evidence)
        self.assertEqual(evidence["observation"]["exit_code"], 3)
        status = self.call(process_status, {"monitor_id": started["monitor_id"]})
        self.assertEqual(status["status"], "exited")
        self.assertEqual(status["exit_code"], 3)

    def test_interrupted_wait_leaves_service_running(self):
        # unittest's -c/--catch handler would swallow the SIGINT.
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        self.addCleanup(signal.signal, signal.SIGINT, previous)
        started = self.start_owned({"argv": SLEEPER})

        # The interrupter never fires once the wait has returned, so a wait
        # that ends on its own cannot leave a stray SIGINT for a later test.
        returned = threading.Event()
        guard = threading.Lock()
        interrupter = threading.Thread(
            target=self._interrupt_blocked_wait, args=(returned, guard), daemon=True
        )
        interrupter.start()
        with self.assertRaises(KeyboardInterrupt):
            try:
                self.call(wait_process, {
                    "monitor_id": started["monitor_id"],
                    "condition": {"kind": "output", "text": "never printed"},
                    "timeout_seconds": WAIT_SECONDS,
                })
            finally:
                with guard:
                    returned.set()
        interrupter.join(PATIENCE_SECONDS)

        status = self.call(process_status, {"monitor_id": started["monitor_id"]})
        self.assertEqual(status["status"], "running")
        waits = [pid for pid in _processes_of(self.state_dir) if _argv(pid)[1:2] == ["wait"]]
        self.assertEqual(waits, [], "the interrupted procmon wait is still running")

    def _interrupt_blocked_wait(self, returned, guard):
        """SIGINT this process once its procmon wait has been sent the request.

        The shim closes the wait's stdin right after writing the request,
        so the pipe disappearing from our own descriptors means the main
        thread is in the blocking part of the call.
        """
        deadline = time.monotonic() + WAIT_SECONDS
        stdin_pipe = None
        while time.monotonic() < deadline and not returned.is_set():
            if stdin_pipe is None:
                for pid in _processes_of(self.state_dir):
                    if _argv(pid)[1:2] == ["wait"]:
                        stdin_pipe = _readlink(f"/proc/{pid}/fd/0")
            elif stdin_pipe not in _own_fd_targets():
                with guard:
                    if not returned.is_set():
                        os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.01)


class InterruptedStartTest(unittest.TestCase):
    """An interrupted start_process lets procmon drain what it started.

    procmon's side (it completes the handoff, drains the service and
    answers wait_interrupted) is proven by its fault suite, which can stop
    a start mid-handoff; here a stand-in binary that blocks until it is
    signalled proves the shim's side: SIGINT, never SIGKILL, which would
    leave a started service with no answer naming it.
    """

    STAND_IN = """#!{python}
import json, signal, sys, time
from pathlib import Path
request = sys.stdin.read()
if sys.argv[1] == "cancel":
    Path({cancelled!r}).write_text(json.loads(request)["request"]["monitor_id"])
    print('{{"monitor_id":"m_00000000000000000000","status":"cancelled"}}')
    sys.exit(0)
def answer(signum, frame):
    Path({marker!r}).write_text(signal.Signals(signum).name)
    time.sleep({drain!r})  # the drain of what it started
    if {running!r}:
        print('{{"monitor_id":"m_00000000000000000000","status":"running"}}')
        sys.exit(0)
    print('{{"error":{{"code":"wait_interrupted","message":"start was interrupted","details":{{}}}}}}')
    sys.exit(130)
signal.signal(signal.SIGINT, answer)
Path({ready!r}).write_text("")
time.sleep(60)
"""

    def test_interrupted_start_is_sent_sigint(self):
        self.assertEqual(self._interrupt_start(running=False), ("SIGINT", None))

    def test_start_answered_before_the_interrupt_is_cancelled(self):
        # procmon answered running just as the interrupt came: the caller
        # never sees the answer, so the shim stops the service it names.
        self.assertEqual(self._interrupt_start(running=True), ("SIGINT", "m_00000000000000000000"))

    def test_interrupted_exec_is_given_its_drain(self):
        # An interrupted exec answers once it has drained its command,
        # which may take the grace and more: killed at the wait's bound
        # (INTERRUPT_ANSWER_SECONDS), procmon left the command's processes
        # and its receipt was lost.
        drain = INTERRUPT_ANSWER_SECONDS + 1
        got, _, answer = self._interrupt(execute_command, running=False, drain=drain)
        self.assertEqual(got, "SIGINT")
        self.assertIn('"code":"wait_interrupted"', answer)

    def _interrupt_start(self, running):
        """Interrupt a start_process of the stand-in; return the signal it
        got and the monitor it was asked to cancel, if any."""
        got, cancelled, _ = self._interrupt(start_process, running)
        return got, cancelled

    def _interrupt(self, tool, running, drain=0):
        """Interrupt a call of tool to the stand-in, which takes drain
        seconds to answer; return the signal it got, the monitor it was
        asked to cancel, if any, and its answer."""
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        self.addCleanup(signal.signal, signal.SIGINT, previous)
        work = tempfile.TemporaryDirectory(prefix="procmon-shim-")
        self.addCleanup(work.cleanup)
        marker, ready = os.path.join(work.name, "signal"), os.path.join(work.name, "ready")
        cancelled = os.path.join(work.name, "cancelled")
        stand_in = os.path.join(work.name, "procmon")
        with open(stand_in, "w", encoding="utf-8") as f:
            f.write(self.STAND_IN.format(python=sys.executable, marker=marker, ready=ready,
                                         cancelled=cancelled, running=running, drain=drain))
        os.chmod(stand_in, 0o700)

        def interrupt():
            deadline = time.monotonic() + WAIT_SECONDS
            while not os.path.exists(ready) and time.monotonic() < deadline:
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGINT)

        interrupter = threading.Thread(target=interrupt, daemon=True)
        interrupter.start()
        with self.assertRaises(KeyboardInterrupt) as raised:
            tool({"argv": SLEEPER}, binary=stand_in)
        interrupter.join(PATIENCE_SECONDS)
        answer = getattr(raised.exception, "procmon_answer", None)
        with open(marker, encoding="utf-8") as f:
            got = f.read()
        if not os.path.exists(cancelled):
            return got, None, answer
        with open(cancelled, encoding="utf-8") as f:
            return got, f.read(), answer


class ErrorTest(ProcmonToolsTest):

    def assertProcmonError(self, raised, code, exit_status):
        err = raised.exception
        self.assertEqual(err.code, code, f"{err.code}: {err.message}")
        self.assertEqual(err.exit_status, exit_status)
        self.assertTrue(err.message)
        self.assertIsInstance(err.details, dict)

    def test_unknown_monitor(self):
        for name in MONITOR_TOOLS:
            with self.subTest(tool=name):
                with self.assertRaises(ProcmonError) as raised:
                    self.call(TOOLS[name], _request_naming(name, UNKNOWN_ID))
                self.assertProcmonError(raised, "unknown_monitor", 4)

    def test_bad_monitor_id(self):
        for bad in ("not-a-monitor", "m_../../etc", "M_" + "0" * 26, "m_" + "0" * 33):
            for name in MONITOR_TOOLS:
                with self.subTest(tool=name, monitor_id=bad):
                    with self.assertRaises(ProcmonError) as raised:
                        self.call(TOOLS[name], _request_naming(name, bad))
                    self.assertProcmonError(raised, "invalid_request", 2)

    def test_missing_monitor_id(self):
        # process_status too: procmon status without one would list the
        # run's monitors, a shape the tool's spec does not have.
        for name in MONITOR_TOOLS:
            for request in ({}, {"monitor_id": None}, {"request": {}}):
                with self.subTest(tool=name, request=request):
                    with self.assertRaises(ProcmonError) as raised:
                        self.call(TOOLS[name], request)
                    self.assertEqual(raised.exception.code, "invalid_request")
                    if name == "process_status":
                        self.assertEqual(raised.exception.details.get("field"), "monitor_id")

    def test_invalid_condition(self):
        started = self.start_owned({"argv": SLEEPER})
        conditions = [
            {"kind": "http", "text": "http://127.0.0.1/"},
            {"kind": "file", "path": "/etc/passwd"},
            {"kind": "file", "path": "../outside.json"},
        ]
        for condition in conditions:
            with self.subTest(condition=condition):
                with self.assertRaises(ProcmonError) as raised:
                    self.call(wait_process, {
                        "monitor_id": started["monitor_id"],
                        "condition": condition,
                        "timeout_seconds": 1,
                    })
                self.assertProcmonError(raised, "invalid_condition", 2)

    def test_start_refuses_bad_requests(self):
        for request in ({"argv": []}, {}, {"argv": SLEEPER, "unknown_field": 1}):
            with self.subTest(request=request):
                with self.assertRaises(ProcmonError) as raised:
                    self.call(start_process, request)
                self.assertProcmonError(raised, "invalid_request", 2)

    def test_exec_failure(self):
        with self.assertRaises(ProcmonError) as raised:
            self.call(start_process, {"argv": [str(self.scratch / "no-such-program")]})
        self.assertProcmonError(raised, "exec_failed", 1)


class ShimTest(ProcmonToolsTest):
    """What the shim itself decides: request forms, finding the binary."""

    def test_tools_table(self):
        self.assertEqual(set(TOOLS), {
            "start_process", "wait_process", "process_status", "process_logs", "cancel_process",
            "execute_command",
        })
        self.assertIs(TOOLS["wait_process"], wait_process)

    def test_wrapped_request_form(self):
        # Were the wrapper passed through, procmon would refuse the unknown
        # field "request" as invalid_request.
        with self.assertRaises(ProcmonError) as raised:
            self.call(process_status, {"request": {"monitor_id": UNKNOWN_ID}})
        self.assertEqual(raised.exception.code, "unknown_monitor")

        started = self.start_owned({"request": {"argv": SLEEPER}})
        status = self.call(process_status, {"request": {"monitor_id": started["monitor_id"]}})
        self.assertEqual(status["status"], "running")

    def test_run_option(self):
        # procmon only knows the run was named if --run reached it.
        with self.assertRaises(ProcmonError) as raised:
            self.call(start_process, {"argv": SLEEPER}, run="r_" + "0" * 26)
        self.assertEqual(raised.exception.code, "unknown_run")
        self.assertEqual(raised.exception.exit_status, 4)

    def test_run_must_name_a_run(self):
        # The monitor tools find a monitor in any run, but a run that is
        # empty or malformed is refused, as start refuses it.
        for run in ("", "--help", "bogus"):
            with self.subTest(run=run):
                with self.assertRaises(ProcmonError) as raised:
                    self.call(process_status, {"monitor_id": UNKNOWN_ID}, run=run)
                self.assertEqual(raised.exception.code, "invalid_request")
                self.assertEqual(raised.exception.details.get("field"), "run")

    def test_bad_keyword_arguments_are_typed_errors(self):
        # A missing binary proves that nothing was run.
        missing = str(self.scratch / "no-procmon-here")
        for kwargs in ({"env": {"X": None}}, {"env": {"A=B": "x"}}, {"env": {"A": "x\0"}},
                       {"env": {"": "x"}}, {"env": {b"A": "x"}}, {"env": 5}, {"env": "ab"},
                       {"env": ["x"]}, {"run": 5}, {"binary": 5}):
            with self.subTest(kwargs=kwargs):
                kwargs.setdefault("binary", missing)
                with self.assertRaises(ProcmonError) as raised:
                    start_process({"argv": SLEEPER}, **kwargs)
                self.assertEqual(raised.exception.code, "invalid_request")

    def test_huge_grace_is_procmons_to_refuse(self):
        started = self.start_owned({"argv": SLEEPER})
        with self.assertRaises(ProcmonError) as raised:
            self.call(cancel_process, {"monitor_id": started["monitor_id"], "grace_seconds": 9_000_000_000})
        self.assertEqual(raised.exception.code, "invalid_request")

    def test_binary_on_path(self):
        if os.path.basename(PROCMON) != "procmon":
            self.skipTest(f"PROCMON_BIN {PROCMON} is not named procmon")
        env = {
            **self.env,
            "PROCMON_BIN": "",
            "PATH": os.path.dirname(PROCMON) + os.pathsep + os.environ.get("PATH", ""),
        }
        with self.assertRaises(ProcmonError) as raised:
            process_status({"monitor_id": UNKNOWN_ID}, env=env)
        self.assertEqual(raised.exception.code, "unknown_monitor")

    def test_missing_binary(self):
        missing = str(self.scratch / "no-procmon-here")
        with self.assertRaises(ProcmonError) as raised:
            self.call(process_status, {"monitor_id": UNKNOWN_ID}, binary=missing)
        self.assertEqual(raised.exception.code, "transport_unavailable")
        self.assertIsNone(raised.exception.exit_status)
        self.assertIn("PROCMON_BIN", raised.exception.message)

        with self.assertRaises(ProcmonError) as raised:
            process_status({"monitor_id": UNKNOWN_ID}, env={"PROCMON_BIN": "", "PATH": str(self.scratch)})
        self.assertEqual(raised.exception.code, "transport_unavailable")

    def test_binary_without_json(self):
        silent = self.scratch / "silent"
        silent.write_text("#!/bin/sh\necho 'not json' >&2\nexit 7\n")
        silent.chmod(0o755)
        with self.assertRaises(ProcmonError) as raised:
            self.call(process_status, {"monitor_id": UNKNOWN_ID}, binary=str(silent))
        self.assertEqual(raised.exception.code, "internal")
        self.assertEqual(raised.exception.exit_status, 7)
        self.assertIn("not json", raised.exception.message)

    def test_request_must_be_a_dict(self):
        # A missing binary proves that nothing was run.
        missing = str(self.scratch / "no-procmon-here")
        for request in (["argv"], "argv", None, {"argv": [object()]},
                        {"argv": ["x"], "timeout_seconds": float("nan")},
                        {"argv": ["x"], "timeout_seconds": float("inf")}):
            with self.subTest(request=request):
                with self.assertRaises(ProcmonError) as raised:
                    self.call(start_process, request, binary=missing)
                self.assertEqual(raised.exception.code, "invalid_request")


def _request_naming(tool, monitor_id):
    """The smallest valid request of a monitor tool for monitor_id."""
    request = {"monitor_id": monitor_id}
    if tool == "wait_process":
        request.update(condition={"kind": "exit"}, timeout_seconds=1)
    return request


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _direct_opener():
    """An opener that ignores any *_proxy variables: the server is local."""
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _processes_of(state_dir):
    """Live pids that belong to this state directory.

    Services and procmon commands inherit PROCMON_STATE_DIR; a guardian runs
    with an empty environment and is recognised by its argv, which names a
    monitor of this directory.
    """
    marker = b"PROCMON_STATE_DIR=" + os.fsencode(state_dir)
    try:
        monitors = set(os.listdir(os.path.join(state_dir, "monitors")))
    except OSError:
        monitors = set()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue  # a zombie runs nothing; its parent has yet to reap it
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue
        argv = _argv(pid)
        is_guardian = len(argv) > 2 and argv[1] == "__guardian" and argv[2] in monitors
        if marker in environ or is_guardian:
            found.append(pid)
    return found


def _await_exit(pids, deadline):
    """Block until each pid has exited or the deadline passes; pidfds make
    the exit an event instead of a poll."""
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            poller.poll(max(0.0, deadline - time.monotonic()) * 1000)
        finally:
            os.close(fd)


def _argv(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [os.fsdecode(a) for a in f.read().split(b"\0")[:-1]]
    except OSError:
        return []


def _cmdline(pid):
    return " ".join(_argv(pid)) or "?"


def _readlink(path):
    try:
        return os.readlink(path)
    except OSError:
        return None


def _own_fd_targets():
    return {_readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")}


def _kill_quietly(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    unittest.main()
