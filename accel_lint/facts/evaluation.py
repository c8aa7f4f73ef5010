"""Evaluation code, recognised by what it does, built once per file
(`Evaluations.of(facts)`): a function that calls a module in a loop over a
DataLoader or a dataset, and that either switches a module to evaluation mode
(`<module>.eval()`, `<module>.train(False)`) or is named for evaluation (`evaluate`,
`validate`, `test_epoch`, `predict`, `inference`). A name alone is never enough:
`def test():` that builds a model and runs one random tensor through it is not an
evaluation.

A loop is over data when it iterates (directly, or through `enumerate`, `tqdm`,
`zip`, `iter`...) something named for loading (`val_loader`, `dataset`,
`self.test_dl`, `batches`), a name bound to a `DataLoader(...)`, or a counter over
the length of such a thing (`range(len(dataset))`). A module is called when the
loop's body calls something that is switched to evaluation mode in the function,
or is spelled like a model (`model`, `net`, `self.encoder`, `netG`), or is the
module itself (`self(x)` in a method): its `__call__` or its `forward`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from accel_lint.called import EVALUATION_NAME
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import CallSite, FileFacts, LoopSite
from accel_lint.facts.syntax import last_name
from accel_lint.names import LOCAL, Scope, qualified_names, resolves_to
from accel_lint.torch_api import DATALOADER

# Things iterated by an evaluation loop.
_DATA_NAME = re.compile(
    r"(?:loader|dataset|data_?set|(?:^|_)d[ls](?:$|_)|batches|data_?iter|data_source)",
    re.IGNORECASE,
)
# Modules spelled like one.
MODEL_NAME = re.compile(
    r"^(?:.*model.*|.*net|.*network|net_?\w*|encoder|decoder|generator|discriminator|"
    r"classifier|backbone|teacher|student|predictor|detector|[gd]|ema)$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class EvaluationFunction:
    """A function that evaluates: its loops over data that call a module, and the
    module calls in them."""

    function: cst.FunctionDef
    loops: tuple[cst.For, ...]  # in source order
    module_calls: tuple[CallSite, ...]


class Evaluations:
    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.calls = CallGraph.of(facts)
        self._found: list[EvaluationFunction] | None = None

    @classmethod
    def of(cls, facts: FileFacts) -> Evaluations:
        return facts.shared(cls)

    def functions(self) -> list[EvaluationFunction]:
        if self._found is None:
            self._found = [
                found
                for func, _, _ in self.facts.function_defs
                if (found := self._evaluation(func)) is not None
            ]
        return self._found

    def _evaluation(self, func: cst.FunctionDef) -> EvaluationFunction | None:
        sites = self.calls.by_function.get(func, [])
        switched = [
            s.node.func.value
            for s in sites
            if isinstance(s.node.func, cst.Attribute) and _switches_to_eval(s.node)
        ]
        if not switched and not EVALUATION_NAME.match(func.name.value):
            return None
        loops: list[cst.For] = []
        module_calls: list[CallSite] = []
        for loop in self._data_loops(func):
            inside = [s for s in sites if loop.node in s.bodies and self._calls_module(s, switched)]
            if inside and isinstance(loop.node, cst.For):
                loops.append(loop.node)
                module_calls.extend(s for s in inside if s not in module_calls)
        if not loops:
            return None
        return EvaluationFunction(func, tuple(loops), tuple(module_calls))

    def _data_loops(self, func: cst.FunctionDef) -> list[LoopSite]:
        return [
            site
            for site in self.facts.loop_sites.values()
            if site.function is func
            and isinstance(site.node, cst.For)
            and self.over_data(site.node.iter, site.scope)
        ]

    def over_data(self, iterable: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
        """Does a `for` over `iterable` walk a DataLoader or a dataset?"""
        if depth > 4:
            return False
        if isinstance(iterable, cst.Call):
            func = iterable.func
            if resolves_to(func, scope, DATALOADER) or _DATA_NAME.search(last_name(func) or ""):
                return True  # `DataLoader(...)`, `self.val_dataloader()`
            if isinstance(func, cst.Attribute) and self.over_data(func.value, scope, depth + 1):
                return True  # `dataset.iter_batches()`, `data_source.size(0)`
            # handed on: `enumerate(loader)`, `tqdm(loader)`, `logger.log_every(loader, 10)`,
            # `range(len(dataset))`
            return any(
                self.over_data(arg.value, scope, depth + 1)
                for arg in iterable.args
                if arg.keyword is None and not arg.star
            )
        if isinstance(iterable, cst.BinaryOperation):  # range(len(ds) - 1)
            return self.over_data(iterable.left, scope, depth + 1) or self.over_data(
                iterable.right, scope, depth + 1
            )
        if isinstance(iterable, cst.Subscript):  # loaders["val"]
            return self.over_data(iterable.value, scope, depth + 1)
        if isinstance(iterable, cst.Attribute):
            return iterable.attr.value == "dataset" or bool(_DATA_NAME.search(iterable.attr.value))
        if isinstance(iterable, cst.Name):
            if _DATA_NAME.search(iterable.value):
                return True
            bindings = scope.lookup(iterable.value)
            if bindings and len(bindings) == 1 and bindings[0].value is not None:
                # `val_bar = tqdm(val_loader)`
                return self.over_data(bindings[0].value, bindings[0].scope or scope, depth + 1)
        return False

    def _calls_module(self, site: CallSite, switched: list[cst.BaseExpression]) -> bool:
        func = site.node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "forward":
            func = func.value
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return False
        names = qualified_names(func, site.scope)
        if names != frozenset({LOCAL}):
            return False  # an import's callable (`F.relu`, `torch.cat`) or unbound
        if self.calls.local_callee(site.node, site.scope) is not None:
            return False  # a function or class of this file
        if any(_same_code(func, s) for s in switched):
            return True
        if isinstance(func, cst.Name) and func.value == "self":
            return self.calls.class_of(site.function) is not None
        return bool(MODEL_NAME.match(last_name(func) or ""))


def named_for_evaluation(name: str) -> bool:
    """A function name that says it evaluates: `evaluate`, `validate`, `test_epoch`,
    `predict`, `inference` (leading underscores allowed)."""
    return bool(EVALUATION_NAME.match(name))


def _switches_to_eval(call: cst.Call) -> bool:
    """`<m>.eval()` or `<m>.train(False)`."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    if func.attr.value == "eval":
        return not call.args
    if func.attr.value == "train" and len(call.args) == 1:
        value = call.args[0].value
        return isinstance(value, cst.Name) and value.value == "False"
    return False


def _same_code(a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    return a.deep_equals(b)
