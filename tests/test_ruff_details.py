"""The details a ruff user notices in the first hour: a closed pipe, `--isolated`,
ACL000 in a selection, `fix --diff`, "did you mean", where the target torch came from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TRAIN = """\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
data = torch.load("records.pt")
loader = DataLoader(data, batch_size=8)
if __name__ == "__main__":
    for (x,) in loader:
        x = x.to(device, non_blocking=True)
"""


def _into_a_closed_pipe(
    args: list[str], cwd: Path, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    """`accel-lint ARGS | true`, made certain: the reading process has already exited
    (waited for, not timed) when accel-lint starts, so its first write meets a pipe
    nobody reads - what `| head -1` does once it has its line."""
    read_end, write_end = os.pipe()
    reader = subprocess.Popen(["true"], stdin=read_end)
    reader.wait()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "accel_lint", *args],
            cwd=cwd,
            input=stdin,
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=120,
            env={**os.environ, "NO_COLOR": "1"},
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "args",
    [
        ["rules"],
        ["rules", "--output-format", "json"],
        ["rule", "ACL101"],
        ["check", "."],
        ["check", "--output-format", "json", "."],
        ["check", "--output-format", "sarif", "."],
        ["check", "--statistics", "."],
        ["check", "--show-settings", "."],
        ["check", "--show-files", "."],
        ["check", "--diff", "."],
        ["fix", "."],
        ["fix", "--apply", "-", "--stdin-filename", "train.py"],
        ["-V"],
        ["--help"],
    ],
    ids=lambda a: " ".join(a),
)
def test_a_closed_pipe_ends_every_command_quietly(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    if args[0] in ("check", "fix"):
        args = [*args, "--no-cache"]
    ran = _into_a_closed_pipe(args, tmp_path, stdin=TRAIN.encode())
    assert b"Traceback" not in ran.stderr
    assert b"internal error" not in ran.stderr
    assert b"Exception ignored" not in ran.stderr
    assert ran.returncode == 0, ran.stderr.decode()
