"""Inputs that once crashed, hung or fooled the linter, through real subprocess runs:
a FIFO or a device where a `.py` file should be, nesting that crashes libcst's native
parser, files that CPython rejects but libcst accepts (and the reverse)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TRAIN = """\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda")
loader = DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 3)), batch_size=8)
for (x,) in loader:
    x = x.to(device)
"""


def run(
    *args: str, cwd: Path, timeout: float = 60, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "accel_lint", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
    )


def findings(result: subprocess.CompletedProcess[str]) -> list[tuple[str, str, str]]:
    return [(d["filename"], d["code"], d["message"]) for d in json.loads(result.stdout)]


# -- what is not a regular file is not read ---------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_fifo_named_like_a_python_file_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.py")
    (tmp_path / "train.py").write_text(TRAIN)
    for args in (["x.py", "train.py"], ["."]):
        result = run(
            "check", "--no-cache", "--output-format", "json", *args, cwd=tmp_path, timeout=20
        )
        assert result.returncode == 1, result.stderr
        found = findings(result)
        assert ("x.py", "ACL000", "cannot read file: not a regular file (a named pipe)") in found
        assert any(name == "train.py" and code == "ACL101" for name, code, _ in found)
        assert "Traceback" not in result.stderr


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_link_to_an_endless_device_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    (tmp_path / "train.py").write_text(TRAIN)
    for command in (["check", "--output-format", "json"], ["fix", "--apply"]):
        result = run(*command, "--no-cache", ".", cwd=tmp_path, timeout=30)
        assert "Traceback" not in result.stderr
        assert result.returncode == 1, result.stderr
        assert "zero.py" in result.stdout + result.stderr
        assert "not a regular file (a character device)" in result.stdout + result.stderr


def test_the_size_cap_is_checked_before_reading(tmp_path: Path) -> None:
    from accel_lint import files

    big = tmp_path / "big.py"
    with big.open("wb") as fh:
        fh.truncate(files.MAX_BYTES + 1)  # sparse: reading it would cost memory, fstat does not
    with pytest.raises(files.ReadError, match="too large"):
        files.read_bytes(str(big))
