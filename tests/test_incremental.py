"""The language server's incremental parse: the spliced tree is the tree libcst
gives for the whole text, and diagnostics with positions carried over from the
last version are the diagnostics of a fresh lint."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import libcst as cst
import pytest

from accel_lint.config import load_settings
from accel_lint.incremental import Reparser, _spans_from_tree, _spans_of
from accel_lint.lint import lint_bytes
from tests.support import ROOT

# the training scripts of the repository's fixtures and a sample of the rule cases
# (never public code)
SCRIPTS = [
    *sorted((ROOT / "fixtures").glob("*/train.py")),
    *sorted((ROOT / "tests" / "cases").glob("ACL*.py"))[::16],
]
# what typing inserts: statements, comments at every indentation, blank and
# whitespace-only lines, the start of a bracket or string that a later edit closes
INSERTS = [
    "    x = 1\n",
    "# a comment\n",
    "\n",
    "def helper():\n    return 2\n",
    "    # indented\n",
    "@decorator\n",
    "class Config:\n    pass\n",
    "  \n",
    "if ready:\n    go()\nelse:\n    wait()\n",
    "    \n",
    "\t\n",
]


def _edited(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    i = rng.randrange(len(lines))
    kind = rng.random()
    if kind < 0.3:
        lines[i] = lines[i].replace("1", "2", 1).replace("a", "b", 1)
    elif kind < 0.55:
        lines.insert(i, rng.choice(INSERTS))
    elif kind < 0.7:
        del lines[i]
    elif kind < 0.85:
        lines[i] = "    " + lines[i]
    else:
        lines[i] = lines[i].lstrip()
    return "".join(lines)


def _whole(text: str) -> cst.Module | None:
    """libcst's tree of what the server would parse (CPython and libcst accept it)."""
    try:
        compile(text, "train.py", "exec")
        return cst.parse_module(text)
    except (SyntaxError, ValueError, cst.ParserSyntaxError):
        return None


def test_spliced_trees_are_the_trees_of_a_whole_parse() -> None:
    rng = random.Random(20261123)
    compared = spliced = 0
    for script in SCRIPTS:
        text = script.read_text(encoding="utf-8")
        reparser = Reparser()
        reparser.parse_module(text)
        for _ in range(6):
            edited = _edited(text, rng)
            whole = _whole(edited)
            if whole is None:
                continue
            module = reparser.parse_module(edited)
            spliced += reparser.fresh(module) is not None
            assert module.deep_equals(whole), script.name
            assert module.code == edited
            compared += 1
            text = edited
    # most edits leave the first and some later statements alone: they are spliced
    assert compared > 100
    assert spliced > compared // 3


TRAIN = """\
import torch
from torch import nn
from torch.utils.data import DataLoader


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)

    def forward(self, x):
        return self.conv(x).mean()


def train(dataset):
    model = Net().cuda()
    loader = DataLoader(dataset, batch_size=32)
    for x in loader:
        x = x.cuda()
        model(x).backward()


def evaluate(dataset):
    loader = DataLoader(dataset, batch_size=64)
    return [x.cuda() for x in loader]
"""


def test_an_edit_inside_a_function_reparses_that_function_only() -> None:
    reparser = Reparser()
    before = reparser.parse_module(TRAIN)
    module = reparser.parse_module(TRAIN.replace("batch_size=32", "batch_size=16"))
    fresh = reparser.fresh(module)
    assert fresh is not None and [type(s).__name__ for s in fresh] == ["FunctionDef"]
    assert isinstance(fresh[0], cst.FunctionDef) and fresh[0].name.value == "train"
    # everything else is the old tree's own nodes
    kept = [s for s in module.body if s not in fresh]
    assert all(any(s is old for old in before.body) for s in kept)
    assert len(kept) == len(module.body) - 1


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("import torch\n", "import torch  # the first statement\n"),
        ("import torch\n", "# a header comment, the module's\n\nimport torch\n"),
    ],
)
def test_an_edit_at_the_first_statement_reparses_from_the_first_line(old: str, new: str) -> None:
    """libcst gives the lines above the first statement to the module's header: the
    region starts at the file's first line, as a whole parse does."""
    reparser = Reparser()
    reparser.parse_module(TRAIN)
    edited = TRAIN.replace(old, new, 1)
    module = reparser.parse_module(edited)
    fresh = reparser.fresh(module)
    assert fresh is not None and fresh[0] is module.body[0]
    assert module.deep_equals(cst.parse_module(edited))
    assert module.code == edited


def test_a_form_feed_is_not_a_line_break() -> None:
    """`str.splitlines` breaks at a form feed; Python's tokenizer does not."""
    text = TRAIN.replace("\n\ndef evaluate", "\n\x0c\ndef evaluate")
    reparser = Reparser()
    reparser.parse_module(text, ast.parse(text))
    edited = text.replace("batch_size=64", "batch_size=65")
    module = reparser.parse_module(edited, ast.parse(edited))
    assert reparser.fresh(module) is not None
    assert module.deep_equals(cst.parse_module(edited))


def test_statements_placed_by_cpythons_tree_are_placed_as_their_code_says() -> None:
    """A whole parse places each statement from CPython's line numbers, not by
    generating its code: the same lines either way."""
    for script in SCRIPTS:
        text = script.read_text(encoding="utf-8")
        module = cst.parse_module(text)
        lines = text.count("\n")
        assert _spans_from_tree(module, ast.parse(text), lines) == _spans_of(
            module.body, module, len(module.header)
        ), script.name


def test_a_statement_indented_into_the_block_above_reparses_that_block_too() -> None:
    """`evaluate` becomes part of `train`'s body: `train` is not kept, although none
    of its own lines changed, because the line that closed its block moved."""
    reparser = Reparser()
    reparser.parse_module(TRAIN)
    edited = TRAIN.replace(
        "def evaluate(dataset):\n    loader", "    def evaluate(d):\n        loader"
    )
    edited = edited.replace("    return [x.cuda()", "        return [x.cuda()")
    module = reparser.parse_module(edited)
    fresh = reparser.fresh(module)
    assert fresh is not None
    assert [s.name.value for s in fresh if isinstance(s, cst.FunctionDef)] == ["train"]
    assert module.deep_equals(cst.parse_module(edited))


def test_a_comment_that_an_edited_block_takes_in_stays_with_it() -> None:
    """An indented comment above `evaluate` belongs to evaluate's leading lines after a
    simple statement, but to the block's footer once the statement above is a block."""
    text = "import torch\n\nx = 1\n    # about evaluate\ndef evaluate():\n    pass\n"
    reparser = Reparser()
    reparser.parse_module(text)
    edited = text.replace("x = 1\n", "if x:\n    y = 1\n")
    module = reparser.parse_module(edited)
    assert module.deep_equals(cst.parse_module(edited))


def test_two_space_and_crlf_files_keep_their_defaults() -> None:
    two = TRAIN.replace("    ", "  ")
    crlf = TRAIN.replace("\n", "\r\n")
    for text, edit in ((two, ("batch_size=32", "batch_size=8")), (crlf, ("64", "128"))):
        reparser = Reparser()
        reparser.parse_module(text)
        edited = text.replace(*edit)
        module = reparser.parse_module(edited)
        assert reparser.fresh(module) is not None
        assert module.deep_equals(cst.parse_module(edited))
        assert module.code == edited


def test_diagnostics_with_carried_positions_are_those_of_a_fresh_lint(tmp_path: Path) -> None:
    """Findings in kept statements below an edit that adds lines move with them."""
    settings = load_settings(search_from=tmp_path)
    path = str(tmp_path / "train.py")
    reparser = Reparser()
    text = TRAIN
    lint_bytes(path, text.encode(), settings, reparser=reparser)
    for edit in (
        ("def train(dataset):\n", "def train(dataset):\n    # one more line\n\n"),
        ("batch_size=64", "batch_size=64, drop_last=True"),
        ("class Net(nn.Module):\n", "\n\nclass Net(nn.Module):\n"),
    ):
        text = text.replace(*edit)
        carried = lint_bytes(path, text.encode(), settings, reparser=reparser).diagnostics
        fresh = lint_bytes(path, text.encode(), settings).diagnostics
        assert carried == fresh
        assert carried, "the script has findings to place"
