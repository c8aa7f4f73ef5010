"""Per-rule edge cases: tests/cases/ACLnnn*.py with `# ACLnnn` markers, and the
snapshot of the whole file after this rule's fixes (unsafe included) in
tests/cases/ACLnnn*.fixed.py. `pytest --update-snapshots` rewrites snapshots.

Directives in a case file's leading comment lines:
    # target-torch: 1.6
    # option: ACL101.num-workers = 4
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import libcst as cst
import pytest

from accel_lint.rules import RULES as RULE_TABLE
from tests.support import ROOT, fix, lint, settings_for, strip_markers

CASES_DIR = ROOT / "tests" / "cases"
CASES = sorted(p for p in CASES_DIR.glob("ACL*.py") if not p.name.endswith(".fixed.py"))
CODES = {r.code for r in [e.rule for e in RULE_TABLE]}


def _directives(text: str) -> tuple[str | None, dict[str, dict[str, Any]]]:
    target = None
    options: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        m = re.match(r"#\s*target-torch:\s*([\d.]+)", line)
        if m:
            target = m.group(1)
        m = re.match(r"#\s*option:\s*(ACL\d{3})\.([\w-]+)\s*=\s*(.+)$", line)
        if m:
            options.setdefault(m.group(1), {})[m.group(2)] = ast.literal_eval(m.group(3).strip())
    return target, options


def _code(path: Path) -> str:
    return path.name[:6]


def test_case_files_are_named_for_known_codes() -> None:
    for path in CASES_DIR.glob("*.py"):
        assert _code(path) in CODES, f"{path.name}: no rule {_code(path)}"
        if path.name.endswith(".fixed.py"):
            assert path.with_name(path.name[: -len(".fixed.py")] + ".py").exists(), (
                f"orphan {path.name}"
            )


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case_findings(path: Path) -> None:
    text, expected = strip_markers(path.read_text(encoding="utf-8"))
    target, options = _directives(text)
    got = lint(text, settings_for(("ALL",), target_torch=target, options=options))
    assert got == expected


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case_fixes(path: Path, update_snapshots: bool) -> None:
    code = _code(path)
    text, _ = strip_markers(path.read_text(encoding="utf-8"))
    target, options = _directives(text)
    settings = settings_for((code,), target_torch=target, options=options, unsafe=True)
    fixed = fix(text, settings)
    cst.parse_module(fixed)  # the result parses
    assert fix(fixed, settings) == fixed, "fixing twice changed the file again"
    snapshot = path.with_name(path.stem + ".fixed.py")
    if update_snapshots:
        snapshot.write_text(fixed, encoding="utf-8")
    assert snapshot.exists(), (
        f"no snapshot {snapshot.name}: review and run pytest --update-snapshots"
    )
    assert fixed == snapshot.read_text(encoding="utf-8")
