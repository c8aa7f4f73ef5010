"""A warm interpreter: imports torch once, then forks one process per run.

Starting a Python process that imports torch costs about two seconds here, most
of a short run. The parent starts this server once per verification; for each
run it sends a `SpawnRequest` line on stdin, and the server forks a child that
becomes the run's process: a new session, the run's working directory,
environment, argv and output file, the runner activated with the run's
configuration, then the script run as `__main__` (as `python script.py` would).
The server answers with `ServerEvent` lines on stdout: the child's pid when it
starts, its exit status when it ends.

Forking after `import torch` is what DataLoader workers do: nothing here touches
CUDA or starts a thread pool before the fork. torchrun runs are not served:
their ranks are started by torchrun itself.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
import signal
import sys
import tempfile
import time
from typing import Any

from ..protocol import ServerEvent, ServerHello, SpawnRequest


def serve() -> None:
    hello: ServerHello = {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "torch": None,
        "error": None,
    }
    try:
        import torch

        hello["torch"] = str(torch.__version__)
        with contextlib.suppress(Exception):
            importlib.import_module("numpy")
    except BaseException as exc:  # a broken install: say what, and stop
        hello["error"] = f"{type(exc).__name__}: {exc}"
    _send(hello)
    if hello["torch"] is None:
        return
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    stdin = sys.stdin.buffer
    children: dict[int, int] = {}  # pid -> request id
    # What every run would otherwise import itself: torch._dynamo, which building
    # an optimizer imports (hundreds of modules, about as long as torch itself; it
    # starts no thread and touches no device). Imported here, after the hello, so
    # the parent learns at once whether torch imports, and before the first fork,
    # so that no run, the reference included, pays for it: the parent computes the
    # fixed scripts on the other core meanwhile.
    with contextlib.suppress(Exception):
        importlib.import_module("torch._dynamo")
    while True:
        ready, _, _ = select.select([stdin, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
        _reap(children)
        if stdin in ready:
            line = stdin.readline()
            if not line:
                return  # the parent is gone; it ends the runs it started
            request: SpawnRequest = json.loads(line)
            pid = os.fork()
            if pid == 0:
                os.close(wake_r)
                os.close(wake_w)
                _child(request)  # never returns
            children[pid] = request["id"]
            _send({"id": request["id"], "pid": pid})


def _reap(children: dict[int, int]) -> None:
    while children:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        ident = children.pop(pid, None)
        if ident is not None:
            code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            _send({"id": ident, "status": code, "cpu": usage.ru_utime + usage.ru_stime})


def _send(message: ServerHello | ServerEvent) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _child(request: SpawnRequest) -> None:
    """Become the run's process and run the script; never returns."""
    code = 1
    try:
        started = time.perf_counter()
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        output = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.close(null)
        os.close(output)
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115  (lives as long as the process)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # read TMPDIR again: the run's, not the server's cached one
        script = request["script"]
        sys.argv = list(request["argv"])
        sys.path[0] = os.path.dirname(script)
        from . import activate

        activate(started=started)
        code = _run_script(script)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        _exit(code)


def _run_script(script: str) -> int:
    """What `python script.py` does: the script's code run in a fresh `__main__`
    module (argv[0] left as given: runpy would replace it with the path); uncaught
    errors go to sys.excepthook (which the runner wraps to record them), exit 1."""
    import builtins
    import importlib.machinery
    import types

    main = types.ModuleType("__main__")
    main.__file__ = script
    main.__cached__ = None  # type: ignore[attr-defined]
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", script)
    sys.modules["__main__"] = main
    try:
        with open(script, "rb") as fh:
            code = compile(fh.read(), script, "exec")
        exec(code, main.__dict__)
    except SystemExit as exc:
        return _exit_code(exc.code)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        return 128 + signal.SIGINT
    except BaseException:
        sys.excepthook(*sys.exc_info())
        return 1
    return 0


def _exit_code(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1


def _exit(code: int) -> None:
    """An interpreter's own shutdown: join non-daemon threads, run atexit handlers
    (the runner's record, the script's, torch's), flush, exit."""
    try:
        import threading

        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
        import atexit

        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except BaseException:
        pass
    os._exit(code)
