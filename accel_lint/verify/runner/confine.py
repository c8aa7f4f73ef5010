"""Writes that leave the run's copy through a symbolic link are refused.

A run works in a copy of the script's folder, but a link in that folder (a log
file, an output folder, a dataset linked elsewhere) still resolves where it did:
a write through it would change the user's own files, once per run. Opening such
a path for writing (and making, removing or renaming one) raises PermissionError
naming it, so the run stops and the report says why; reading through links keeps
working (datasets are often linked). Paths that do not lie in the copy at all
(the run's records, TMPDIR) are not this module's business.

Each refusal is also recorded at once, one JSON line in the run's `out` directory
(`protocol.refused_writes_file`): the report names the path even when the script
caught the error and went on. Only Python's own calls are guarded (`open`,
`os.open` and the `os` functions below, which `pathlib` and `shutil` use); a write
made by native code (a C extension's own `fopen`, a subprocess that is not
Python) is not seen.
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
from typing import Any

from ..protocol import refused_writes_file

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
MESSAGE = "the script writes outside its folder (a link out of the run's copy)"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class Confinement:
    def __init__(self, root: str, out: str | None = None) -> None:
        self.root = os.path.abspath(root)
        self.real_root = os.path.realpath(root)
        self.out = out  # where refusals are recorded (None: nowhere)
        self._write = os.write
        self._open = os.open
        self._close = os.close

    def check(self, path: Any) -> None:
        """PermissionError when `path` lies in the copy but resolves outside it."""
        if isinstance(path, int):
            return  # a descriptor: opened (and checked) already
        try:
            text = os.fspath(path)
        except TypeError:
            return
        if isinstance(text, bytes):
            text = os.fsdecode(text)
        absolute = os.path.abspath(text)
        if not _inside(absolute, self.root):
            return
        real = os.path.realpath(absolute)
        if _inside(real, self.real_root):
            return
        self._record(text, real)
        raise PermissionError(
            errno.EACCES, f"accel-lint verify: {MESSAGE}: it resolves to {real}; refused", text
        )

    def _record(self, path: str, real: str) -> None:
        """One line per refusal, appended in one write (the real calls: never guarded)."""
        if self.out is None:
            return
        line = json.dumps({"path": path, "resolves_to": real}) + "\n"
        try:
            fd = self._open(
                refused_writes_file(self.out, os.getpid()),
                os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                0o644,
            )
        except OSError:
            return  # the run's records are gone: nothing to tell
        try:
            self._write(fd, line.encode("utf-8"))
        except OSError:
            pass
        finally:
            self._close(fd)


def _writes(mode: Any) -> bool:
    return isinstance(mode, str) and any(c in mode for c in "wax+")


def confine_writes(root: str, out: str | None = None) -> Confinement:
    """Install the checks for the run whose copy is `root` (the working directory);
    refusals are recorded in `out`, the run's records directory."""
    guard = Confinement(root, out)
    real_open = builtins.open
    real_os_open = os.open

    def open_(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if _writes(mode):
            guard.check(file)
        return real_open(file, mode, *args, **kwargs)

    def os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & _WRITE_FLAGS:
            guard.check(path)
        return real_os_open(path, flags, *args, **kwargs)

    builtins.open = open_
    io.open = open_
    os.open = os_open
    for name in ("mkdir", "remove", "unlink", "rmdir"):
        _guard_path_call(os, name, guard)
    for name in ("rename", "replace"):
        _guard_two_paths(os, name, guard)
    return guard


def _guard_path_call(module: Any, name: str, guard: Confinement) -> None:
    real = getattr(module, name)

    def call(path: Any, *args: Any, **kwargs: Any) -> Any:
        guard.check(path)
        return real(path, *args, **kwargs)

    setattr(module, name, call)


def _guard_two_paths(module: Any, name: str, guard: Confinement) -> None:
    real = getattr(module, name)

    def call(src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
        guard.check(src)
        guard.check(dst)
        return real(src, dst, *args, **kwargs)

    setattr(module, name, call)
