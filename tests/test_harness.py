"""The rule harness: every finding every rule emits on its cases and page examples
agrees with what the rule declares (ruff's idea of checking fix availability):

- a rule that declares no fix never emits one, nor a reason for its absence;
- a rule that fixes gives, for each finding, either a fix or the reason it has none;
- an emitted fix has the rule's declared safety (or, for a rule whose fixes vary,
  safe or unsafe);
- a rule with a fix declares how the verifier judges it, a rule without one does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from accel_lint.diagnostic import Diagnostic
from accel_lint.engine import analyze, diagnostics, rules_for
from accel_lint.rule import FixSafety
from accel_lint.rules import BY_CODE, RULES
from accel_lint.source import Source
from tests.support import ROOT, read_page, settings_for, strip_markers

SOURCES: list[tuple[str, str]] = [
    (p.name, strip_markers(p.read_text(encoding="utf-8"))[0])
    for p in sorted((ROOT / "tests" / "cases").glob("ACL*.py"))
    if not p.name.endswith(".fixed.py")
]
for _page in sorted((ROOT / "rules").glob("ACL*.md")):
    for _i, _block in enumerate(read_page(_page).blocks("Example")):
        SOURCES.append((f"{_page.stem}-example-{_i}", strip_markers(_block.code)[0]))


def _findings(text: str) -> list[Diagnostic]:
    settings = settings_for(("ALL",), unsafe=True)
    analysis = analyze(
        "case.py", Source(text, "utf-8"), settings, rules_for(settings.enabled, text.encode())
    )
    return diagnostics(analysis)


@pytest.mark.parametrize(("name", "text"), SOURCES, ids=[n for n, _ in SOURCES])
def test_findings_agree_with_their_rule(name: str, text: str) -> None:
    for found in _findings(text):
        if found.code == "ACL000":
            continue
        declared = BY_CODE[found.code].rule.fix_safety
        where = f"{name}:{found.row} {found.code}"
        if declared is FixSafety.NONE:
            assert not found.has_fix, f"{where}: a fix from a rule that declares none"
            assert found.no_fix_reason is None, f"{where}: a reason from a rule without fixes"
            continue
        assert found.has_fix or found.no_fix_reason, f"{where}: neither a fix nor why not"
        if found.has_fix:
            expected = {"safe", "unsafe"} if declared is FixSafety.VARIES else {declared.value}
            assert found.fix_safety in expected, f"{where}: {found.fix_safety} fix"


@pytest.mark.parametrize("entry", RULES, ids=[e.code for e in RULES])
def test_declarations_are_complete(entry: object) -> None:
    from accel_lint.rules import RuleEntry

    assert isinstance(entry, RuleEntry)
    rule = entry.rule
    assert rule.code == entry.code
    assert entry.triggers, f"{entry.code}: no trigger words: every file would be parsed for it"
    assert (rule.fix_safety is FixSafety.NONE) == (rule.verification is None)
    assert Path(ROOT / "rules" / f"{rule.code}.md").exists()


def test_the_table_is_sorted_by_code() -> None:
    codes = [e.code for e in RULES]
    assert codes == sorted(codes)
    assert len(set(codes)) == len(codes)
