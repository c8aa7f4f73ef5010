"""The memory of one large file (issue 23): libcst's parser parses a large module a
part at a time, a fix pass drops its tree before the next one is parsed, and a
check's peak per byte of source stays bounded."""

from __future__ import annotations

import ast
import gc
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import libcst as cst
import pytest

from accel_lint.config import Selection, load_settings
from accel_lint.incremental import PART_CHARS, parse_in_parts
from accel_lint.lint import fix_bytes, lint_bytes
from tests.support import ROOT

FIXTURES = sorted((ROOT / "fixtures").glob("*/train.py"))
CASES = sorted((ROOT / "tests" / "cases").glob("*.py"))


def _joined(paths: list[Path]) -> str:
    """Real training scripts joined into one module (`from __future__` must come first)."""
    return "".join(
        "".join(
            line
            for line in path.read_text(encoding="utf-8").splitlines(keepends=True)
            if not line.startswith("from __future__")
        )
        + "\n"
        for path in paths
    )


def _counting_parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The libcst parses made from now on: the length of each text parsed."""
    parsed: list[int] = []
    real = cst.parse_module

    def parse_module(source: str, *args: Any, **kwargs: Any) -> cst.Module:
        parsed.append(len(source))
        return real(source, *args, **kwargs)

    monkeypatch.setattr(cst, "parse_module", parse_module)
    return parsed


# -- a large file in parts ------------------------------------------------------------

EDGES = {
    "mixed indentation": "def f():\n  return 1\n\n\nclass C:\n    x = 1\n",
    "tabs": "if True:\n\tx = 1\n\n# comment\ndef f():\n\treturn 2\n",
    "crlf": "x = 1\r\n\r\ndef f():\r\n    return 1\r\n# c\r\ny = 2\r\n",
    "an indented comment closing a block": (
        "def f():\n    pass\n    # still f's\nx = 1\n\n    # indented, at top level\ny = 2\n"
    ),
    "decorators and comments between them": (
        "import functools\n\n# about g\n@functools.cache\n# between\n@functools.wraps(len)\n"
        "def g():\n    pass\n\n\n@functools.cache\ndef h():\n    pass\n"
    ),
    "one line, two statements": "a = 1; b = 2\nc = 3; d = 4\n\n\ne = 5\n",
    "header, coding cookie, footer": (
        "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n\n'''doc'''\nx = 1\n\n# the end\n\n"
    ),
    "no final newline": "x = 1\n\ny = (\n    2,\n)\nz = 3",
    "a backslash continuation": "x = 1 + \\\n    2\ny = 3\n",
    "blank lines with spaces": "def f():\n    pass\n    \n  \ny = 3\n",
    "the first block after one-line clauses": (
        "if a: b = 1\nelse: b = 2\n\nclass C: pass\n\ndef f():\n  return 1\n\n"
        "def g():\n    if f():\n      return 2\n"
    ),
    "match statements indented differently": (
        "match x:\n  case 1:\n    pass\n\nmatch y:\n    case 2:\n        pass\n"
        "    case _:\n      pass\n"
    ),
    "try and loops with clauses": (
        "try: a()\nexcept E:\n   b()\n\nfor i in x: pass\nelse:\n    c()\n\nwhile y:\n\tz()\n"
    ),
}


@pytest.mark.parametrize("name", sorted(EDGES))
def test_parts_join_into_libcsts_own_tree_at_every_boundary(name: str) -> None:
    text = EDGES[name]
    whole = cst.parse_module(text)
    joined = parse_in_parts(text, ast.parse(text), part_chars=1)  # a cut wherever one may be
    assert joined.code == text
    assert joined.deep_equals(whole)


def test_real_scripts_in_parts_are_libcsts_own_trees(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = _counting_parses(monkeypatch)
    for path in FIXTURES + CASES:
        text = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue  # a case of what does not parse
        whole = cst.parse_module(text)
        del parsed[:]
        joined = parse_in_parts(text, tree, part_chars=1)
        assert joined.code == text, path
        assert joined.deep_equals(whole), path
        if len(tree.body) > 1:
            assert len(parsed) > 1, path  # it was cut


def test_a_large_file_is_parsed_in_parts_of_about_64k(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _joined(FIXTURES) * 10  # about 760 KB of training scripts
    parsed = _counting_parses(monkeypatch)
    settings = load_settings(isolated=True, cli=Selection(select=("ALL",)))
    report = lint_bytes("big.py", text.encode(), settings)
    assert report.internal_error is None and report.diagnostics
    assert sum(parsed) == len(text)  # the parts, and nothing else
    assert len(text) // (2 * PART_CHARS) < len(parsed) <= len(text) // PART_CHARS + 1
    assert all(PART_CHARS <= size < 2 * PART_CHARS for size in parsed[:-1])


# -- one tree at a time -----------------------------------------------------------------


def _trees_alive_at_each_parse(
    monkeypatch: pytest.MonkeyPatch, run: Callable[[], object], min_chars: int
) -> list[int]:
    """For each libcst parse of at least `min_chars`: the trees of a whole file
    (modules of more than 20 statements) alive when it starts."""
    alive: list[int] = []
    real = cst.parse_module

    def parse_module(source: str, *args: Any, **kwargs: Any) -> cst.Module:
        if len(source) >= min_chars:
            trees = [o for o in gc.get_objects() if type(o) is cst.Module and len(o.body) > 20]
            alive.append(len(trees))
            del trees
        return real(source, *args, **kwargs)

    monkeypatch.setattr(cst, "parse_module", parse_module)
    run()
    return alive


def test_fixing_holds_one_tree_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the cyclic collector off during a file, each fix pass's tree stayed alive
    through its scopes' cycles: 5 trees at once on these 76 KB, each gigabytes at 5 MB."""
    text = _joined(FIXTURES)
    settings = load_settings(isolated=True, cli=Selection(select=("ALL",)), unsafe_fixes=True)
    outcome: list[Any] = []

    def fix() -> None:
        outcome.append(fix_bytes("train.py", text.encode(), settings, with_diff=False))

    alive = _trees_alive_at_each_parse(monkeypatch, fix, len(text) // 2)
    report = outcome[0]
    assert report.error is None and report.internal_error is None
    assert report.applied > 50  # several passes, and the layout of long lines
    assert len(alive) >= 4
    assert alive == [0] * len(alive)  # no tree of an earlier pass when the next is parsed


# -- the peak of a check ----------------------------------------------------------------

PEAK = textwrap.dedent(
    """
    import resource, subprocess, sys
    done = subprocess.run(
        [sys.executable, "-m", "accel_lint", "check", "--no-cache", "--select", "ALL", "-q",
         sys.argv[1]],
        capture_output=True,
    )
    unit = 1 if sys.platform == "darwin" else 1024
    print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * unit)
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="resource")
def test_checking_a_large_module_peaks_under_400_bytes_per_byte(tmp_path: Path) -> None:
    """The peak was libcst's parser on the whole text, about 400 bytes per byte of
    source on top of the rest: 2.6 GB for a 5 MB module. Parsed in parts, what grows with the file
    is the tree and the facts (docs/performance.md, "Large files")."""
    big = tmp_path / "big.py"
    big.write_text(_joined(FIXTURES) * 14, encoding="utf-8")  # about 1 MB
    out = subprocess.run(
        [sys.executable, "-c", PEAK, str(big)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    code, peak = map(int, out.stdout.split())
    assert code == 1, out.stderr  # findings
    # before: 650 bytes per byte of this file; now about 250
    assert peak / big.stat().st_size < 400


def test_a_fix_rebuilds_only_the_nodes_on_the_way_to_what_it_replaces() -> None:
    """libcst's transform rebuilt every node of the module for each pass (a second
    tree as large as the file's); the result is the same text."""
    from accel_lint.edits import Replacer, replaced

    text = "import torch\n\n\ndef f():\n    return torch.zeros(3).cuda()\n\n\nx = [1, 2]\n"
    module = cst.parse_module(text)
    function = module.body[1]
    assert isinstance(function, cst.FunctionDef)
    returned = function.body.body[0].body[0]  # type: ignore[attr-defined]
    call = returned.value
    new = cst.parse_expression("torch.zeros(3, device='cuda')")
    fixed = replaced(module, {call: new})
    assert fixed.code == module.visit(Replacer({call: new})).code
    assert fixed.code == text.replace("torch.zeros(3).cuda()", "torch.zeros(3, device='cuda')")
    assert fixed.body[0] is module.body[0] and fixed.body[2] is module.body[2]  # shared
    assert fixed.body[1] is not function
    # a node the walk does not reach (punctuation) is still replaced, the whole way
    comma = module.body[2].body[0].value.elements[0].comma  # type: ignore[attr-defined]
    spaced = replaced(module, {comma: cst.Comma(whitespace_after=cst.SimpleWhitespace("  "))})
    assert spaced.code.endswith("x = [1,  2]\n")
