"""Per-rule settings and `target-torch` are validated like every other key, through the
command line: type and range, the expected type named in the error, exit 2, and a
configured value the rule accepts reaches its fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from accel_lint.rules import RULES

TRAIN = """\
from torch.utils.data import DataLoader
from torchvision import datasets


def main():
    loader = DataLoader(datasets.ImageFolder("data"), batch_size=8)
    return loader


if __name__ == "__main__":
    main()
"""


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "accel_lint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
    )


def test_every_option_of_every_rule_declares_its_type_and_accepts_its_default() -> None:
    for entry in RULES:
        for key, option in entry.rule.options.items():
            assert option.expected, f"{entry.code} `{key}` names no expected type"
            assert option.accepts(option.default), f"{entry.code} `{key}` refuses its default"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("0", "got 0"),
        ("-3", "got -3"),
        ("true", "got true"),
        ("2.0", "got 2.0 (a float)"),
        ('"four"', 'got "four"'),
        ("[4]", "got a list"),
    ],
)
def test_num_workers_must_be_a_positive_integer_or_auto(
    tmp_path: Path, value: str, shown: str
) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "accel-lint.toml").write_text(f"[rules.ACL101]\nnum-workers = {value}\n")
    for command in (("check",), ("fix", "--unsafe-fixes"), ("fix", "--apply", "--unsafe-fixes")):
        result = run(*command, "train.py", cwd=tmp_path)
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stdout == ""
        assert '`num-workers` must be a positive integer or "auto"' in result.stderr
        assert shown in result.stderr
        assert "Traceback" not in result.stderr and "bug in accel-lint" not in result.stderr
    assert (tmp_path / "train.py").read_text() == TRAIN


@pytest.mark.parametrize("value", ["0", "-1", "false", '"8"'])
def test_max_workers_must_be_a_positive_integer(tmp_path: Path, value: str) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "accel-lint.toml").write_text(f"[rules.ACL101]\nmax-workers = {value}\n")
    result = run("check", "train.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "`max-workers` must be a positive integer" in result.stderr


@pytest.mark.parametrize(("value", "workers"), [("3", "3"), ('"auto"', "min(2, os.cpu_count()")])
def test_accepted_values_reach_the_fix(tmp_path: Path, value: str, workers: str) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "accel-lint.toml").write_text(
        f"[rules.ACL101]\nnum-workers = {value}\nmax-workers = 2\n"
    )
    result = run("fix", "--unsafe-fixes", "--select", "ACL101", "train.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert f"num_workers={workers}" in result.stdout


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("1.10", "got the TOML float 1.1: quote the version"),
        ("2", "got 2"),
        ('"latest"', 'got "latest"'),
        ("true", "got true"),
    ],
)
def test_target_torch_must_be_a_version_string(tmp_path: Path, value: str, shown: str) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "pyproject.toml").write_text(f"[tool.accel-lint]\ntarget-torch = {value}\n")
    result = run("check", "train.py", cwd=tmp_path)
    assert result.returncode == 2
    assert '`target-torch` must be a string such as "2.1"' in result.stderr
    assert shown in result.stderr


def test_target_torch_as_a_string_is_read(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "import torch\nopt = torch.optim.SGD([], lr=0.1)\nopt.zero_grad()\n"
    )
    (tmp_path / "pyproject.toml").write_text('[tool.accel-lint]\ntarget-torch = "1.10"\n')
    result = run(
        "check", "train.py", "--select", "ACL302", "--output-format", "concise", cwd=tmp_path
    )
    assert result.returncode == 1
    assert "ACL302" in result.stdout
