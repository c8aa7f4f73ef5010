"""The fix checker (`accel_lint.fixcheck`): a fix never breaks what it does not see.

Rules that are wrong on purpose, and exist only here, make the fixes the checker
must drop: an import removed while the script still calls it, a name used that
nothing defines, a read turned to another definition, a deleted line whose value
is read later. Each is dropped, the file keeps the other rules' fixes, and the
finding says why, on every path that applies fixes: `fix` (plain files and
notebooks), the JSON output's edits and the language server's code actions.
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import libcst as cst
import pytest

from accel_lint import engine, fixcheck, fixer, server
from accel_lint.edits import code_for
from accel_lint.engine import analyze, diagnostics
from accel_lint.fixer import fix_source
from accel_lint.lint import fix_bytes
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.rules import RULES
from accel_lint.source import Source
from tests.support import settings_for

SCRIPT = """\
import os

import torch
from torch.utils.data import DataLoader, TensorDataset

checkpoint = None
lr = 0.1


def train(data):
    loader = DataLoader(data, batch_size=8)
    model = torch.nn.Linear(4, 1).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for (x,) in loader:
        loss = model(x.cuda()).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(loss.item())
    return model


checkpoint = os.path.join("runs", "last.pt")
model = train(TensorDataset(torch.randn(32, 4)))
torch.save(model.state_dict(), checkpoint)
"""

# the one legitimate fix of the file (ACL102), kept whatever the wrong rules do
PINNED = SCRIPT.replace(
    "loader = DataLoader(data, batch_size=8)",
    "loader = DataLoader(data, batch_size=8, pin_memory=True)",
)


class _Wrong(Rule):
    """Replaces the statement line spelled `target` by `replacement` (None: deletes it)."""

    code = "ACL999"
    name = "wrong-on-purpose"
    summary = "a rule whose fix breaks the script, for the checker's tests"
    fix_safety = FixSafety.SAFE
    verification = Verification(Equivalence.EXACT)
    target = ""
    replacement: str | None = None

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if code_for(node).strip() != self.target:
            return
        new: cst.CSTNode | cst.RemovalSentinel = cst.RemovalSentinel.REMOVE
        if self.replacement is not None:
            new = node.with_changes(body=cst.parse_statement(self.replacement).body)
        self.report(node, "a finding of the wrong rule", Fix("Break it", {node: new}))


class RemovesUsedImport(_Wrong):
    target = "import os"


class UsesUndefinedName(_Wrong):
    target = "print(loss.item())"
    replacement = "log_info(loss.item())"


class ShadowsGlobal(_Wrong):
    target = "model = torch.nn.Linear(4, 1).cuda()"
    replacement = "model = torch.nn.Linear(4, 1).cuda(); lr = 0.5"


class DeletesLineReadLater(_Wrong):
    target = 'checkpoint = os.path.join("runs", "last.pt")'


WRONG: list[tuple[type[_Wrong], int, str]] = [
    (
        RemovesUsedImport,
        1,
        "the fix would remove the definition of `os`, which the code still uses",
    ),
    (UsesUndefinedName, 19, "the fix would use `log_info`, which is not defined here"),
    (
        ShadowsGlobal,
        12,
        "after the fix, `lr` would refer to another definition where the code uses it",
    ),
    (
        DeletesLineReadLater,
        23,
        "the fix would delete the line that sets `checkpoint`, which the code reads later",
    ),
]


@pytest.fixture
def with_rule(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[type[Rule]]]:
    """The fixer, the engine and the server run the listed test rules besides the
    selected ones."""
    extra: list[type[Rule]] = []
    real = engine.rules_for

    def rules_for(codes: frozenset[str], data: bytes, path: str = "") -> list[type[Rule]]:
        return [*real(codes, data, path), *extra]

    for module in (fixer, engine, server):
        monkeypatch.setattr(module, "rules_for", rules_for)
    entry = next(e for e in RULES if e.code == "ACL102")
    monkeypatch.setitem(engine.BY_CODE, "ACL999", entry)  # may_call: any file that moves
    yield extra


def _fixed(text: str, path: str = "train.py") -> tuple[str, list[tuple[int, str, str | None]]]:
    settings = settings_for(("ACL102",))
    outcome = fix_source(path, Source(text, "utf-8"), settings, settings.enabled, unsafe=False)
    assert outcome.error is None, outcome.error
    assert outcome.remaining is not None
    remaining = [(d.row, d.code, d.no_fix_reason) for d in diagnostics(outcome.remaining)]
    return outcome.fixed_text, remaining


@pytest.mark.parametrize(("rule", "row", "reason"), WRONG, ids=[w[0].__name__ for w in WRONG])
def test_a_fix_that_breaks_a_name_is_dropped_and_the_others_kept(
    with_rule: list[type[Rule]], rule: type[_Wrong], row: int, reason: str
) -> None:
    with_rule.append(rule)
    fixed, remaining = _fixed(SCRIPT)
    assert fixed == PINNED
    assert remaining == [(row, "ACL999", reason)]


def test_the_wrong_rules_do_break_the_script_without_the_checker(
    with_rule: list[type[Rule]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test rules are wrong: with the checker out of the way their fixes apply."""
    monkeypatch.setattr(fixer, "broken_by", lambda *args: None)
    with_rule.extend(rule for rule, _, _ in WRONG)
    fixed, remaining = _fixed(SCRIPT)
    assert "import os" not in fixed and "log_info(loss.item())" in fixed
    assert "lr = 0.5" in fixed and 'checkpoint = os.path.join("runs", "last.pt")' not in fixed
    assert remaining == []


def test_all_wrong_rules_at_once_each_dropped_with_its_reason(
    with_rule: list[type[Rule]],
) -> None:
    with_rule.extend(rule for rule, _, _ in WRONG)
    fixed, remaining = _fixed(SCRIPT)
    assert fixed == PINNED
    assert remaining == sorted((row, "ACL999", reason) for _, row, reason in WRONG)


def test_a_fix_that_breaks_nothing_is_applied(with_rule: list[type[Rule]]) -> None:
    class RemovesUnusedImport(_Wrong):
        target = "import os"

    text = SCRIPT.replace('os.path.join("runs", "last.pt")', '"runs/last.pt"')
    with_rule.append(RemovesUnusedImport)
    fixed, remaining = _fixed(text)
    assert fixed == PINNED.replace('os.path.join("runs", "last.pt")', '"runs/last.pt"').replace(
        "import os\n", ""
    )
    assert remaining == []


def test_deleting_a_line_whose_name_is_set_again_before_any_read_is_applied(
    with_rule: list[type[Rule]],
) -> None:
    """`checkpoint = None` is set again (line 23) before anything reads it."""

    class DeletesDeadLine(_Wrong):
        target = "checkpoint = None"

    with_rule.append(DeletesDeadLine)
    fixed, remaining = _fixed(SCRIPT)
    assert fixed == PINNED.replace("\ncheckpoint = None\n", "")
    assert remaining == []


def test_the_language_server_offers_no_action_for_a_dropped_fix(
    with_rule: list[type[Rule]], tmp_path: Path
) -> None:
    with_rule.append(RemovesUsedImport)
    settings = settings_for(("ACL102",))
    path = tmp_path / "train.py"
    rules = server.rules_for(settings.enabled, SCRIPT.encode())
    wanted = diagnostics(analyze(str(path), Source(SCRIPT, "utf-8"), settings, rules))
    assert [(d.code, d.has_fix) for d in wanted] == [("ACL999", True), ("ACL102", True)]
    got = server.fixes_for(path, SCRIPT, settings, wanted)
    by_code = {d.code: d for d in got}
    assert by_code["ACL999"].fix is None and not by_code["ACL999"].has_fix
    assert by_code["ACL999"].no_fix_reason == WRONG[0][2]
    assert by_code["ACL102"].fix is not None
    assert [e.content for e in by_code["ACL102"].fix.edits] == [", pin_memory=True"]


def test_json_edits_leave_out_a_dropped_fix(with_rule: list[type[Rule]]) -> None:
    with_rule.append(RemovesUsedImport)
    settings = settings_for(("ACL102",))
    analysis = analyze(
        "train.py",
        Source(SCRIPT, "utf-8"),
        settings,
        engine.rules_for(settings.enabled, SCRIPT.encode()),
    )
    got = {d.code: d for d in diagnostics(analysis, with_edits=True)}
    assert got["ACL999"].fix is None and not got["ACL999"].has_fix
    assert got["ACL999"].full_message == (
        "a finding of the wrong rule (no fix: the fix would remove the definition of `os`, "
        "which the code still uses)"
    )
    assert got["ACL102"].fix is not None


def _notebook(cells: Sequence[str]) -> bytes:
    doc = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": cell.splitlines(keepends=True),
            }
            for cell in cells
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return (json.dumps(doc, indent=1) + "\n").encode()


def test_a_notebook_keeps_the_good_fix_and_drops_the_bad_one(
    with_rule: list[type[Rule]],
) -> None:
    with_rule.append(RemovesUsedImport)
    head, _, tail = SCRIPT.partition("def train(data):\n")
    data = _notebook([head, "%matplotlib inline\n", "def train(data):\n" + tail])
    report = fix_bytes("train.ipynb", data, settings_for(("ACL102",)))
    assert report.fixed is not None and report.applied == 1
    cells = [c["source"] for c in json.loads(report.fixed)["cells"]]
    assert "".join(cells[0]).startswith("import os\n")
    assert "pin_memory=True" in "".join(cells[2])
    assert [(d.code, d.cell, d.no_fix_reason) for d in report.remaining] == [
        ("ACL999", 1, WRONG[0][2])
    ]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="needs syntax newer than this Python")
def test_a_file_this_python_cannot_compile_gets_no_fix() -> None:
    """libcst reads a `type` statement that CPython 3.11 cannot compile: the checker
    cannot see the file's scopes, so nothing is fixed, and the finding says why."""
    settings = settings_for(("ACL102",))
    text = SCRIPT + "type Batch = list[int]\n"
    outcome = fix_source("t.py", Source(text, "utf-8"), settings, settings.enabled, unsafe=False)
    assert outcome.remaining is not None and not outcome.changed
    assert [(d.code, d.no_fix_reason) for d in diagnostics(outcome.remaining)] == [
        (
            "ACL102",
            "this Python cannot compile the file, so the fix could not be checked "
            "for names it would leave undefined",
        )
    ]


EPOCHS = """\
def train(optimizer, batches, update):
    for epoch in range(3):
        for group in optimizer.param_groups:
            group["lr"] = 0.1 / (epoch + 1)
        for batch in batches:
            if update:
                for group in optimizer.param_groups:
                    for p in group["params"]:
                        p.grad = None
    print(group)
"""


def test_a_read_in_the_loop_around_a_deletion_that_its_own_loop_binds_first() -> None:
    """Deleting the inner zeroing loop (lines 7-9, ACL301's fix) leaves line 4's
    `group` read after line 3 binds it in every iteration; line 10's read after the
    epoch loop still depends on the deleted binding when the first loop is empty."""
    inside = fixcheck.Deletion("group", (7, 9))
    assert fixcheck.read_later(ast.parse(EPOCHS), inside, [])
    without_print = ast.parse(EPOCHS.replace("    print(group)\n", ""))
    assert not fixcheck.read_later(without_print, inside, [])
    # a read before the deletion in the loop, not preceded by its own binding
    unbound = ast.parse(
        EPOCHS.replace(
            "        for group in optimizer.param_groups:\n"
            '            group["lr"] = 0.1 / (epoch + 1)\n',
            "        print(group)\n",
        )
    )
    assert fixcheck.read_later(unbound, fixcheck.Deletion("group", (6, 8)), [])
