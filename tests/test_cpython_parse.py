"""CPython 3.11 converts its tree to `ast` objects with one global depth counter; two
threads converting at once fail with "SystemError: AST constructor recursion depth
mismatch". `verify` fixes the script in a second thread while the first lints, so
every CPython parse of the package goes through `source.cpython_ast`, one thread at a
time. Found by CI: the prefetch thread died in `compile_ast`."""

from __future__ import annotations

import ast
import gc
import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from accel_lint.source import compile_ast, cpython_ast, syntax_check
from tests.support import ROOT

# deep nesting keeps each conversion long; garbage with cycles and a finalizer makes
# the collector run Python code mid-conversion, where the other thread may take over
NESTED = ("x = " + "[" * 10 + "1" + "]" * 10 + "\n") * 10


class _Cycle:
    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        """Python code run by the collector: where the interpreter may switch threads."""


@pytest.fixture
def switching() -> Iterator[None]:
    interval, thresholds = sys.getswitchinterval(), gc.get_threshold()
    sys.setswitchinterval(1e-6)
    gc.set_threshold(5, 1_000_000, 1_000_000)  # young collections only: often, cheap
    try:
        yield
    finally:
        sys.setswitchinterval(interval)
        gc.set_threshold(*thresholds)


def _race(*parses: Callable[[], object], rounds: int = 200) -> list[BaseException]:
    """Each parse in its own thread, all started at once, `rounds` times each."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(parses))

    def work(parse: Callable[[], object]) -> None:
        start.wait()
        for _ in range(rounds):
            _Cycle()
            try:
                parse()
            except BaseException as exc:  # the point: nothing may escape
                errors.append(exc)
                return

    threads = [threading.Thread(target=work, args=(parse,)) for parse in parses]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_the_race_exists_without_the_lock(switching):
    """The test below can fail: bare `compile` in two threads hits the bug on 3.11."""
    if sys.version_info >= (3, 12):
        pytest.skip("3.12 keeps the counter per conversion")

    def bare() -> None:
        compile(NESTED, "<t>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)

    for _ in range(20):  # found within 3-6 parses in every try made
        errors = _race(bare, bare)
        if errors:
            break
    assert errors and isinstance(errors[0], SystemError), errors


def test_two_threads_parse_at_once(switching):
    parse = lambda: compile_ast(NESTED, "train.py")  # noqa: E731
    assert _race(parse, parse, rounds=400) == []


def test_an_expression_and_a_module_parse_at_once(switching):
    """The f-string probe parses expressions while another thread parses a file."""
    expression = "(\n" + "[" * 10 + "f'{x}'" + "]" * 10 + "\n)"
    assert (
        _race(
            lambda: compile_ast(NESTED, "train.py"),
            lambda: cpython_ast(expression, "<f-string>", "eval"),
            rounds=400,
        )
        == []
    )


def test_no_other_way_into_cpythons_tree():
    """`ast.parse` or `compile(..., PyCF_ONLY_AST)` anywhere else would race again."""
    package = ROOT / "accel_lint"
    offenders = [
        f"{path.relative_to(ROOT)}:{row}"
        for path in sorted(package.rglob("*.py"))
        if path != package / "source.py"
        for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "ast.parse(" in line or "PyCF_ONLY_AST" in line
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "text",
    [
        "def f(a, a):\n    pass\n",  # symtable rejects it, CPython's parser does not
        "nonlocal x\n",
        "x = (1,\n",
        "def f(:\n",
        "a\x00b = 1\n",
        "print 'hello'\n",
        "x = 1\n",
    ],
)
def test_the_syntax_check_is_cpythons_parse(text: str) -> None:
    """`syntax_check` asks `symtable` first: its verdict and message are still those
    of CPython's parse."""
    try:
        compile_ast(text, "t.py")
        expected = None
    except (SyntaxError, ValueError) as exc:
        expected = str(exc)
    assert syntax_check("t.py", text) == expected
