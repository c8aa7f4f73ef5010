"""Adjacent modules of an `nn.Sequential`: its positional arguments, the values of an
`OrderedDict` passed to it, `super().__init__(...)` in a subclass that keeps
Sequential's forward, and lists of layers splatted into one (`layer_lists`). Each
pair of neighbours is a candidate "conv feeds norm" edge; a gap (a star argument,
a keyword, an unreadable key) breaks the chain rather than guessing its content."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

from accel_lint.facts import FileFacts
from accel_lint.names import LOCAL, Scope, qualified_names
from accel_lint.rules.conv_bias_before_norm.classes import (
    ORDERED_DICT,
    SEQUENTIAL_INIT,
    resolves,
)
from accel_lint.rules.conv_bias_before_norm.collected import Collected
from accel_lint.rules.conv_bias_before_norm.layer_lists import (
    ListCandidate,
    Pair,
    choices,
    collect_list_contributions,
    list_is_plain,
    owner_key,
)
from accel_lint.rules.conv_bias_before_norm.syntax import Elements, string
from accel_lint.torch_api import SEQUENTIAL


def adjacent_pairs(seen: Collected, facts: FileFacts) -> Iterator[Pair]:
    """Adjacent modules of an `nn.Sequential`, including lists splatted into one."""
    lists: dict[tuple[int, str], ListCandidate] = {}
    for body, scope, cls in seen.blocks:
        collect_list_contributions(body, scope, cls, lists)
    for call, scope, cls in seen.spelled_calls:
        args = _sequential_args(seen, call, scope, cls)
        if args is None:
            continue
        elements: Elements = []
        if (
            len(args) == 1
            and not args[0].star
            and isinstance(args[0].value, cst.Call)
            and resolves(args[0].value.func, scope, ORDERED_DICT)
        ):
            elements = _ordered_dict_values(args[0].value)
        else:
            for arg in args:
                if arg.keyword is not None or arg.star == "**":
                    elements = []
                    break
                if arg.star == "*":
                    elements.append(None)
                    if isinstance(arg.value, cst.Name):
                        key = owner_key(arg.value, scope)
                        candidate = lists.setdefault(key, ListCandidate()) if key else None
                        if candidate is not None:
                            candidate.splatted = True
                            candidate.allowed_refs.add(arg.value)
                else:
                    elements.append(arg.value)
        for x, y in zip(elements, elements[1:]):
            for a, b, when in choices(x, y):
                if a is not None and b is not None:
                    yield a, b, scope, cls, when
    for key, candidate in lists.items():
        if candidate.splatted and candidate.pairs and list_is_plain(key, candidate, seen, facts):
            yield from candidate.pairs


def _sequential_args(
    seen: Collected, call: cst.Call, scope: Scope, cls: cst.ClassDef | None
) -> Sequence[cst.Arg] | None:
    names = qualified_names(call.func, scope)
    if names and LOCAL not in names:
        if names <= SEQUENTIAL:
            return call.args
        if names <= SEQUENTIAL_INIT and call.args:
            return call.args[1:]  # nn.Sequential.__init__(self, ...)
        return None
    func = call.func
    if (
        cls is not None
        and isinstance(func, cst.Attribute)
        and func.attr.value == "__init__"
        and isinstance(func.value, cst.Call)
        and isinstance(func.value.func, cst.Name)
        and func.value.func.value == "super"
        and _plain_sequential_subclass(seen, cls)
    ):
        return call.args
    return None


def _plain_sequential_subclass(seen: Collected, cls: cst.ClassDef) -> bool:
    """A subclass of nn.Sequential that keeps Sequential's forward."""
    for node, scope in seen.classes:
        if node is cls:
            if not any(resolves(base.value, scope, SEQUENTIAL) for base in cls.bases):
                return False
            body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
            return not any(
                isinstance(stmt, cst.FunctionDef) and stmt.name.value == "forward" for stmt in body
            )
    return False


def _ordered_dict_values(call: cst.Call) -> Elements:
    """Values of `OrderedDict([("a", x), ...])`, `OrderedDict({"a": x})` or
    `OrderedDict(a=x)` in insertion order; empty when a key repeats or is not literal
    (a repeated key keeps its first position with its last value)."""
    keys: list[str | None] = []
    values: Elements = []
    if len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star:
        source = call.args[0].value
        if isinstance(source, (cst.List, cst.Tuple)):
            for element in source.elements:
                pair = element.value
                if (
                    isinstance(element, cst.Element)
                    and isinstance(pair, cst.Tuple)
                    and len(pair.elements) == 2
                    and not any(isinstance(e, cst.StarredElement) for e in pair.elements)
                ):
                    keys.append(string(pair.elements[0].value))
                    values.append(pair.elements[1].value)
                else:
                    keys.append(None)
                    values.append(None)
        elif isinstance(source, cst.Dict):
            for item in source.elements:
                if isinstance(item, cst.DictElement):
                    keys.append(string(item.key))
                    values.append(item.value)
                else:
                    keys.append(None)
                    values.append(None)
        else:
            return []
    elif all(arg.keyword is not None for arg in call.args):
        for arg in call.args:
            assert arg.keyword is not None
            keys.append(arg.keyword.value)
            values.append(arg.value)
    else:
        return []
    if None in keys or len(set(keys)) != len(keys):
        return []
    return values
