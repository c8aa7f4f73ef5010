"""The defects of the third stress test (issue 23), each through a real run: inputs
that took the whole run down, wrong results, what was left running or written where
it must not be."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

TRAIN = """\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda")
loader = DataLoader(torch.load("records.pt"), batch_size=8)
for (x,) in loader:
    x = x.to(device)
"""


def run(
    *args: str, cwd: Path, timeout: float = 120, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "accel_lint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
    )


def findings(result: subprocess.CompletedProcess[str]) -> list[tuple[str, str, str]]:
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return sorted((d["filename"], d["code"], d["message"]) for d in json.loads(result.stdout))


def codes(result: subprocess.CompletedProcess[str]) -> list[tuple[str, str]]:
    return [(name, code) for name, code, _ in findings(result)]


def notebook(cells: list[dict[str, Any]], metadata: str = "{}") -> str:
    """An nbformat 4.5 notebook's text, with `metadata` as raw JSON."""
    body = json.dumps(cells, indent=1)
    return (
        '{\n "cells": ' + body + ',\n "metadata": ' + metadata + ",\n"
        ' "nbformat": 4,\n "nbformat_minor": 5\n}\n'
    )


def code_cell(source: Any, number: int = 1) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": f"cell-{number}",
        "metadata": {},
        "outputs": [],
        "source": source,
    }


def valid(text: str) -> None:
    nbformat = pytest.importorskip("nbformat")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)  # nbformat's own json.loads, for the deep case
    try:
        nbformat.validate(nbformat.reads(text, as_version=4))
    finally:
        sys.setrecursionlimit(limit)


# -- whole-run crashes -----------------------------------------------------------------


def test_a_notebook_nesting_1000_brackets_is_read_and_deeper_is_acl000(tmp_path: Path) -> None:
    """Metadata 1,000 lists deep is a valid notebook (its code is linted); 20,000 deep
    is one ACL000 for that notebook; the run goes on either way (it was a
    RecursionError, exit 2, the other files' findings lost)."""
    for name, depth in (("deep.ipynb", 1000), ("deeper.ipynb", 20_000)):
        text = notebook([code_cell(TRAIN)], '{"deep": ' + "[" * depth + "]" * depth + "}")
        if depth == 1000:
            valid(text)
        (tmp_path / name).write_text(text)
    (tmp_path / "train.py").write_text(TRAIN)
    for jobs in ("1", "2"):
        result = run(
            "check", "--no-cache", "--output-format", "json", "-j", jobs,
            "deep.ipynb", "deeper.ipynb", "train.py", cwd=tmp_path,
        )  # fmt: skip
        assert result.returncode == 1, result.stderr[-3000:]
        assert findings(result) == [
            ("deep.ipynb", "ACL101", findings(result)[0][2]),
            ("deep.ipynb", "ACL102", findings(result)[1][2]),
            (
                "deeper.ipynb",
                "ACL000",
                "not a valid notebook: its JSON nests deeper than Python's recursion limit",
            ),
            ("train.py", "ACL101", findings(result)[3][2]),
            ("train.py", "ACL102", findings(result)[4][2]),
        ]


@pytest.mark.parametrize("command", ["check", "fix"])
def test_a_symlink_loop_named_on_the_command_line_is_that_file_s_error(
    tmp_path: Path, command: str
) -> None:
    (tmp_path / ".git").mkdir()  # the gitignore lookup runs inside a repository
    os.symlink("s.py", tmp_path / "s.py")
    (tmp_path / "train.py").write_text(TRAIN)
    result = run(command, "--no-cache", "--output-format", "json", "s.py", "train.py",
                 cwd=tmp_path) if command == "check" else run(
        command, "--no-cache", "s.py", "train.py", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    if command == "check":
        assert codes(result) == [
            ("s.py", "ACL000"), ("train.py", "ACL101"), ("train.py", "ACL102")
        ]  # fmt: skip
        assert "Too many levels of symbolic links" in findings(result)[0][2]
    else:
        assert "pin_memory=True" in result.stdout
        assert "2 findings would remain" in result.stderr  # s.py's ACL000 among them


def _unprivileged() -> tuple[str, ...]:
    """A prefix that runs a command without the power to ignore permissions: as
    root, root without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (the interpreter
    under /root stays readable, by its owner); otherwise nothing."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions cannot be enforced")
    prefix = (setpriv, "--bounding-set", "-dac_override,-dac_read_search")
    probe = subprocess.run([*prefix, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"setpriv cannot drop capabilities here: {probe.stderr!r}")
    return prefix


def test_a_named_file_in_a_directory_without_search_permission(tmp_path: Path) -> None:
    prefix = _unprivileged()
    locked = tmp_path / "locked"
    (locked / "sub").mkdir(parents=True)
    (locked / "sub" / "train.py").write_text(TRAIN)
    (tmp_path / "train.py").write_text(TRAIN)
    locked.chmod(0)
    try:
        result = run(
            "check", "--no-cache", "--output-format", "json", "locked/sub/train.py", "train.py",
            cwd=tmp_path, prefix=prefix,
        )  # fmt: skip
        assert result.returncode == 1, result.stderr[-3000:]
        assert findings(result) == [
            ("locked/sub/train.py", "ACL000", "cannot read file: permission denied"),
            ("train.py", "ACL101", findings(result)[1][2]),
            ("train.py", "ACL102", findings(result)[2][2]),
        ]
        # and from inside a directory that cannot be searched (the configuration lookup)
        result = run(
            "check", "--no-cache", "--output-format", "json", str(tmp_path / "train.py"),
            cwd=locked, prefix=prefix,
        )  # fmt: skip
        assert result.returncode == 1, result.stderr[-3000:]
        assert [c for _, c in codes(result)] == ["ACL101", "ACL102"]
    finally:
        locked.chmod(0o755)
