"""The details a ruff user notices in the first hour: a closed pipe, `--isolated`,
ACL000 in a selection, `fix --diff`, "did you mean", where the target torch came from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT, cli

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


PYPROJECT_WITH_TORCH = """\
[project]
name = "trainer"
version = "0"
dependencies = ["torch>=2.1"]
"""


def test_isolated_reads_not_even_the_projects_torch_requirement(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT_WITH_TORCH)
    (tmp_path / "train.py").write_text(TRAIN)
    plain = cli("check", "--show-settings", ".", cwd=tmp_path)
    assert f"Target torch: 2.1 (from the torch requirement in {tmp_path / 'pyproject.toml'})" in (
        plain.stdout
    )
    isolated = cli("check", "--isolated", "--show-settings", ".", cwd=tmp_path)
    assert "Configuration file: (none: defaults)" in isolated.stdout
    assert "Target torch: latest (from default: the latest torch)" in isolated.stdout


def test_show_settings_names_the_key_that_set_the_target_torch(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        PYPROJECT_WITH_TORCH + '\n[tool.accel-lint]\ntarget-torch = "1.13"\n'
    )
    (tmp_path / "train.py").write_text(TRAIN)
    ran = cli("check", "--show-settings", ".", cwd=tmp_path)
    assert f"Target torch: 1.13 (from `target-torch` in {tmp_path / 'pyproject.toml'})" in (
        ran.stdout
    )


def test_acl000_can_be_selected_and_ignored_but_stays_reported(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def f(:\n")
    (tmp_path / "train.py").write_text(TRAIN)
    selected = cli("check", "--select", "ACL000", "--output-format", "concise", ".", cwd=tmp_path)
    assert selected.returncode == 1, selected.stderr
    assert [line.split()[1] for line in selected.stdout.splitlines() if ": ACL" in line] == [
        "ACL000"
    ]
    ignored = cli("check", "--ignore", "ACL000", "--output-format", "concise", ".", cwd=tmp_path)
    assert ignored.returncode == 1, ignored.stderr
    assert "broken.py:1:7: ACL000" in ignored.stdout
    assert "ACL000 (parse-error) cannot be turned off" in ignored.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.accel-lint]\nextend-select = ["ACL000"]\n')
    configured = cli("check", "--output-format", "concise", ".", cwd=tmp_path)
    assert configured.returncode == 1, configured.stderr
    assert "unknown rule code" not in configured.stderr


def test_fix_diff_is_the_default_diff(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    plain = cli("fix", "--no-cache", "train.py", cwd=tmp_path)
    diff = cli("fix", "--diff", "--no-cache", "train.py", cwd=tmp_path)
    assert plain.returncode == diff.returncode == 1
    assert diff.stdout == plain.stdout and diff.stdout.startswith("--- a/train.py")
    assert (tmp_path / "train.py").read_text() == TRAIN
    both = cli("fix", "--diff", "--apply", "train.py", cwd=tmp_path)
    assert both.returncode == 2
    assert "cannot be combined with --apply" in both.stderr


def test_a_mistyped_command_gets_did_you_mean(tmp_path: Path) -> None:
    ran = cli("chek", ".", cwd=tmp_path)
    assert ran.returncode == 2
    assert "No such command 'chek'. Did you mean 'check'?" in ran.stderr
    far = cli("xyzzy", cwd=tmp_path)
    assert far.returncode == 2
    assert "No such command 'xyzzy'." in far.stderr and "Did you mean" not in far.stderr


def test_the_output_format_environment_variable_is_documented_and_works(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    ran = cli(
        "check", "--no-cache", "train.py", cwd=tmp_path, env={"ACCEL_LINT_OUTPUT_FORMAT": "json"}
    )
    assert ran.stdout.lstrip().startswith("[")
    assert "ACCEL_LINT_OUTPUT_FORMAT" in (ROOT / "README.md").read_text()
