"""Ending every process a run started, and the runs still going when verify stops.

Each run starts in a session (and process group) of its own, so a signal to
the group reaches the script, its DataLoader workers and torchrun's ranks. A
process that leaves the group with setsid() escapes that; every process of a
run also carries a marker in its environment (inherited by whatever it
starts), and the parent scans /proc for it and ends what it finds. A process
that also clears its environment (`Popen(..., start_new_session=True, env={})`,
a double fork with `execve`) cannot shed its ancestry: on Linux this process and
each run's own process are child subreapers (PR_SET_CHILD_SUBREAPER), so an
orphan of a run stays under the run while it lives and comes to this process
once it has ended, where it is ended with the run (`kill_adopted`). No cgroup
and no privilege is needed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import uuid
from collections.abc import Iterator
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


_spawn_lock = threading.RLock()
_subreaper = False
_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Orphans of this process's descendants come to it, not to init (Linux)."""
    global _subreaper
    if _subreaper or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no prctl
        return
    _subreaper = True


@contextlib.contextmanager
def spawning() -> Iterator[None]:
    """Around starting a run's process and `started()`: a child not yet registered
    is never taken for an orphan (`kill_adopted`)."""
    become_subreaper()
    with _spawn_lock:
        yield


def started(pgid: int, marker: str) -> None:
    become_subreaper()
    with _lock:
        _live[pgid] = marker


def end_run(pgid: int, marker: str) -> None:
    """Kill the run's group, then anything else that carries its marker."""
    _killpg(pgid)
    kill_marked(marker + "\0")
    with _lock:
        _live.pop(pgid, None)
    kill_adopted()


def kill_all() -> None:
    """Every run of this verify process, finished or not (Ctrl-C, SIGTERM, a bug)."""
    with _lock:
        groups = list(_live)
        _live.clear()
    for pgid in groups:
        _killpg(pgid)
    kill_marked(SESSION + "-")
    kill_adopted()


def kill_adopted(rounds: int = 5) -> int:
    """SIGKILL (and reap) the children of this process that it did not start: the
    orphans of ended runs, which came to it as their subreaper. A run still going
    keeps its own (its process is a subreaper too); what `started()` registered,
    and any child started meanwhile (`spawning`), is left alone."""
    if not _subreaper:
        return 0
    killed = 0
    with _spawn_lock:
        for _ in range(rounds):
            with _lock:
                known = set(_live)
            found = [pid for pid in _children() if pid not in known]
            for pid in found:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)  # ours now: reaped here, or it stays a zombie
            killed += len(found)
            if not found:  # an orphan's own children come to us in turn
                break
    return killed


def _children() -> list[int]:
    """This process's children, from every thread's list (a child belongs to the
    thread that started it; an adopted orphan to any)."""
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{os.getpid()}/task").iterdir())
    except OSError:
        return found
    for task in tasks:
        found += _task_children(task)
    return found


def _task_children(task: Path) -> list[int]:
    try:
        return [int(pid) for pid in (task / "children").read_text().split()]
    except (OSError, ValueError):  # the thread has ended
        return []


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
