"""Writing a fixed file back: only over the bytes that were fixed, and keeping the
file's identity (its links, owner, group and mode).

- The file is read again just before it is replaced and compared with the bytes
  the fixes were computed from: an edit made while `fix --apply` ran (an editor's
  save, a `git checkout`) is never overwritten; the file is left as it is and
  the caller says so.
- A symbolic link is fixed at its target; the link stays a link.
- The usual write is atomic: a temporary file in the same directory, flushed to
  disk, given the original's mode (and owner and group) and extended attributes
  (user attributes, ACLs, SELinux labels), then renamed over it.
- A rename gives the path a new inode, so where that would change the file's
  identity (more than one hard link, an owner or group this process cannot
  give the new inode, an extended attribute it cannot copy) the file is
  rewritten in place through its own inode instead, after the same comparison,
  under the open descriptor.
- A read-only file (no write permission bit) is left alone, even for root, who
  could write it: read-only is how people protect generated or vendored code.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from accel_lint.files import ReadError, read_bytes


class WriteRefused(Exception):
    """The file was deliberately left as it is; the message says why."""


CHANGED = "changed on disk while accel-lint was fixing it; left as it is (run the fix again)"


def write_fixed(path: str | os.PathLike[str], original: bytes, fixed: bytes) -> None:
    """Replace the file's bytes, which must still be `original`, by `fixed`.

    Raises WriteRefused when the file is read-only, not writable by this user or
    changed since it was read; OSError when writing fails (the file is then as
    it was).
    """
    target = Path(os.path.realpath(path))  # a link is fixed at its target
    info = os.stat(target)
    if not stat.S_ISREG(info.st_mode):
        raise WriteRefused("not a regular file; left as it is")
    if not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        mode = stat.S_IMODE(info.st_mode)
        raise WriteRefused(f"read-only file (mode {mode:04o}); left as it is")
    if not os.access(target, os.W_OK):
        raise WriteRefused("permission denied; left as it is")
    if info.st_nlink > 1 or not _can_give(info):
        _write_in_place(target, original, fixed)
        return
    try:
        _replace(target, info, original, fixed)
    except _XattrsNotCopied:
        _write_in_place(target, original, fixed)  # the inode keeps what we cannot copy
    except PermissionError:
        # the directory does not let us create the temporary file, but the file
        # itself is writable: write through it, as for a hard link
        _write_in_place(target, original, fixed)


def _can_give(info: os.stat_result) -> bool:
    """Whether a new file made by this process can get the original's owner and group."""
    if not hasattr(os, "geteuid"):
        return True  # no POSIX ownership (Windows)
    if os.geteuid() == 0:
        return True
    return info.st_uid == os.geteuid() and (
        info.st_gid == os.getegid() or info.st_gid in os.getgroups()
    )


def _unchanged(target: Path, original: bytes) -> None:
    try:
        current = read_bytes(str(target))
    except ReadError:
        raise WriteRefused(CHANGED) from None
    if current != original:
        raise WriteRefused(CHANGED)


def _replace(target: Path, info: os.stat_result, original: bytes, fixed: bytes) -> None:
    fd, tmp = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".accel-lint.tmp"
    )
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(fixed)
            fh.flush()
            os.fsync(fh.fileno())
            if hasattr(os, "fchown"):
                made = os.fstat(fh.fileno())
                if (made.st_uid, made.st_gid) != (info.st_uid, info.st_gid):
                    os.fchown(fh.fileno(), info.st_uid, info.st_gid)
            _copy_xattrs(target, fh.fileno())
        os.chmod(tmp, stat.S_IMODE(info.st_mode))  # after chown, which clears set-id bits
        _unchanged(target, original)  # as late as possible: just before the rename
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class _XattrsNotCopied(Exception):
    pass


def _copy_xattrs(source: Path, fd: int) -> None:
    """The extended attributes of `source` (user attributes, ACLs, SELinux labels)
    set on the new file; _XattrsNotCopied when one cannot be, so the caller writes
    through the original inode instead."""
    if not hasattr(os, "listxattr"):
        return  # pragma: no cover - not Linux
    try:
        names = os.listxattr(source)
    except OSError:
        return  # the file system has none
    try:
        for name in names:
            os.setxattr(fd, name, os.getxattr(source, name))
    except OSError as exc:
        raise _XattrsNotCopied(exc.filename or "") from exc


def _write_in_place(target: Path, original: bytes, fixed: bytes) -> None:
    """Rewrite the file through its own inode, which keeps every hard link, the owner,
    the group and the mode. It is not atomic, so the original bytes are first saved
    beside the file (when the directory allows it) and removed only once the new
    bytes are on disk: a crash in between leaves them recoverable; a failed write
    puts them back."""
    with open(target, "r+b") as fh:
        if fh.read(len(original) + 1) != original:
            raise WriteRefused(CHANGED)
        backup = _save_copy(target, original)
        try:
            fh.seek(0)
            fh.write(fixed)
            fh.truncate()
            fh.flush()
            os.fsync(fh.fileno())
        except OSError:
            with contextlib.suppress(OSError):
                fh.seek(0)
                fh.write(original)
                fh.truncate()
                fh.flush()
            raise
        if backup is not None:
            with contextlib.suppress(OSError):
                os.unlink(backup)


def _save_copy(target: Path, data: bytes) -> str | None:
    try:
        fd, copy = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name}.", suffix=".accel-lint.orig"
        )
    except OSError:
        return None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(copy)
        return None
    return copy
