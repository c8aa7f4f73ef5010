"""libcst's per-node checks are off while a text CPython accepted is parsed
(`parse.unvalidated`, issue 26): the trees must be the ones a validated parse gives,
and every node built outside that parse (a fix's) is checked again."""

from __future__ import annotations

import threading

import libcst as cst
import pytest

from accel_lint.parse import parse, unvalidated
from tests.support import ROOT

SOURCES = sorted((ROOT / "fixtures").glob("*/*.py")) + sorted(
    (ROOT / "tests" / "cases").glob("*.py")
)

# shapes where libcst's checks look at what the parser was given: identifiers outside
# ASCII, whitespace inside brackets and after continuations, every string prefix,
# nested f-strings, operators spelled without spaces, a form feed, tabs
ODD = r"""
import torch as τ
x = (  1 +
   2 ) ;y=-x
z = x if(y)else[y]
w = not(x)in[y]
s = rb'\x00', f"{x!r:>{y}}" 'a' \
    "b"
t = lambda*a,**k:(a,k)
def f(a, /, b, *, c=1)->int:
	return a@b
print(f"{'{'}{f'{x}'}")
"""


def _validated(text: str) -> cst.Module:
    return cst.parse_module(text)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_tree_is_the_validated_parse(path):
    text = path.read_text(encoding="utf-8")
    parsed = parse(str(path), text)
    assert parsed.module is not None, parsed.error
    expected = _validated(text)
    assert parsed.module.deep_equals(expected)
    assert parsed.module.code == text


def test_odd_shapes_parse_to_the_same_tree():
    parsed = parse("odd.py", ODD)
    assert parsed.module is not None
    assert parsed.module.deep_equals(_validated(ODD))


def test_nodes_are_checked_again_once_the_parse_is_done():
    assert parse("t.py", "x = 1\n").module is not None
    with pytest.raises(cst.CSTValidationError):
        cst.Name("1x")  # what a fix builds is checked


def test_a_text_cpython_rejects_is_parsed_with_the_checks_on():
    # CPython 3.11 rejects a `type` statement; libcst parses it, validated
    seen: list[bool] = []
    original = cst.Name._validate

    def spy(self: cst.Name) -> None:
        seen.append(True)
        original(self)

    cst.Name._validate = spy  # type: ignore[method-assign]
    try:
        parse("newer.py", "type Alias = list[int]\n")
    finally:
        cst.Name._validate = original  # type: ignore[method-assign]
    assert seen


def test_nested_and_concurrent_parses_leave_the_checks_on():
    errors: list[BaseException] = []
    started = threading.Barrier(3)

    def work() -> None:
        try:
            started.wait()
            for _ in range(20):
                with unvalidated():
                    cst.parse_module("a = [1, 2]\n")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with unvalidated(), unvalidated():
        cst.Name("1x")  # off inside
    with pytest.raises(cst.CSTValidationError):
        cst.Name("1x")


def test_nodes_hash_by_identity_in_c_and_stay_equal_only_to_themselves() -> None:
    """`parse._identity_hash`: every libcst node class hashes with `object.__hash__`
    (libcst's own method answered the same identity, through a Python call), and
    equality is still libcst's: two nodes of the same code are two keys."""
    from libcst._nodes.base import CSTNode

    classes: list[type] = [CSTNode]
    seen = 0
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        seen += 1
        assert cls.__hash__ is object.__hash__, cls
    assert seen > 150  # every node class of libcst, not a few
    module = parse("m.py", "a = b + b\nc = b + b\n").module
    assert module is not None
    first, second = (s.body[0].value for s in module.body)  # type: ignore[attr-defined]
    assert first.deep_equals(second) and first != second and first == first
    table = {first: 1, second: 2}
    assert table[first] == 1 and table[second] == 2 and len({first, second, first}) == 2
    assert hash(first) == object.__hash__(first)


def test_every_node_class_sets_its_fields_as_libcsts_own_init_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`parse._checked_inits`: for every libcst node class, a node built through the
    new `__init__` has the fields that libcst's (`dataclasses`') method gives the
    same arguments, and each default (a factory's too) where none is passed."""
    import dataclasses

    from libcst._nodes.base import CSTNode

    from accel_lint.parse import LIBCST_INITS

    classes: list[type] = [CSTNode]
    concrete = []
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        if "__init__" in cls.__dict__ and dataclasses.is_dataclass(cls):
            concrete.append(cls)
    # every class libcst exports (the ones before `add_slots` rebuilt them are not)
    exported = {
        c for c in concrete if getattr(cst, c.__name__, None) is c and not c.__abstractmethods__
    }
    assert len(exported) > 150 and exported <= set(LIBCST_INITS) <= set(concrete)
    concrete = sorted(LIBCST_INITS, key=lambda c: c.__qualname__)

    tokens = [object(), object(), object(), object(), object(), object(), object()]
    for cls in concrete:
        fields = dataclasses.fields(cls)
        given = {f.name: tokens[i % len(tokens)] for i, f in enumerate(fields)}
        required = {
            f.name: given[f.name]
            for f in fields
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        for arguments in (given, required):
            with unvalidated():
                ours = cls(**arguments)
            theirs = object.__new__(cls)
            # libcst's method always checks: the tokens are not nodes
            monkeypatch.setattr(CSTNode, "__post_init__", lambda self: None)
            LIBCST_INITS[cls](theirs, **arguments)
            monkeypatch.undo()
            for f in fields:
                a, b = getattr(ours, f.name), getattr(theirs, f.name)
                if f.name in arguments or f.default_factory is dataclasses.MISSING:
                    assert a is b, (cls, f.name)
                else:  # a new object from the factory each time
                    assert type(a) is type(b) and a is not b, (cls, f.name)
                    assert not isinstance(a, cst.CSTNode) or a.deep_equals(b), (cls, f.name)
        # validated outside the parse: an invalid node is refused, as libcst refuses it
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
    with unvalidated():
        assert cst.Name("not a name").value == "not a name"
