"""Realistic training scripts in fixtures/<scenario>/: exact findings, exact fixed
output (safe only, and with --unsafe-fixes), idempotence, and the fixed scripts
still run on CPU.

Layout of a scenario:
    fixtures/<scenario>/train.py            the script (runs on CPU in seconds)
    fixtures/<scenario>/expected/findings.txt  `accel-lint check --output-format concise -q`
    fixtures/<scenario>/expected/fixed_safe.py   after `fix --apply`
    fixtures/<scenario>/expected/fixed_unsafe.py after `fix --apply --unsafe-fixes`
    fixtures/<scenario>/run.json (optional)  {"args": [...], "torchrun": false, "timeout": 120}
        ("original_raises": "ValueError" when the script as written must fail so, and
        so the fixed variant too where the fixes leave it as written)
fixtures/negatives/*.py must produce no finding at all.
`pytest --update-snapshots` rewrites the expected files (review the diff).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from accel_lint.cli import main as cli_main  # noqa: F401  (the CLI must import)
from tests.support import ROOT, Ran, cli

FIXTURES = ROOT / "fixtures"
SCENARIOS = sorted(p.parent for p in FIXTURES.glob("*/train.py"))
NEGATIVES = sorted((FIXTURES / "negatives").glob("*.py"))


def _cli(*args: str, cwd: Path) -> Ran:
    """`accel-lint ARGS` in this process: the snapshots test what the command does, and
    a fresh interpreter per run (5 per scenario) cost most of these tests' time."""
    return cli(*args, cwd=cwd)


def _snapshot(path: Path, text: str, update: bool) -> None:
    if update:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), (
        f"missing {path.relative_to(ROOT)}: review and run pytest --update-snapshots"
    )
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_fixture_findings(scenario: Path, update_snapshots: bool) -> None:
    result = _cli(
        "check", "train.py", "--output-format", "concise", "-q", "--no-cache", cwd=scenario
    )
    assert result.returncode in (0, 1), result.stderr
    _snapshot(scenario / "expected" / "findings.txt", result.stdout, update_snapshots)


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_fixture_fixed_output(
    scenario: Path, unsafe: bool, tmp_path: Path, update_snapshots: bool
) -> None:
    work = tmp_path / scenario.name
    shutil.copytree(scenario, work, ignore=shutil.ignore_patterns("expected", "__pycache__"))
    flags = ["--unsafe-fixes"] if unsafe else []
    first = _cli("fix", "--apply", *flags, "train.py", cwd=work)
    assert first.returncode in (0, 1), first.stderr
    fixed = (work / "train.py").read_text(encoding="utf-8")
    cst.parse_module(fixed)
    name = "fixed_unsafe.py" if unsafe else "fixed_safe.py"
    _snapshot(scenario / "expected" / name, fixed, update_snapshots)
    before = (work / "train.py").stat().st_mtime_ns
    second = _cli("fix", "--apply", *flags, "train.py", cwd=work)
    assert second.returncode in (0, 1), second.stderr
    assert (work / "train.py").read_text(encoding="utf-8") == fixed, "a second fix changed the file"
    assert (work / "train.py").stat().st_mtime_ns == before, "an unchanged file was rewritten"


def _run_config(scenario: Path) -> dict[str, object]:
    path = scenario / "run.json"
    return json.loads(path.read_text()) if path.exists() else {}


@pytest.mark.slow
@pytest.mark.parametrize(
    "variant", ["train.py", "expected/fixed_safe.py", "expected/fixed_unsafe.py"]
)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_fixture_runs_on_cpu(scenario: Path, variant: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    config = _run_config(scenario)
    work = tmp_path / "run"
    shutil.copytree(scenario, work, ignore=shutil.ignore_patterns("expected", "__pycache__"))
    shutil.copy(scenario / variant, work / "train.py")
    args = [str(a) for a in config.get("args", [])]  # type: ignore[union-attr]
    needs_torchrun = bool(config.get("torchrun")) or (
        variant.endswith("fixed_unsafe.py") and bool(config.get("torchrun_after_unsafe_fix"))
    )
    if needs_torchrun:
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            "train.py",
            *args,
        ]
    else:
        cmd = [sys.executable, "train.py", *args]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    result = subprocess.run(
        cmd,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=int(config.get("timeout", 180)),
        env=env,  # type: ignore[call-overload]
    )
    raises = config.get("original_raises")
    # a script the fix repairs (ACL105, ACL319): the original, and a variant that the
    # safe fixes leave as it was when the repair is unsafe
    as_written = (scenario / variant).read_bytes() == (scenario / "train.py").read_bytes()
    if raises and as_written:
        assert result.returncode != 0 and f"{raises}:" in result.stderr, result.stderr[-4000:]
        return
    assert result.returncode == 0, (
        f"{variant} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    )


@pytest.mark.parametrize("path", NEGATIVES, ids=[p.stem for p in NEGATIVES])
def test_negatives_produce_nothing(path: Path) -> None:
    result = _cli(
        "check",
        str(path),
        "--select",
        "ALL",
        "--no-cache",
        "--output-format",
        "concise",
        "-q",
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""
