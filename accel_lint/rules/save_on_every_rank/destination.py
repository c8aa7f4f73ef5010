"""Whether a save writes a file of its own process: a path that contains the rank
(`f"ckpt_{rank}.pt"`), an in-memory or temporary target (`io.BytesIO()`,
`tempfile.NamedTemporaryFile()`), a path parameter some caller fills with a per-rank
path, or, for `def save_on_master(*args, **kwargs): torch.save(*args, **kwargs)`, the
destination each caller in the file passes. A destination the rule cannot read
(`torch.save(*args)` called from elsewhere) is not flagged."""

from __future__ import annotations

import libcst as cst

from accel_lint.facts import CallSite
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.ranks import RankAnalysis
from accel_lint.facts.syntax import argument_for, sub_expressions
from accel_lint.names import Scope, qualified_names
from accel_lint.rules.save_on_every_rank.callers import MAX_CALL_DEPTH
from accel_lint.rules.save_on_every_rank.record import Save


def destination(call: cst.Call) -> cst.BaseExpression | None:
    """The `f` argument of `torch.save(obj, f, ...)`."""
    positional = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            if arg.keyword.value == "f":
                return arg.value
            continue
        if positional == 1:
            return arg.value
        positional += 1
    return None


class Destinations:
    def __init__(self, calls: CallGraph, ranks: RankAnalysis) -> None:
        self.calls = calls
        self.ranks = ranks
        # each (expression, scope, function, depth) and (function, parameter, depth) is
        # judged once: callers shared by many saves are not walked again for each
        self._answers: dict[tuple[int, int, int, int], bool] = {}
        self._arguments: dict[tuple[int, int, int], bool] = {}

    def per_process(self, save: Save) -> bool:
        """One file per rank, or an in-memory / temporary target."""
        dest = destination(save.call)
        if dest is not None:
            return self._per_process(dest, save.scope, save.function, 0)
        if save.function is not None:
            forwarded = self._forwarded(save.call, save.function)
            if forwarded is not None:
                return any(
                    self._per_process(value, site.scope, site.function, 1)
                    for value, site in forwarded
                )
        return True  # cannot tell where it writes

    def _forwarded(
        self, call: cst.Call, func: cst.FunctionDef
    ) -> list[tuple[cst.BaseExpression, CallSite]] | None:
        """For `def save_on_master(*args, **kwargs): torch.save(*args, **kwargs)`, the
        destination each call of the function in the file passes; None when the save's
        arguments are not forwarded that way or a call cannot be read."""
        star = func.params.star_arg
        star_kwarg = func.params.star_kwarg
        prefix = 0
        forwards_args = forwards_kwargs = False
        for arg in call.args:
            name = arg.value.value if isinstance(arg.value, cst.Name) else None
            if arg.star == "*" and isinstance(star, cst.Param) and name == star.name.value:
                forwards_args = True
            elif arg.star == "**" and star_kwarg is not None and name == star_kwarg.name.value:
                forwards_kwargs = True
            elif arg.star or arg.keyword is not None or forwards_args:
                return None
            else:
                prefix += 1
        if not forwards_args and not forwards_kwargs:
            return None
        named = len(func.params.posonly_params) + len(func.params.params)
        out: list[tuple[cst.BaseExpression, CallSite]] = []
        for site, offset in self.calls.invocations(func):
            if any(arg.star for arg in site.node.args):
                return None
            positional = [arg.value for arg in site.node.args if arg.keyword is None]
            extra = positional[max(0, named - offset) :]
            keywords = {arg.keyword.value: arg.value for arg in site.node.args if arg.keyword}
            if forwards_args and 0 <= 1 - prefix < len(extra):
                out.append((extra[1 - prefix], site))
            elif forwards_kwargs and "f" in keywords:
                out.append((keywords["f"], site))
        return out

    def _per_process(
        self,
        expr: cst.BaseExpression,
        scope: Scope,
        function: cst.FunctionDef | None,
        depth: int,
    ) -> bool:
        if depth > MAX_CALL_DEPTH:
            return False
        key = (id(expr), id(scope), id(function), depth)
        known = self._answers.get(key)
        if known is None:
            known = self._answers[key] = self._judge(expr, scope, function, depth)
        return known

    def _judge(
        self,
        expr: cst.BaseExpression,
        scope: Scope,
        function: cst.FunctionDef | None,
        depth: int,
    ) -> bool:
        for sub in sub_expressions(expr):
            if isinstance(sub, cst.Call) and private_target(sub, scope):
                return True
            if isinstance(
                sub, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)
            ) and self.ranks.is_rank(sub, scope):
                return True
            if not isinstance(sub, cst.Name):
                continue
            for binding in scope.lookup(sub.value) or ():
                node = binding.node
                if isinstance(node, cst.WithItem) and isinstance(node.item, cst.Call):
                    if private_target(node.item, binding.scope or scope):
                        return True
                elif isinstance(node, cst.Param) and function is not None:
                    if self._per_process_argument(function, node, depth):
                        return True
                elif (
                    binding.value is not None
                    and binding.scope is not None
                    and self._per_process(binding.value, binding.scope, function, depth + 1)
                ):
                    return True
        return False

    def _per_process_argument(self, func: cst.FunctionDef, param: cst.Param, depth: int) -> bool:
        """A path parameter that some caller fills with a per-rank path."""
        key = (id(func), id(param), depth)
        known = self._arguments.get(key)
        if known is None:
            known = self._arguments[key] = self._filled_per_process(func, param, depth)
        return known

    def _filled_per_process(self, func: cst.FunctionDef, param: cst.Param, depth: int) -> bool:
        positional = [*func.params.posonly_params, *func.params.params]
        index = next((i for i, p in enumerate(positional) if p is param), None)
        for site, offset in self.calls.invocations(func):
            value = argument_for(site.node, param.name.value, index, offset)
            if value is not None and self._per_process(value, site.scope, site.function, depth + 1):
                return True
        return False


def private_target(call: cst.Call, scope: Scope) -> bool:
    """`io.BytesIO()`, `tempfile.NamedTemporaryFile()`: a target no other rank shares."""
    names = qualified_names(call.func, scope)
    return (
        bool(names)
        and all(n.startswith(("io.", "tempfile.")) for n in names)
        and not (names <= {"io.open"})
    )
