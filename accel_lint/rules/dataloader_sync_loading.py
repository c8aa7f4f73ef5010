"""ACL101 dataloader-sync-loading: a DataLoader that loads batches in the training
process (`num_workers` absent or statically 0). Page: rules/ACL101.md"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from accel_lint.edits import add_keyword, code_for
from accel_lint.facts import int_value
from accel_lint.facts.loader_args import passed
from accel_lint.names import (
    Scope,
    assigned_value,
    qualified_names,
    resolves_to,
    root_is_module_import,
    spelling_for,
)
from accel_lint.rule import Equivalence, Fix, FixSafety, Option, Rule, Verification
from accel_lint.torch_api import DATALOADER, RANDOM_FUNCTIONS

# Calls that draw from a global random generator (torch, numpy, random).
_RANDOM_PREFIXES = ("random.", "numpy.random.", "torchvision.transforms.Random")


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


class DataloaderSyncLoading(Rule):
    code = "ACL101"
    name = "dataloader-sync-loading"
    summary = "DataLoader without worker processes (num_workers absent or 0)"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.EXACT)
    options = {
        "num-workers": Option(
            "auto", 'a positive integer or "auto"', lambda v: v == "auto" or _positive_int(v)
        ),
        "max-workers": Option(8, "a positive integer", lambda v: _positive_int(v)),
    }

    def setup(self) -> None:
        self._calls: list[tuple[cst.Call, Scope]] = []
        self._getitem_random: dict[str, bool] = {}
        self._random_transforms = False

    def visit_Call(self, node: cst.Call) -> None:
        self._calls.append((node, self.facts.scope))
        names = qualified_names(node.func, self.facts.scope)
        if names and any(n.startswith(_RANDOM_PREFIXES) or n in RANDOM_FUNCTIONS for n in names):
            fn, cls = self.facts.function, self.facts.class_def
            if fn is not None and cls is not None and fn.name.value == "__getitem__":
                self._getitem_random[cls.name.value] = True
            if any(n.startswith("torchvision.transforms.Random") for n in names):
                self._random_transforms = True

    def finish(self) -> None:
        for call, scope in self._calls:
            if resolves_to(call.func, scope, DATALOADER):
                self._check(call, scope)

    def _check(self, call: cst.Call, scope: Scope) -> None:
        got = passed(call, "num_workers", self.facts, scope)
        if not got.known or got.conditional:
            return
        equivalence = self._equivalence(call, scope)
        if got.absent:
            self._report(
                call,
                "`num_workers` is not set (default 0)",
                call,
                lambda workers: add_keyword(call, "num_workers", workers),
                "Add `num_workers={}`",
                scope,
                equivalence,
            )
            return
        assert got.value is not None
        value = got.value
        option = self.facts.argparse_option_for(value)
        if option is not None:
            if option.default is None or option.default_arg is None:
                return
            if int_value(self.facts.literal_value(option.default, scope)) != 0:
                return
            default_arg = option.default_arg
            self._report(
                call,
                f"`num_workers` is `{code_for(value)}`, and the default of `{option.flag}` is 0",
                default_arg,
                lambda workers: default_arg.with_changes(value=cst.parse_expression(workers)),
                f"Change the default of `{option.flag}` to `{{}}`",
                self._scope_of_call(option.call) or scope,
                equivalence,
                related=(option.default,),
            )
            return
        literal = self.facts.literal_value(value, scope)
        if int_value(literal) != 0:
            return
        if literal is value:
            where, target_scope = "`num_workers=0`", scope
        else:  # the constant's assigned value: the knob the user set
            where, target_scope = (
                f"`num_workers={code_for(value)}`, which is 0",
                self.facts.module_scope,
            )
        self._report(
            call,
            where,
            literal,
            lambda workers: cst.parse_expression(workers),
            "Set `num_workers={}`",
            target_scope,
            equivalence,
        )

    def _report(
        self,
        call: cst.Call,
        why: str,
        target: cst.CSTNode,
        rewrite: Callable[[str], cst.CSTNode],
        fix_message: str,
        scope: Scope,
        equivalence: Equivalence,
        related: tuple[cst.CSTNode, ...] = (),
    ) -> None:
        """Report `call`; the fix rewrites `target`, with the worker count spelled for
        `scope` (where the new expression goes)."""
        message = f"DataLoader loads every batch in the training process: {why}"
        workers = self._workers_expression()
        imports: tuple[str, ...] = ()
        if "os.cpu_count" in workers:
            spelled, needed = spelling_for("os.cpu_count", scope)
            if not root_is_module_import(spelled, scope):
                # `os` is bound inside this function: a module-level import cannot reach it
                self.report(
                    call,
                    message,
                    no_fix_reason="`os` is a local name here",
                    equivalence=equivalence,
                    related=related,
                )
                return
            workers = workers.replace("os.cpu_count", spelled)
            imports = (needed,) if needed else ()
        fix = Fix(fix_message.format(workers), {target: rewrite(workers)}, imports)
        self.report(call, message, fix, equivalence=equivalence, related=related)

    def _scope_of_call(self, node: cst.Call) -> Scope | None:
        return next((site.scope for site in self.facts.calls if site.node is node), None)

    def _workers_expression(self) -> str:
        opts = self.ctx.options
        chosen = opts.get("num-workers", "auto")
        if isinstance(chosen, int):
            return str(chosen)
        return f"min({int(opts.get('max-workers', 8))}, os.cpu_count() or 1)"

    def _equivalence(self, call: cst.Call, scope: Scope) -> Equivalence:
        """Exact unless the dataset's `__getitem__` draws global random numbers."""
        if self._random_transforms:
            return Equivalence.STATISTICAL
        dataset = call.args[0].value if call.args and call.args[0].keyword is None else None
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "dataset":
                dataset = arg.value
        origin = assigned_value(dataset, scope) if isinstance(dataset, cst.Name) else dataset
        if (
            isinstance(origin, cst.Call)  # `Noisy()` built inline or bound once to a name
            and isinstance(origin.func, cst.Name)
            and self._getitem_random.get(origin.func.value)
        ):
            return Equivalence.STATISTICAL
        return Equivalence.EXACT
