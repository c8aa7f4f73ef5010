"""ACL101's equivalence class per finding: exact unless `__getitem__` draws global random
numbers. A draw that passes `generator=` a generator made for the item is not global;
one kept on the dataset is shared state each worker copies (statistical)."""

from __future__ import annotations

from accel_lint.engine import analyze, rules_for
from accel_lint.rule import Equivalence
from accel_lint.source import Source
from tests.support import ROOT, settings_for, strip_markers


def _equivalences(path: str) -> dict[int, Equivalence | None]:
    text, _ = strip_markers((ROOT / path).read_text(encoding="utf-8"))
    settings = settings_for(("ACL101",))
    rules = rules_for(settings.enabled, text.encode())
    analysis = analyze("train.py", Source(text, "utf-8"), settings, rules)
    return {analysis.range_of(f.node).start.line: f.equivalence for f in analysis.findings}


def test_generator_made_per_item_is_exact_and_shared_or_global_draws_are_statistical() -> None:
    assert _equivalences("tests/cases/ACL101_generator.py") == {
        57: Equivalence.EXACT,
        58: Equivalence.STATISTICAL,
        59: Equivalence.STATISTICAL,
    }
