"""A baseline for adopting accel-lint in a large codebase: `check --write-baseline`
records today's findings; `check --baseline FILE` or `baseline = "FILE"` reports
only new ones, in every output format, in the pre-commit hooks' commands and in the
language server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import cli

TRAIN = """\
import torch
from torch.utils.data import DataLoader

data = torch.load("records.pt")
loader = DataLoader(data, batch_size=8)
if __name__ == "__main__":
    for (x,) in loader:
        x = x.cuda()
"""
# an unrelated edit above (moves every line), and one new finding below
EDITED = (
    '"""Now with a docstring."""\n\n' + TRAIN + "eval_loader = DataLoader(data, batch_size=8)\n"
)
CONCISE = ("--no-cache", "--output-format", "concise")


def _findings(stdout: str) -> list[str]:
    return [line.split(" ", 2)[0] + " " + line.split(" ", 2)[1] for line in stdout.splitlines()
            if ": ACL" in line]  # fmt: skip


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(TRAIN)
    before = cli("check", *CONCISE, "train.py", cwd=tmp_path)
    assert _findings(before.stdout) == ["train.py:5:10: ACL101", "train.py:5:10: ACL102"]
    ran = cli("check", "--no-cache", "--write-baseline", "baseline.json", "train.py", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "Recorded 2 findings in baseline.json" in ran.stderr and ran.stdout == ""
    data = json.loads((tmp_path / "baseline.json").read_text())
    assert data["findings"][0] == {
        "code": "ACL101",
        "path": "train.py",
        "source": "loader = DataLoader(data, batch_size=8)",
        "count": 1,
    }
    (tmp_path / "train.py").write_text(EDITED)
    return tmp_path


def test_only_new_findings_are_reported_after_an_unrelated_edit(recorded: Path) -> None:
    ran = cli("check", *CONCISE, "--baseline", "baseline.json", "train.py", cwd=recorded)
    assert ran.returncode == 1
    assert _findings(ran.stdout) == ["train.py:11:15: ACL101", "train.py:11:15: ACL102"]
    assert "2 findings hidden by the baseline baseline.json" in ran.stderr
    unchanged = (recorded / "train.py").read_text().replace("eval_loader = DataLoader(", "#(")
    (recorded / "train.py").write_text(unchanged)
    clean = cli("check", *CONCISE, "--baseline", "baseline.json", "train.py", cwd=recorded)
    assert clean.returncode == 0 and _findings(clean.stdout) == []


@pytest.mark.parametrize(
    ("fmt", "count"),
    [
        ("json", lambda out: len(json.loads(out))),
        ("sarif", lambda out: len(json.loads(out)["runs"][0]["results"])),
        ("github", lambda out: out.count("::warning ")),
        ("junit", lambda out: out.count("<failure ")),
        ("json-lines", lambda out: len(out.splitlines())),
    ],
)
def test_every_output_format_shows_only_the_new_finding(
    recorded: Path, fmt: str, count: object
) -> None:
    ran = cli("check", "--no-cache", "--output-format", fmt, "--baseline", "baseline.json",
              "train.py", cwd=recorded)  # fmt: skip
    assert ran.returncode == 1, ran.stderr
    assert count(ran.stdout) == 2  # type: ignore[operator]
    stats = cli("check", "--no-cache", "--statistics", "--baseline", "baseline.json",
                "train.py", cwd=recorded)  # fmt: skip
    assert [line.split()[:2] for line in stats.stdout.splitlines()[:2]] == [
        ["1", "ACL101"],
        ["1", "ACL102"],
    ]


def test_the_configured_baseline_serves_check_and_the_hooks_commands(recorded: Path) -> None:
    (recorded / "pyproject.toml").write_text(
        '[tool.accel-lint]\nselect = ["ACL101"]\nbaseline = "baseline.json"\n'
    )
    # what the pre-commit hooks run on the staged file
    hook = cli("check", "--force-exclude", "--no-cache", "--output-format", "concise",
               "train.py", cwd=recorded)  # fmt: skip
    assert hook.returncode == 1 and _findings(hook.stdout) == ["train.py:11:15: ACL101"]
    fixed = cli("fix", "--apply", "--force-exclude", "--no-cache", "train.py", cwd=recorded)
    assert fixed.returncode == 1  # ACL101's fix is unsafe: the new finding remains
    assert "train.py:11:15: ACL101" in fixed.stderr and "train.py:7:10" not in fixed.stderr
    assert "1 finding hidden by the baseline" in fixed.stderr
    (recorded / "pyproject.toml").write_text('[tool.accel-lint]\nbaseline = "missing.json"\n')
    missing = cli("check", "--no-cache", "train.py", cwd=recorded)
    assert missing.returncode == 2 and "cannot read the baseline" in missing.stderr


def test_a_file_that_is_not_a_baseline_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "other.json").write_text('{"results": []}')
    ran = cli("check", "--no-cache", "--baseline", "other.json", "train.py", cwd=tmp_path)
    assert ran.returncode == 2 and "not an accel-lint baseline" in ran.stderr


def test_the_language_server_honours_the_configured_baseline(recorded: Path) -> None:
    pytest.importorskip("pytest_lsp")
    from tests.test_server import opened, run, session

    (recorded / "pyproject.toml").write_text('[tool.accel-lint]\nbaseline = "baseline.json"\n')
    path = recorded / "train.py"

    async def scenario() -> None:
        async with session(recorded) as client:
            found = await opened(client, path, EDITED)
            assert sorted((str(d.code), d.range.start.line) for d in found) == [
                ("ACL101", 10),
                ("ACL102", 10),
            ]

    run(scenario)
