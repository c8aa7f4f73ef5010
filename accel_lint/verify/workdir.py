"""Each run's working directory: a fresh copy of the script's directory.

A run may write anywhere in its working directory (checkpoints, logs, caches,
appends to an existing file), so nothing of the user's tree may be reachable
there for writing: every directory is a new directory, every regular file a
new file (a copy-on-write clone where the file system offers one, a plain copy
otherwise). Hard links or links to the user's files would let a write in place
reach them. Symbolic links are recreated so that they resolve as they did: a
link into the tree points into the copy, a link out of it (`data ->
../shared_data`) points to the same place as before. Version control and cache
directories are left out. See docs/verifier.md, "The scratch copy".
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".accel_lint_cache",
        "node_modules",
        "wandb",
        "mlruns",
    }
)
LARGE_COPY_BYTES = 2**30  # worth a note: every run copies this much
_FICLONE = 0x40049409  # Linux ioctl: share the source's blocks until either side writes


def copy_workdir(source: Path, dest: Path) -> int:
    """Copy `source` to the new directory `dest`; returns the bytes copied."""
    root = Path(os.path.realpath(source))
    return _copy_tree(root, dest, root)


def _copy_tree(directory: Path, dest: Path, root: Path) -> int:
    dest.mkdir(parents=True)
    copied = 0
    with os.scandir(directory) as scan:
        entries = sorted(scan, key=lambda e: e.name)
    for entry in entries:
        target = dest / entry.name
        if entry.is_symlink():
            _copy_link(Path(entry.path), target, root)
        elif entry.is_dir(follow_symlinks=False):
            if entry.name not in SKIP_DIRS:
                copied += _copy_tree(Path(entry.path), target, root)
        elif entry.is_file(follow_symlinks=False):
            copied += copy_file(Path(entry.path), target)
        # FIFOs, sockets and devices are not copied: reading one could block forever
    return copied


def _copy_link(link: Path, target: Path, root: Path) -> None:
    """Recreate a symbolic link so that it resolves in the copy as it did in the
    tree: into the copy when its target is part of the copy, else to the target's
    absolute path (a relative link out of the tree would dangle in the scratch)."""
    resolved = Path(os.path.realpath(link))
    if not resolved.exists():
        os.symlink(os.readlink(link), target)  # dangling before, dangling after
        return
    try:
        inside = resolved.relative_to(root)
    except ValueError:
        inside = None
    if inside is not None and not SKIP_DIRS.intersection(inside.parts):
        start = link.parent.relative_to(root) if link.parent != root else Path()
        os.symlink(
            os.path.relpath(inside, start) if inside.parts else os.path.relpath(".", start),
            target,
            target_is_directory=resolved.is_dir(),
        )
        return
    os.symlink(resolved, target, target_is_directory=resolved.is_dir())


def copy_file(source: Path, dest: Path) -> int:
    """A new file with `source`'s bytes, mode and times."""
    size = source.stat().st_size
    if not _clone(source, dest):
        shutil.copyfile(source, dest)
    with contextlib.suppress(OSError):
        shutil.copystat(source, dest)
    return size


def _clone(source: Path, dest: Path) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows
        return False
    try:
        with open(source, "rb") as src, open(dest, "wb") as dst:
            fcntl.ioctl(dst.fileno(), _FICLONE, src.fileno())
    except OSError:
        with contextlib.suppress(OSError):
            dest.unlink()
        return False
    return True
