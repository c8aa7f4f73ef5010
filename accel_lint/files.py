"""Which files to lint, and reading them."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from accel_lint.config import Settings
from accel_lint.gitignore import GitIgnore

MAX_BYTES = 5 * 1024 * 1024  # libcst needs seconds per 100 kB of one huge literal


def discover(paths: Iterable[str], settings: Settings, *, force_exclude: bool = False) -> list[str]:
    """Python files and notebooks under `paths`, sorted, without excluded ones.

    A file named on the command line is linted even when excluded, unless
    `force_exclude` (what pre-commit hooks pass, since they name every file).
    """
    found: dict[str, None] = {}
    for raw in paths:
        path = Path(raw)
        ignore = GitIgnore.for_path(path) if settings.respect_gitignore else None
        if path.is_dir():
            for file in _walk(path, settings, ignore):
                found[os.path.normpath(file)] = None
        elif force_exclude and (
            settings.is_excluded(path) or (ignore is not None and ignore.ignored_with_parents(path))
        ):
            continue
        else:
            found[os.path.normpath(path)] = None  # missing/unreadable: ACL000 when read
    return sorted(found)


def _walk(root: Path, settings: Settings, ignore: GitIgnore | None) -> Iterator[str]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not settings.is_excluded(os.path.join(dirpath, d))
            and not (ignore is not None and ignore.ignored(os.path.join(dirpath, d), True))
        )
        for name in sorted(filenames):
            if name.endswith((".py", ".ipynb")):
                full = os.path.join(dirpath, name)
                if not settings.is_excluded(full) and not (
                    ignore is not None and ignore.ignored(full, False)
                ):
                    yield full


class ReadError(Exception):
    pass


def read_bytes(path: str) -> bytes:
    try:
        size = os.path.getsize(path)
        if size > MAX_BYTES:
            raise ReadError(
                f"file is too large to lint ({size / 1e6:.1f} MB; "
                f"the limit is {MAX_BYTES / 1e6:.0f} MB)"
            )
        with open(path, "rb") as fh:
            return fh.read()
    except IsADirectoryError:
        raise ReadError("is a directory") from None
    except FileNotFoundError:
        raise ReadError("no such file or directory") from None
    except PermissionError:
        raise ReadError("permission denied") from None
    except OSError as exc:
        raise ReadError(exc.strerror or str(exc)) from None
