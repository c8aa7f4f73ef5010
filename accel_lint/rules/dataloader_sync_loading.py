"""ACL101 dataloader-sync-loading: a DataLoader that loads batches in the training
process (`num_workers` absent or statically 0). Page: rules/ACL101.md"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from accel_lint.edits import add_keyword, code_for
from accel_lint.facts import CallSite, int_value
from accel_lint.facts.datasets import in_memory
from accel_lint.facts.entry import Entry
from accel_lint.facts.loader_args import passed
from accel_lint.names import (
    BindingKind,
    Scope,
    assigned_value,
    qualified_names,
    root_is_module_import,
    spelling_for,
)
from accel_lint.rule import Equivalence, Fix, FixSafety, Option, Rule, Verification
from accel_lint.torch_api import DATALOADER, RANDOM_FUNCTIONS

# Calls that draw from a global random generator (torch, numpy, random).
_RANDOM_PREFIXES = ("random.", "numpy.random.", "torchvision.transforms.Random")
# ... except the constructors of a generator of one's own
_OWN_GENERATORS = frozenset(
    {
        "random.Random",
        "random.SystemRandom",
        "numpy.random.default_rng",
        "numpy.random.RandomState",
        "numpy.random.Generator",
        "numpy.random.SeedSequence",
    }
)
_AT_IMPORT = (
    "the loader is built when the script is imported, and the script has no "
    '`if __name__ == "__main__":` guard: with the `spawn` or `forkserver` start method '
    "(macOS, Windows, Linux from Python 3.14) every worker imports the script again and "
    "the run crashes; move the script's code under the guard first"
)

# in a notebook there is no guard to move code under: what stops the fix is pickling
_IN_NOTEBOOK = (
    "in a notebook, workers started with `spawn` or `forkserver` (macOS, Windows, Linux "
    "from Python 3.14) cannot load a dataset, transform or collate function that the "
    "notebook itself defines; set `num_workers` by hand once they come from an "
    "importable module"
)


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
        # random calls in a `__getitem__`: (call, its scope, the dataset class's name)
        self._getitem_draws: list[tuple[cst.Call, Scope, str]] = []
        self._random_transforms = False
        self._at_import = False  # the loader being checked is built at import, unguarded

    def visit_Call(self, node: cst.Call) -> None:
        names = qualified_names(node.func, self.facts.scope)
        if not names or names <= _OWN_GENERATORS:
            return
        if any(n.startswith(_RANDOM_PREFIXES) or n in RANDOM_FUNCTIONS for n in names):
            fn, cls = self.facts.function, self.facts.class_def
            if fn is not None and cls is not None and fn.name.value == "__getitem__":
                self._getitem_draws.append((node, self.facts.scope, cls.name.value))
            if any(n.startswith("torchvision.transforms.Random") for n in names):
                self._random_transforms = True

    def finish(self) -> None:
        self._getitem_random = {
            cls for call, scope, cls in self._getitem_draws if not _own_generator(call, scope)
        }
        for site in self.facts.calls_resolving_to(DATALOADER):
            self._check(site)

    def _check(self, site: CallSite) -> None:
        call, scope = site.node, site.scope
        if self._reads_memory(call, scope):
            return
        got = passed(call, "num_workers", self.facts, scope)
        if not got.known or got.conditional:
            return
        entry = Entry.of(self.facts)
        self._at_import = not entry.has_main_guard and entry.runs_at_import(site)
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
        if self._at_import:
            self.report(
                call,
                message,
                no_fix_reason=(
                    _IN_NOTEBOOK if self.ctx.path.lower().endswith(".ipynb") else _AT_IMPORT
                ),
                equivalence=equivalence,
                related=related,
            )
            return
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

    def _reads_memory(self, call: cst.Call, scope: Scope) -> bool:
        """The loader indexes data already in memory with the default collation: workers
        would only add copies between processes."""
        dataset = passed(call, "dataset", self.facts, scope)
        collate = passed(call, "collate_fn", self.facts, scope)
        if dataset.value is None or not collate.known:
            return False
        if collate.value is not None and not (
            isinstance(collate.value, cst.Name) and collate.value.value == "None"
        ):
            return False
        return in_memory(self.facts, dataset.value, scope)

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
            and origin.func.value in self._getitem_random
        ):
            return Equivalence.STATISTICAL
        return Equivalence.EXACT


def _argument(call: cst.Call, keyword: str, position: int) -> cst.BaseExpression | None:
    index = 0
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == keyword:
                return arg.value
        elif not arg.star:
            if index == position:
                return arg.value
            index += 1
    return None


def _own_generator(call: cst.Call, scope: Scope) -> bool:
    """The draw passes `generator=` a generator made for this item (built in the call,
    or a name `__getitem__` binds itself): no global random number is drawn, and a
    worker draws what the main process would. A generator kept on the dataset
    (`generator=self.g`) is not: each worker advances its own copy of it."""
    value = _argument(call, "generator", -1)
    if value is None:
        return False
    if isinstance(value, cst.Call):
        return True
    if not isinstance(value, cst.Name):
        return False
    bindings = scope.lookup(value.value)
    return bool(bindings) and all(
        b.scope is scope.function_scope()
        and b.kind is not BindingKind.IMPORT
        and not isinstance(b.node, cst.Param)
        for b in bindings or ()
    )
