"""Ending every process a run started, and the runs still going when verify stops.

Each run starts in a session (and process group) of its own, so a signal to
the group reaches the script, its DataLoader workers and torchrun's ranks. A
process that leaves the group with setsid() escapes that; every process of a
run also carries a marker in its environment (inherited by whatever it
starts), and the parent scans /proc for it and ends what it finds. No cgroup
and no privilege is needed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import uuid
from pathlib import Path

from accel_lint.verify.protocol import RUN_MARKER_ENV

SESSION = uuid.uuid4().hex[:12]  # this verify process's runs share the prefix
_live: dict[int, str] = {}  # process group -> the run's marker
_lock = threading.Lock()
_counter = 0


def new_marker() -> str:
    global _counter
    with _lock:
        _counter += 1
        return f"{SESSION}-{_counter}"


def started(pgid: int, marker: str) -> None:
    with _lock:
        _live[pgid] = marker


def end_run(pgid: int, marker: str) -> None:
    """Kill the run's group, then anything else that carries its marker."""
    _killpg(pgid)
    kill_marked(marker + "\0")
    with _lock:
        _live.pop(pgid, None)


def kill_all() -> None:
    """Every run of this verify process, finished or not (Ctrl-C, SIGTERM, a bug)."""
    with _lock:
        groups = list(_live)
        _live.clear()
    for pgid in groups:
        _killpg(pgid)
    kill_marked(SESSION + "-")


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_marked(prefix: str, rounds: int = 5) -> int:
    """SIGKILL every process whose environment has `RUN_MARKER_ENV=<prefix>...`;
    repeated while new ones appear (a process may fork while we kill). Linux only:
    elsewhere the process groups are what is ended."""
    needle = f"{RUN_MARKER_ENV}={prefix}".encode()
    proc = Path("/proc")
    if not proc.is_dir():
        return 0
    me = os.getpid()
    killed = 0
    for _ in range(rounds):
        found = 0
        for entry in proc.iterdir():
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if needle in environ:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(entry.name), signal.SIGKILL)
                    found += 1
        killed += found
        if not found:
            break
    return killed
