"""Which files to lint, and reading them."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from accel_lint.config import Settings
from accel_lint.gitignore import GitIgnore

MAX_BYTES = 5 * 1024 * 1024  # libcst needs seconds per 100 kB of one huge literal
# A notebook's outputs (images, tables) are not linted: its file may be larger, and
# its code cells are held to MAX_BYTES once read (`too_large`). This bounds the JSON
# parse (about 5 times the file in memory).
NOTEBOOK_MAX_BYTES = 64 * 1024 * 1024


def limit_for(path: str) -> int:
    return NOTEBOOK_MAX_BYTES if path.lower().endswith(".ipynb") else MAX_BYTES


def too_large(size: int, what: str = "file") -> str | None:
    """Why `size` bytes of code are too many to lint, or None."""
    return _too_large(size, MAX_BYTES, what) if size > MAX_BYTES else None


def discover(
    paths: Iterable[str],
    settings: Settings,
    *,
    force_exclude: bool = False,
    settings_in: Callable[[str], Settings] | None = None,
) -> list[str]:
    """Python files and notebooks under `paths`, sorted, without excluded ones.

    What lies in a directory is excluded by the settings `settings_in` gives that
    directory (the closest configuration at or above it, as ruff: a sub-project's own
    `exclude` and `respect-gitignore` apply to its files, its patterns relative to its
    own directory); without `settings_in` (`--config`, `--isolated`), by `settings`.
    Each directory is asked once.

    A file named on the command line is linted even when excluded, unless
    `force_exclude` (what pre-commit hooks pass, since they name every file).
    """

    def governing(directory: str) -> Settings:
        return settings if settings_in is None else settings_in(directory)

    found: dict[str, None] = {}
    for raw in paths:
        path = Path(raw)
        if os.path.isdir(path):  # False where it cannot be looked at: read error later
            own = governing(str(path))
            ignore = _gitignore(path, own, settings_in is not None)
            rerooted = None
            if own.is_excluded(path):
                if force_exclude:
                    continue
                # a directory named by the user is linted even when excluded (`build`),
                # as a named file is; exclusions apply to what lies below it, whatever
                # other paths share the command line
                rerooted = replace(own, root=Path(os.path.abspath(path)))

            def within(
                directory: str, own: Settings = own, new: Settings | None = rerooted
            ) -> Settings:
                here = governing(directory)
                return new if new is not None and here is own else here

            for file in _walk(path, within, ignore):
                found[os.path.normpath(file)] = None
        elif force_exclude and _named_file_excluded(path, governing):
            continue
        else:
            found[os.path.normpath(path)] = None  # missing/unreadable: ACL000 when read
    return sorted(found)


def _gitignore(path: Path, own: Settings, hierarchical: bool) -> GitIgnore | None:
    # with each directory's own settings, one below may respect .gitignore where the
    # named path's do not: the patterns are read only where a directory asks
    return GitIgnore.for_path(path) if own.respect_gitignore or hierarchical else None


def _named_file_excluded(path: Path, governing: Callable[[str], Settings]) -> bool:
    own = governing(os.path.dirname(os.path.abspath(path)))
    if own.is_excluded(path):
        return True
    ignore = GitIgnore.for_path(path) if own.respect_gitignore else None
    return ignore is not None and ignore.ignored_with_parents(path)


def once_each(files: Sequence[str]) -> list[str]:
    """`files` without the second path to a file already listed (a hard link, a
    symbolic link or a linked folder): what writes files must write each once, by
    identity (device and inode), or it would find its own write a change on disk."""
    seen: set[tuple[int, int]] = set()
    out: list[str] = []
    for path in files:
        try:
            info = os.stat(path)
        except OSError:
            out.append(path)  # its read error is reported as it is
            continue
        key = (info.st_dev, info.st_ino)
        if key not in seen:
            seen.add(key)
            out.append(path)
    return out


def _walk(
    root: Path, settings_in: Callable[[str], Settings], ignore: GitIgnore | None
) -> Iterator[str]:
    for dirpath, dirnames, filenames in os.walk(root):
        here = settings_in(dirpath)  # once per directory, for all that lies in it
        honour = ignore if here.respect_gitignore else None
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not here.is_excluded(os.path.join(dirpath, d))
            and not (honour is not None and honour.ignored(os.path.join(dirpath, d), True))
        )
        for name in sorted(filenames):
            if name.endswith((".py", ".ipynb")):
                full = os.path.join(dirpath, name)
                if not here.is_excluded(full) and not (
                    honour is not None and honour.ignored(full, False)
                ):
                    yield full


class ReadError(Exception):
    pass


# What `stat` calls the kinds of file that are not regular, for the message
_KINDS = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)

# O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever, before
# fstat could say what it is. It changes nothing for a regular file.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_OPEN_FLAGS |= getattr(os, "O_BINARY", 0)


def read_bytes(path: str, limit: int | None = None) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (links followed; by
    default `limit_for(path)`).

    Anything else (a FIFO, a device such as /dev/zero, a socket) is refused from
    `fstat` on the opened descriptor, before a byte is read, so it can neither
    block nor be read until memory runs out.
    """
    if limit is None:
        limit = limit_for(path)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except IsADirectoryError:
        raise ReadError("is a directory") from None
    except FileNotFoundError:
        raise ReadError("no such file or directory") from None
    except PermissionError:
        raise ReadError("permission denied") from None
    except OSError as exc:
        raise ReadError(exc.strerror or str(exc)) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ReadError("is a directory")
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "a special file")
            raise ReadError(f"not a regular file ({kind})")
        if info.st_size > limit:
            raise ReadError(_too_large(info.st_size, limit))
        # the file may grow between fstat and read: never take more than the cap
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise ReadError(_too_large(size, limit))
        return b"".join(chunks)
    except OSError as exc:
        raise ReadError(exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


def _too_large(size: int, limit: int, what: str = "file") -> str:
    return f"{what} is too large to lint ({size / 1e6:.1f} MB; the limit is {limit / 1e6:.0f} MB)"
