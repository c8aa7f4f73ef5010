"""A file's tree is freed by reference counting once its diagnostics are made.

`lint` analyses a file with the cyclic collector off (`parse.analysis_conditions`)
and then releases the analysis (`engine.Analysis.release`): the facts' scopes and
bindings, the analyses they share and the rules refer to one another, and any such
cycle that still held the tree would leave every node to the collector, whose next
collection would visit them all (an analysis of the DataParallel fixture left
about 20,000 objects, nodes for the most part, in cycles)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import libcst as cst
import pytest

from accel_lint.config import Selection, load_settings
from accel_lint.lint import lint_bytes
from tests.support import ROOT

FIXTURES = sorted(p.parent.name for p in (ROOT / "fixtures").glob("*/train.py"))


@pytest.fixture
def collector_saving_garbage() -> Iterator[None]:
    """The collector off, and what it finds kept in `gc.garbage` for inspection."""
    enabled, flags = gc.isenabled(), gc.get_debug()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()
        if enabled:
            gc.enable()


@pytest.mark.parametrize("fixture", FIXTURES)
@pytest.mark.usefixtures("collector_saving_garbage")
def test_no_node_is_left_to_the_cyclic_collector(fixture: str) -> None:
    path = ROOT / "fixtures" / fixture / "train.py"
    settings = load_settings(isolated=True, cli=Selection(select=("ALL",)))
    report = lint_bytes(str(path), Path(path).read_bytes(), settings, with_edits=True)
    assert report.internal_error is None
    assert report.diagnostics  # every fixture has findings: the rules ran
    gc.collect()
    left = [type(o).__name__ for o in gc.garbage if isinstance(o, cst.CSTNode)]
    assert left == []
