"""`fix --apply` loses nothing and keeps each file's identity: an edit made while it
runs survives, a link stays a link, hard links stay linked, owner and group stay,
a read-only file is left alone, and the summary counts only what was written."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from accel_lint.writeback import WriteRefused, write_fixed

SCRIPT = """\
import torch
from torch.utils.data import DataLoader

loader = DataLoader(torch.load("shards.pt"), batch_size=2)
model = torch.nn.Linear(1, 1).cuda()
"""
FIXED_LINE = 'loader = DataLoader(torch.load("shards.pt"), batch_size=2, pin_memory=True)'


def fix_apply(*paths: str, cwd: Path, as_nobody: bool = False) -> subprocess.CompletedProcess[str]:
    args = ["fix", "--apply", "--no-cache", *paths]
    command = [sys.executable, "-m", "accel_lint", *args]
    if as_nobody:
        command = [sys.executable, "-c", _AS_NOBODY, *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)


# The interpreter lives where `nobody` may not read it, so the child imports what the
# command needs as root (our modules, and the standard library's that they import only
# when used), then drops to `nobody` (uid 65534) and runs the command.
_AS_NOBODY = """
import importlib, os, pkgutil, sys
import difflib, multiprocessing, tempfile, tomllib
import accel_lint
for info in pkgutil.walk_packages(accel_lint.__path__, "accel_lint."):
    if ".verify" not in info.name and not info.name.endswith("__main__"):
        importlib.import_module(info.name)
os.setgroups([]); os.setgid(65534); os.setuid(65534)
from accel_lint.cli import main
sys.argv = ["accel-lint", *sys.argv[1:]]
main()
"""

needs_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root (to act as another user)"
)


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory `nobody` can reach (pytest's own temporary root is private)."""
    directory = Path(tempfile.mkdtemp(prefix="accel-lint-writes-"))
    os.chmod(directory, 0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


# -- edits made while fixing ---------------------------------------------------------


def test_a_file_changed_since_it_was_read_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(SCRIPT + "# edited meanwhile\n")
    with pytest.raises(WriteRefused, match="changed on disk"):
        write_fixed(path, SCRIPT.encode(), b"fixed\n")
    assert path.read_text() == SCRIPT + "# edited meanwhile\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


def test_edits_made_while_fix_runs_are_never_lost(tmp_path: Path) -> None:
    """A file appended to every 50 ms while a long fix runs (the fix reads it, takes
    seconds, then writes): every appended line is in the file at the end, and the
    run says that it left the file alone."""
    body = "".join(
        f"loader_{i} = DataLoader(torch.arange(8), batch_size={i + 1})\n" for i in range(1500)
    )
    path = tmp_path / "big.py"
    path.write_text(SCRIPT + body)
    log = tmp_path / "stderr.txt"
    with log.open("w") as stderr:  # a file, not a pipe nobody reads while we append
        process = subprocess.Popen(
            [sys.executable, "-m", "accel_lint", "fix", "--apply", "--no-cache", "big.py"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        edits = 0
        deadline = time.monotonic() + 600
        while process.poll() is None and time.monotonic() < deadline:
            with path.open("a") as fh:
                fh.write(f"# edit {edits}\n")
            edits += 1
            time.sleep(0.05)
        process.kill()
        process.wait()
    err = log.read_text()
    lines = path.read_text().splitlines()
    assert [line for line in lines if line.startswith("# edit")] == [
        f"# edit {i}" for i in range(edits)
    ]
    assert process.returncode == 2, err
    assert "big.py: cannot write: changed on disk while accel-lint was fixing it" in err
    assert "Fixed" not in err


# -- identity ----------------------------------------------------------------------


def test_a_symlinked_file_is_fixed_at_its_target(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "train.py"
    target.write_text(SCRIPT)
    (tmp_path / "train.py").symlink_to(Path("real") / "train.py")
    result = fix_apply("train.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # ACL101 remains: no fix without a __main__ guard
    assert "Fixed 1 finding in 1 file." in result.stderr
    assert (tmp_path / "train.py").is_symlink()
    assert os.readlink(tmp_path / "train.py") == os.path.join("real", "train.py")
    assert FIXED_LINE in target.read_text()
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["train.py"]


def test_hard_links_stay_linked(tmp_path: Path) -> None:
    first = tmp_path / "train.py"
    first.write_text(SCRIPT)
    (tmp_path / "other").mkdir()
    second = tmp_path / "other" / "copy.py"
    os.link(first, second)
    inode = first.stat().st_ino
    result = fix_apply("train.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # ACL101 remains: no fix without a __main__ guard
    assert "Fixed 1 finding in 1 file." in result.stderr
    assert first.stat().st_ino == second.stat().st_ino == inode
    assert first.stat().st_nlink == 2
    assert FIXED_LINE in second.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other", "train.py"]


@needs_root
def test_root_fixing_another_user_s_file_keeps_its_owner_group_and_mode(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    os.chown(path, 65534, 65534)
    os.chmod(path, 0o640)
    result = fix_apply("train.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # ACL101 remains: no fix without a __main__ guard
    assert "Fixed 1 finding in 1 file." in result.stderr
    info = path.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (65534, 65534, 0o640)
    assert FIXED_LINE in path.read_text()


def test_a_read_only_file_is_left_alone_with_a_message(tmp_path: Path) -> None:
    """Even root, who could write it, leaves it; the other files are still fixed and
    the summary counts only what was written."""
    (tmp_path / "frozen.py").write_text(SCRIPT)
    os.chmod(tmp_path / "frozen.py", 0o444)
    (tmp_path / "train.py").write_text(SCRIPT)
    result = fix_apply("frozen.py", "train.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "frozen.py: cannot write: read-only file (mode 0444); left as it is" in result.stderr
    assert (tmp_path / "frozen.py").read_text() == SCRIPT
    assert stat.S_IMODE((tmp_path / "frozen.py").stat().st_mode) == 0o444
    assert FIXED_LINE in (tmp_path / "train.py").read_text()
    assert "Fixed 1 finding in 1 file." in result.stderr
    assert "Traceback" not in result.stderr


@needs_root
def test_a_file_another_user_may_not_write_is_not_replaced(shared: Path) -> None:
    """`nobody` may read root's file and create files beside it, but not write it: a
    rename would replace it (and make it nobody's). The write fails, and the
    summary does not count it."""
    os.chmod(shared, 0o777)
    (shared / "train.py").write_text(SCRIPT)
    os.chmod(shared / "train.py", 0o644)
    result = fix_apply("train.py", cwd=shared, as_nobody=True)
    assert result.returncode == 2, result.stderr
    assert "train.py: cannot write: permission denied; left as it is" in result.stderr
    assert "Fixed" not in result.stderr
    assert (shared / "train.py").read_text() == SCRIPT
    assert (shared / "train.py").stat().st_uid == 0


@needs_root
def test_a_writable_file_in_a_read_only_directory_is_fixed_in_place(shared: Path) -> None:
    path = shared / "train.py"  # nobody cannot create a temporary file beside it
    path.write_text(SCRIPT)
    os.chown(path, 65534, 65534)
    result = fix_apply("train.py", cwd=shared, as_nobody=True)
    assert result.returncode == 1, result.stderr  # ACL101 remains: no fix without a __main__ guard
    assert "Fixed 1 finding in 1 file." in result.stderr
    assert FIXED_LINE in path.read_text()
    assert path.stat().st_uid == 65534
    assert sorted(p.name for p in shared.iterdir()) == ["train.py"]
