"""The five process-monitor tools and execute_command for coding agents,
backed by procmon.

Each function takes the tool's request dict, runs the procmon binary once
with ``{"request": ...}`` on stdin and returns its decoded response dict.
A typed procmon error is raised as :class:`ProcmonError`, whose ``code`` is
one of procmon's stable codes (``unknown_monitor``, ``invalid_condition``,
``command_budget_exhausted``, ...).

How an agent uses them: start the service, make ONE blocking wait for
concrete evidence that it is ready (no polling loop), use it, cancel it::

    from procmon_tools import (cancel_process, process_logs, start_process,
                               wait_process)

    started = start_process({"argv": ["python3", "-u", "-m", "http.server", "8000"]})
    monitor_id = started["monitor_id"]
    try:
        evidence = wait_process({
            "monitor_id": monitor_id,
            "condition": {"kind": "output", "text": "Serving HTTP"},
            "timeout_seconds": 60,
        })
        if evidence["outcome"] != "satisfied":
            # timeout, process_ended or unavailable: read why before retrying.
            print(process_logs({"monitor_id": monitor_id})["text"])
        else:
            ...  # run the test client against http://127.0.0.1:8000/
    finally:
        receipt = cancel_process({"monitor_id": monitor_id})
        assert receipt["group_empty_verified"]

Other wait conditions are ``{"kind": "exit"}`` (a failed process satisfies
it: read ``exit_code``) and ``{"kind": "file", "path": "ready.json"}``
(optionally with ``"sha256"``), relative to the service's cwd.

Every function also accepts the wrapped form ``{"request": {...}}`` and the
keyword arguments ``run`` (procmon's ``--run``), ``binary`` (the procmon
executable; default ``$PROCMON_BIN``, else ``procmon`` on PATH) and ``env``
(variables set for procmon on top of ``os.environ``; a started service
inherits them). Monitors must have been enabled once with
``procmon configure --enable``.

``run`` is the run that start_process and execute_command act in; the
other tools find the monitor they are given by its id, in whatever run
started it, whose grants decide (a malformed ``run`` is still refused).
Without ``run`` (or ``$PROCMON_RUN`` in ``env``), calls act in the run
``default``, which every caller on the machine shares: its command budget
is spent by all of them and never given back, and once it is ended
(``procmon run end`` without a run) it refuses starts for good. An agent
invocation makes a run of its own, bound to its own process so that its
monitors are drained when it exits, and passes it to every call::

    procmon = os.environ.get("PROCMON_BIN", "procmon")
    run = json.loads(subprocess.run(
        [procmon, "run", "new", "--owner-pid", str(os.getpid())],
        stdin=subprocess.DEVNULL, capture_output=True, check=True).stdout)["run_id"]
    started = start_process({"argv": [...]}, run=run)

Standard library only; Python 3.9 or newer.
"""

import json
import os
import shutil
import signal
import subprocess
from typing import Any, Callable, Dict, List, Mapping, Optional

__all__ = [
    "EXAMPLE_REQUESTS",
    "ProcmonError",
    "TOOLS",
    "TOOL_SPECS",
    "cancel_process",
    "execute_command",
    "process_logs",
    "process_status",
    "start_process",
    "wait_process",
]

# Non-wait commands answer promptly; the bound only catches a hung binary.
# cancel additionally gets its grace period, which it may spend waiting
# for the service to stop.
CALL_TIMEOUT_SECONDS = 60

# After SIGINT an interrupted wait answers wait_interrupted at once; past
# this it is killed so the caller's interrupt is never held up.
INTERRUPT_ANSWER_SECONDS = 5

# An interrupted start or exec answers once it has drained what it
# started: the default grace of 5 s, then at most 5 s of SIGKILL,
# verification and the output's end. Killed before that, procmon leaves
# the command's processes for the next list to settle, and its answer
# (the receipt) is lost.
DRAIN_ANSWER_SECONDS = 20

_DEFAULT_CANCEL_GRACE_SECONDS = 5
_MAX_GRACE_SECONDS = 3600


class ProcmonError(Exception):
    """A typed error from procmon, or a failure to reach it.

    ``code`` is procmon's stable error code; the shim itself uses
    ``transport_unavailable`` (no binary to run) and ``internal`` (the
    binary answered with something other than one JSON object).
    ``exit_status`` is procmon's exit status, or None if it never ran.
    """

    def __init__(
        self,
        code: str,
        message: str,
        details: Optional[Dict[str, Any]] = None,
        exit_status: Optional[int] = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details or {}
        self.exit_status = exit_status


def start_process(
    request: Mapping[str, Any],
    *,
    run: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
) -> Dict[str, Any]:
    """Start a service under a detached guardian; returns the running handoff.

    Request: ``argv`` (required), optional ``cwd``, ``env``, ``secrets``,
    ``secret_env``, ``timeout_seconds``, ``name``. Keep the returned
    ``monitor_id``; ``pid`` and ``pgid`` are informational. On
    KeyboardInterrupt procmon is sent SIGINT: it drains the service it
    started, so none runs on that no answer named, and the interrupt
    propagates. Should procmon have answered first, the service it named
    is cancelled before the interrupt propagates.
    """
    try:
        return _call("start", request, run=run, binary=binary, env=env, interruptible=True, bounded=True, drains=True)
    except KeyboardInterrupt as interrupt:
        # procmon answered before the interrupt reached it: the service
        # runs, and no answer will name it to the caller, so it is stopped.
        handoff = _json_object(getattr(interrupt, "procmon_answer", ""))
        if handoff.get("status") == "running" and isinstance(handoff.get("monitor_id"), str):
            try:
                cancel_process({"monitor_id": handoff["monitor_id"]}, run=run, binary=binary, env=env)
            except ProcmonError:
                pass
        raise


def wait_process(
    request: Mapping[str, Any],
    *,
    run: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
) -> Dict[str, Any]:
    """Block until a condition holds, the timeout passes or the process ends.

    Request: ``monitor_id``, ``condition`` and optional ``timeout_seconds``.
    Returns evidence whose ``outcome`` is ``satisfied``, ``timeout``,
    ``process_ended`` or ``unavailable``. The wait itself has no subprocess
    timeout: the request's ``timeout_seconds`` bounds it, and without one a
    wait for text the service never prints lasts as long as the service
    (or its work deadline): give one. On
    KeyboardInterrupt procmon is sent SIGINT (the service keeps running)
    and the interrupt propagates.
    """
    return _call("wait", request, run=run, binary=binary, env=env, interruptible=True)


def process_status(
    request: Mapping[str, Any],
    *,
    run: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
) -> Dict[str, Any]:
    """Return a monitor's record and status. Request: ``monitor_id``."""
    inner = _unwrap(request)
    if inner.get("monitor_id") is None:
        # procmon status without one lists the run's monitors, for people;
        # the tool shows one monitor, as its spec and procmon mcp say.
        raise ProcmonError(
            "invalid_request", 'field "monitor_id" is required', {"field": "monitor_id"}
        )
    return _call("status", inner, run=run, binary=binary, env=env)


def process_logs(
    request: Mapping[str, Any],
    *,
    run: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
) -> Dict[str, Any]:
    """Return a bounded snapshot of the redacted output.

    Request: ``monitor_id``, optional ``max_bytes`` (default 65536, the
    tail) and ``offset`` (read from that byte; continue at ``next_offset``).
    """
    return _call("logs", request, run=run, binary=binary, env=env)


def cancel_process(
    request: Mapping[str, Any],
    *,
    run: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
) -> Dict[str, Any]:
    """Stop the service's process group; returns the terminal receipt.

    Request: ``monitor_id``, optional ``grace_seconds`` between SIGTERM and
    SIGKILL. On a monitor that already ended it returns the existing
    receipt.
    """
    inner = _unwrap(request)
    grace = inner.get("grace_seconds")
    if not isinstance(grace, int) or isinstance(grace, bool) or grace < 0:
        grace = _DEFAULT_CANCEL_GRACE_SECONDS
    # procmon refuses more; a larger bound would only overflow the timeout.
    grace = min(grace, _MAX_GRACE_SECONDS)
    return _call(
        "cancel", inner, run=run, binary=binary, env=env, timeout=CALL_TIMEOUT_SECONDS + grace
    )


def execute_command(
    request: Mapping[str, Any],
    *,
    run: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
) -> Dict[str, Any]:
    """Run a foreground command (a test client); returns its actual result.

    Request: ``argv`` (required), optional ``cwd``, ``env``, ``secrets``,
    ``secret_env``, ``timeout_seconds`` (default 600), ``max_bytes`` (the
    end of the output returned, default 65536) and ``depends_on`` (monitor
    ids that must be running, else ``needs_reconciliation``). Takes one
    slot of the run's command budget. Read ``exit_code`` (or ``signal``)
    and ``text``. On KeyboardInterrupt procmon drains the command.
    """
    return _call("exec", request, run=run, binary=binary, env=env, interruptible=True, drains=True)


TOOLS: Dict[str, Callable[..., Dict[str, Any]]] = {
    "start_process": start_process,
    "wait_process": wait_process,
    "process_status": process_status,
    "process_logs": process_logs,
    "cancel_process": cancel_process,
    "execute_command": execute_command,
}

_SPECS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tool_specs.json")


def _load_tool_specs() -> List[Dict[str, Any]]:
    """The agent tools as ``procmon schema`` describes them (see
    tool_specs.json, written by ``python3 tool_specs.py``)."""
    with open(_SPECS_PATH, encoding="utf-8") as f:
        return json.load(f)


#: One entry per tool in TOOLS: ``name``, ``description`` and
#: ``input_schema`` (JSON Schema draft 2020-12), in the shape agent
#: frameworks take tool definitions in.
TOOL_SPECS: List[Dict[str, Any]] = _load_tool_specs()

_ID = "m_" + "0123456789abcdefghijklmn"

#: Requests each tool takes, as an agent would send them; the tests
#: check them against TOOL_SPECS.
EXAMPLE_REQUESTS: Dict[str, List[Dict[str, Any]]] = {
    "start_process": [
        {"argv": ["python3", "-u", "-m", "http.server", "8000"]},
        {"argv": ["npm", "run", "dev"], "cwd": "web", "env": {"PORT": "3000"},
         "secret_env": ["API_KEY"], "timeout_seconds": 600, "name": "web"},
    ],
    "wait_process": [
        {"monitor_id": _ID, "condition": {"kind": "output", "text": "Serving HTTP"}, "timeout_seconds": 60},
        {"monitor_id": _ID, "condition": {"kind": "exit"}},
        {"monitor_id": _ID, "condition": {"kind": "file", "path": "build/ready.json", "sha256": "0" * 64}},
    ],
    "process_status": [{"monitor_id": _ID}],
    "process_logs": [{"monitor_id": _ID}, {"monitor_id": _ID, "offset": 0, "max_bytes": 4096}],
    "cancel_process": [{"monitor_id": _ID}, {"monitor_id": _ID, "grace_seconds": 1}],
    "execute_command": [
        {"argv": ["curl", "-fsS", "http://127.0.0.1:8000/"], "depends_on": [_ID]},
        {"argv": ["pytest", "-x", "tests"], "timeout_seconds": 300, "max_bytes": 8192,
         "secrets": ["a-test-credential"]},
    ],
}


def _unwrap(request: Any) -> Dict[str, Any]:
    """Return the inner request of either accepted form."""
    if not isinstance(request, Mapping):
        raise ProcmonError(
            "invalid_request",
            f"the request must be a dict, not {type(request).__name__}",
        )
    # No tool has a field named "request", so a lone "request" key can only
    # be the wrapped form.
    if set(request) == {"request"} and isinstance(request["request"], Mapping):
        return dict(request["request"])
    return dict(request)


def _call(
    subcommand: str,
    request: Mapping[str, Any],
    *,
    run: Optional[str] = None,
    binary: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    timeout: float = CALL_TIMEOUT_SECONDS,
    interruptible: bool = False,
    drains: bool = False,
    bounded: bool = False,
) -> Dict[str, Any]:
    try:
        # NaN and Infinity are no JSON: procmon would refuse them only as
        # malformed input at some byte, naming no field.
        payload = json.dumps({"request": _unwrap(request)}, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise ProcmonError("invalid_request", f"the request is not JSON: {err}") from None

    for key, value in (("run", run), ("binary", binary)):
        if value is not None and not isinstance(value, str):
            raise ProcmonError("invalid_request", f"{key} must be a string, not {type(value).__name__}")
    if env is not None and not isinstance(env, Mapping):
        raise ProcmonError("invalid_request", f"env must be a mapping of names to strings, not {type(env).__name__}")
    for name, value in (env or {}).items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ProcmonError(
                "invalid_request",
                f"env must map names to strings: {name!r} maps to {type(value).__name__}",
            )
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise ProcmonError(
                "invalid_request",
                f"env variable {name!r}: a name is not empty and holds no '=', and neither holds NUL",
            )
    child_env = dict(os.environ)
    if env is not None:
        child_env.update(env)
    argv = [_find_binary(binary, child_env), subcommand]
    if run is not None:
        argv += ["--run", run]

    try:
        if interruptible:
            status, stdout, stderr = _run_interruptible(
                argv, payload, child_env, timeout if bounded else None,
                DRAIN_ANSWER_SECONDS if drains else INTERRUPT_ANSWER_SECONDS,
            )
        else:
            done = subprocess.run(
                argv,
                input=payload,
                capture_output=True,
                encoding="utf-8",
                errors="replace",
                env=child_env,
                timeout=timeout,
            )
            status, stdout, stderr = done.returncode, done.stdout, done.stderr
    except OSError as err:
        raise ProcmonError(
            "transport_unavailable",
            f"cannot run procmon at {argv[0]!r}: {err.strerror or err}; "
            "set PROCMON_BIN to the procmon binary or put procmon on PATH",
        ) from None
    except subprocess.TimeoutExpired:
        raise ProcmonError(
            "internal",
            f"procmon {subcommand} gave no answer within {timeout:g} s and was killed",
        ) from None
    return _decode(subcommand, status, stdout, stderr)


def _find_binary(binary: Optional[str], env: Mapping[str, str]) -> str:
    if binary:
        return binary
    if env.get("PROCMON_BIN"):
        return env["PROCMON_BIN"]
    found = shutil.which("procmon", path=env.get("PATH"))
    if found is None:
        raise ProcmonError(
            "transport_unavailable",
            "procmon is not on PATH and PROCMON_BIN is not set; build it with "
            "`go build -o procmon .` and set PROCMON_BIN to its path",
        )
    return found


def _run_interruptible(
    argv: List[str], payload: str, env: Dict[str, str], timeout: Optional[float], answer_seconds: float
):
    """Run a command that a KeyboardInterrupt ends gracefully.

    subprocess.run would SIGKILL the child on KeyboardInterrupt; procmon
    instead gets SIGINT, so it answers wait_interrupted: a wait ends and
    its service keeps running, a start or an exec drains what it started.
    With a timeout, a child that has not answered by then is killed and
    subprocess.TimeoutExpired raised; interrupted, one that has not
    answered within answer_seconds of the SIGINT is killed.
    """
    child = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        encoding="utf-8",
        errors="replace",
        env=env,
    )
    with child:
        try:
            stdout, stderr = child.communicate(payload, timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise
        except KeyboardInterrupt as interrupt:
            # A Ctrl-C at a terminal has reached procmon already; an
            # interrupt raised in this process alone has not. procmon's
            # answer goes with the interrupt (procmon_answer): one that came
            # first may name a service that now runs.
            answer = ""
            try:
                if child.poll() is None:
                    child.send_signal(signal.SIGINT)
                answer, _ = child.communicate(timeout=answer_seconds)
            except subprocess.TimeoutExpired:
                pass
            finally:
                if child.poll() is None:
                    child.kill()
                    child.wait()
            interrupt.procmon_answer = answer or ""
            raise
    return child.returncode, stdout, stderr


def _json_object(text: str) -> Dict[str, Any]:
    """The JSON object text holds, or an empty dict."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _decode(subcommand: str, status: int, stdout: str, stderr: str) -> Dict[str, Any]:
    try:
        response = json.loads(stdout)
    except ValueError:
        response = None
    if not isinstance(response, dict):
        raise ProcmonError(
            "internal",
            f"procmon {subcommand} printed no JSON object (exit status {status})"
            + _stderr_note(stderr),
            {"stdout": stdout[:2000]},
            exit_status=status,
        )
    error = response.get("error")
    if isinstance(error, dict):
        details = error.get("details")
        raise ProcmonError(
            str(error.get("code") or "internal"),
            str(error.get("message") or "procmon reported an error without a message"),
            details if isinstance(details, dict) else {},
            exit_status=status,
        )
    if status != 0:
        raise ProcmonError(
            "internal",
            f"procmon {subcommand} exited with status {status} without an error object"
            + _stderr_note(stderr),
            {"response": response},
            exit_status=status,
        )
    return response


def _stderr_note(stderr: str) -> str:
    stderr = stderr.strip()
    return f"; stderr: {stderr[-2000:]}" if stderr else ""
