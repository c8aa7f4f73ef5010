"""The parent's side of the warm interpreter (`runner/server.py`): start it, ask
it to fork a run, wait for the run to end.

One server per verification, started before the fixes are computed so that its
`import torch` overlaps the parent's own work; its first line doubles as the
check that torch can be imported by the interpreter the runs use.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
from pathlib import Path
from typing import IO

from accel_lint.verify import processes
from accel_lint.verify.protocol import RUN_MARKER_ENV, ServerEvent, ServerHello, SpawnRequest

BOOT = "import sitecustomize; sitecustomize.load('runner.server').serve()"


class ServerGone(RuntimeError):
    """The warm interpreter died: the run is started the ordinary way."""


class WarmInterpreter:
    def __init__(self, python: str, env: dict[str, str], log: Path | None = None) -> None:
        self.marker = processes.new_marker()
        env = {**env, RUN_MARKER_ENV: self.marker}
        self._log: IO[bytes] | None = open(log, "wb") if log else None  # noqa: SIM115
        with processes.spawning():
            self.proc = subprocess.Popen(
                [python, "-c", BOOT],
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log or subprocess.DEVNULL,
                start_new_session=True,
            )
            processes.started(self.proc.pid, self.marker)
        self._hello: ServerHello | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._next = 0
        self._events: dict[int, list[ServerEvent]] = {}
        self._changed = threading.Condition(self._lock)
        self._gone = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if self._hello is None:
                self._hello = message
                self._ready.set()
                continue
            with self._changed:
                self._events.setdefault(int(message["id"]), []).append(message)
                self._changed.notify_all()
        with self._changed:
            self._gone = True
            self._changed.notify_all()
        self._ready.set()

    def hello(self, timeout: float | None = None) -> ServerHello | None:
        """The server's first line (None: it died or did not answer in time)."""
        self._ready.wait(timeout)
        return self._hello

    @property
    def usable(self) -> bool:
        hello = self._hello
        return hello is not None and hello["torch"] is not None and not self._gone

    def spawn(
        self, script: str, argv: list[str], cwd: str, env: dict[str, str], output: str
    ) -> int:
        """Start a run; returns its request id once the server reports its pid."""
        if not self.usable or self.proc.stdin is None:
            raise ServerGone("the warm interpreter is not running")
        with self._lock:
            self._next += 1
            ident = self._next
            request: SpawnRequest = {
                "id": ident,
                "script": script,
                "argv": argv,
                "cwd": cwd,
                "env": env,
                "output": output,
            }
            try:
                self.proc.stdin.write((json.dumps(request) + "\n").encode())
                self.proc.stdin.flush()
            except OSError as exc:
                raise ServerGone(str(exc)) from exc
        return ident

    def pid(self, ident: int, timeout: float = 30.0) -> int:
        event = self._wait(ident, "pid", timeout)
        if event is None or "pid" not in event:
            raise ServerGone("the warm interpreter did not start the run")
        return int(event["pid"])

    def wait(self, ident: int, timeout: float | None) -> int | None:
        """The run's exit status, or None when `timeout` passed first."""
        event = self._wait(ident, "status", timeout)
        if event is None:
            if self._gone:
                raise ServerGone("the warm interpreter died while a run was under way")
            return None
        return int(event["status"])

    def cpu_seconds(self, ident: int) -> float | None:
        """CPU seconds of an ended run's process (and the processes it waited for)."""
        with self._lock:
            event = next((e for e in self._events.get(ident, []) if "status" in e), None)
        return float(event["cpu"]) if event is not None and "cpu" in event else None

    def _wait(self, ident: int, key: str, timeout: float | None) -> ServerEvent | None:
        with self._changed:
            found = self._changed.wait_for(
                lambda: self._gone or any(key in e for e in self._events.get(ident, [])),
                timeout,
            )
            if not found:
                return None
            return next((e for e in self._events.get(ident, []) if key in e), None)

    def close(self, *, unused: bool = False) -> None:
        """End the server: politely once it has served (it exits when its input
        closes), at once when it was `unused` (it may still be importing torch)."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        if not unused:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        processes.end_run(self.proc.pid, self.marker)
        if unused:  # killed: reap it
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        if self._log is not None:
            self._log.close()
