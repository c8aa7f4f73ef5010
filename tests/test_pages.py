"""Every rule page in rules/ is executed: its examples are the rule's acceptance test."""

from __future__ import annotations

import re

import libcst as cst
import pytest

from accel_lint.rule import FixSafety, Rule
from accel_lint.rules import BY_CODE
from accel_lint.rules import RULES as RULE_TABLE
from tests.support import (
    PAGE_SECTIONS,
    ROOT,
    Block,
    fix,
    lint,
    read_page,
    settings_for,
    strip_markers,
)

RULES = {r.code: r for r in [e.rule for e in RULE_TABLE]}
PAGES = sorted((ROOT / "rules").glob("ACL*.md"))


def _settings(block: Block, select: tuple[str, ...] = ("ALL",), unsafe: bool = False):  # type: ignore[no-untyped-def]
    return settings_for(select, target_torch=block.directives.get("target-torch"), unsafe=unsafe)


def test_every_rule_has_a_page_and_every_page_a_rule() -> None:
    # ACL000 (file could not be parsed) has a page but no rule class
    assert {p.stem for p in PAGES} == {*RULES, "ACL000"}


def test_parse_error_page_is_shown_by_the_cli(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "accel_lint", "rule", "ACL000"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 0
    assert result.stdout.startswith("# ACL000 · parse-error")


@pytest.mark.parametrize("code", sorted(RULES))
def test_page_structure(code: str) -> None:
    rule = RULES[code]
    page = read_page(ROOT / "rules" / f"{code}.md")
    assert page.title == f"# {code} · {rule.name}"
    wanted = list(PAGE_SECTIONS)
    present = [h for h in page.order if any(h in w.split("|") for w in wanted)]
    expected_order = [h for w in wanted for h in w.split("|") if h in page.order]
    assert present == expected_order, f"sections out of order: {page.order}"
    for w in wanted:
        if w == "Not flagged":
            continue
        assert any(h in page.order for h in w.split("|")), f"{code}: missing section {w!r}"
    # the fact table agrees with the rule class
    assert page.facts.get("fix", "").split()[0] == rule.fix_safety.value
    verifier = page.facts.get("verifier", "")
    if rule.equivalence() is None:
        assert verifier.startswith("none")
    else:
        assert verifier.split()[0] == rule.equivalence().value
    assert page.facts.get("default") == ("on" if BY_CODE[code].default_enabled else "off")
    for heading in page.order:
        for block in page.blocks(heading):
            cst.parse_module(strip_markers(block.code)[0])  # every block parses


def _pairs(code: str) -> list[tuple[Block, Block | None]]:
    page = read_page(ROOT / "rules" / f"{code}.md")
    examples = page.blocks("Example")
    instead = page.blocks("Use instead")
    assert examples, f"{code}: no Example block"
    assert len(instead) == len(examples), f"{code}: each Example needs its Use instead block"
    return list(zip(examples, instead))


CASES = [
    (code, i)
    for code in sorted(RULES)
    if (ROOT / "rules" / f"{code}.md").exists()
    for i in range(len(_pairs(code)))
]


@pytest.mark.parametrize(("code", "index"), CASES)
def test_example_is_flagged_exactly(code: str, index: int) -> None:
    example, _ = _pairs(code)[index]
    text, expected = strip_markers(example.code)
    assert any(c == code for _, c in expected), f"{code}: example has no `# {code}` marker"
    assert lint(text, _settings(example)) == expected


@pytest.mark.parametrize(("code", "index"), CASES)
def test_use_instead_is_the_fix(code: str, index: int) -> None:
    rule: type[Rule] = RULES[code]
    example, instead = _pairs(code)[index]
    assert instead is not None
    text, _ = strip_markers(example.code)
    clean, markers = strip_markers(instead.code)
    assert not [m for m in markers if m[1] == code]
    if rule.fix_safety is not FixSafety.NONE:
        fixed = fix(text, _settings(example, (code,), unsafe=True))
        assert fixed == clean
    assert [c for _, c in lint(clean, _settings(instead, (code,)))] == []


@pytest.mark.parametrize("code", sorted(RULES))
def test_not_flagged_blocks(code: str) -> None:
    page = read_page(ROOT / "rules" / f"{code}.md")
    for block in page.blocks("Not flagged"):
        text, markers = strip_markers(block.code)
        assert markers == []
        assert lint(text, _settings(block)) == [], block.code


def test_rules_index_is_current() -> None:
    from accel_lint.cli.catalogue import rules_index

    index = (ROOT / "rules" / "README.md").read_text(encoding="utf-8")
    stale = "rules/README.md is stale: run `python -m accel_lint.cli.catalogue`"
    assert index == rules_index(), stale
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = re.search(r"<!-- rules:start -->\n(.*?)<!-- rules:end -->", readme, re.DOTALL)
    assert table is not None, "README.md lacks the generated rule table"
    assert table.group(1) == rules_index(table_only=True)
