"""ACL105 dataloader-argument-error: DataLoader arguments that cannot go together, so
the constructor raises `ValueError` before the first batch. Page: rules/ACL105.md

What raises is read from `DataLoader.__init__`: `prefetch_factor` (other than None)
or a true `persistent_workers` with `num_workers == 0`; a true `shuffle` with a
`sampler`; a `batch_sampler` with a `batch_size` other than 1, a true `shuffle`, a
`sampler` or a true `drop_last`. Only what the file shows for certain is reported:
a literal (or a name bound once to one), a module constant, or for `num_workers` an
absent argument or an argparse default of 0; a sampler counts when it is built by a
class (a constructor never returns None), not `sampler=train_sampler` where the
name may be None on single-GPU runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from accel_lint.edits import code_for, remove_args
from accel_lint.facts import int_value
from accel_lint.facts.file import CallSite
from accel_lint.facts.loader_args import Passed, passed
from accel_lint.names import BindingKind, Scope, qualified_names
from accel_lint.rule import Equivalence, Fix, FixSafety, Invariant, Rule, Verification
from accel_lint.torch_api import DATALOADER

# A class name: `RandomSampler`, `samplers.RASampler`, not `build_sampler` or `SAMPLER`.
_CLASS_NAME = re.compile(r"^_?[A-Z][A-Za-z0-9_]*[a-z][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class _Problem:
    """One argument that cannot apply, and how to take it out (None: no fix)."""

    why: str
    remove: Passed
    no_fix: str | None = None


class DataloaderArgumentError(Rule):
    code = "ACL105"
    name = "dataloader-argument-error"
    summary = "DataLoader arguments that raise ValueError together (e.g. shuffle with a sampler)"
    fix_safety = FixSafety.SAFE
    verification = Verification(Equivalence.INTENDED_CHANGE, invariant=Invariant.ORIGINAL_RAISES)

    def finish(self) -> None:
        for site in self.facts.calls_resolving_to(DATALOADER):
            problems = self._problems(site)
            if problems:
                self._report(site, problems)

    # -- what raises ------------------------------------------------------------------

    def _problems(self, site: CallSite) -> list[_Problem]:
        call, scope = site.node, site.scope

        def get(name: str) -> Passed:
            return passed(call, name, self.facts, scope)

        problems: list[_Problem] = []
        zero_workers = self._zero_workers(get("num_workers"), scope)
        if zero_workers is not None:
            why, no_fix = zero_workers
            persistent = get("persistent_workers")
            if self._is_true(persistent, scope):
                problems.append(
                    _Problem(
                        f"`persistent_workers=True` needs worker processes, and {why}",
                        persistent,
                        no_fix,
                    )
                )
            prefetch = get("prefetch_factor")
            if self._not_none(prefetch, scope):
                problems.append(
                    _Problem(
                        f"`prefetch_factor` applies only to worker processes, and {why}",
                        prefetch,
                        no_fix,
                    )
                )
        shuffle = get("shuffle")
        shuffles = self._is_true(shuffle, scope)
        sampler = get("sampler")
        has_sampler = self._built(sampler, scope)
        batch_sampler = get("batch_sampler")
        if has_sampler and shuffles:
            problems.append(
                _Problem("`shuffle=True` with a `sampler`: the sampler decides the order", shuffle)
            )
        if self._built(batch_sampler, scope):
            if shuffles and not has_sampler:
                problems.append(
                    _Problem(
                        "`shuffle=True` with a `batch_sampler`: the batch sampler decides the "
                        "order",
                        shuffle,
                    )
                )
            batch_size = get("batch_size")
            size = self._literal(batch_size, scope)
            if size is not None and not (int_value(size) == 1 and isinstance(size, cst.Integer)):
                problems.append(
                    _Problem(
                        f"`batch_size={code_for(size)}` with a `batch_sampler`: the batch "
                        "sampler decides the batches",
                        batch_size,
                    )
                )
            drop_last = get("drop_last")
            if self._is_true(drop_last, scope):
                problems.append(
                    _Problem(
                        "`drop_last=True` with a `batch_sampler`: the batch sampler decides "
                        "the batches",
                        drop_last,
                    )
                )
            if has_sampler:
                problems.append(
                    _Problem(
                        "a `sampler` with a `batch_sampler`",
                        sampler,
                        "which of the two samplers is meant is for you to say: keep the one "
                        "that builds the batches",
                    )
                )
        return problems

    def _zero_workers(self, got: Passed, scope: Scope) -> tuple[str, str | None] | None:
        """Why `num_workers` is statically 0, and the reason not to fix when it is an
        argparse default (a run that passes workers would lose the argument)."""
        if got.absent:
            return "`num_workers` is not set (default 0)", None
        if not got.known or got.conditional or got.value is None:
            return None
        option = self.facts.argparse_option_for(got.value)
        if option is not None:
            default = option.default
            if default is None or not _is_zero(self.facts.literal_value(default, scope)):
                return None
            why = f"`num_workers={code_for(got.value)}`, whose default (`{option.flag}`) is 0"
            no_fix = (
                f"runs that pass `{option.flag}` need the argument: make it depend on the "
                f"worker count (e.g. `persistent_workers={code_for(got.value)} > 0`)"
            )
            return why, no_fix
        literal = self.facts.literal_value(got.value, scope)
        if not _is_zero(literal):
            return None
        if literal is got.value:
            return "`num_workers=0`", None
        return f"`num_workers={code_for(got.value)}`, which is 0", None

    def _literal(self, got: Passed, scope: Scope) -> cst.BaseExpression | None:
        if got.absent or not got.known or got.conditional or got.value is None:
            return None
        value = self.facts.literal_value(got.value, scope)
        if isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)) or (
            isinstance(value, cst.Name) and value.value in ("True", "False", "None")
        ):
            return value
        return None

    def _is_true(self, got: Passed, scope: Scope) -> bool:
        value = self._literal(got, scope)
        return isinstance(value, cst.Name) and value.value == "True"

    def _not_none(self, got: Passed, scope: Scope) -> bool:
        value = self._literal(got, scope)
        return value is not None and not (isinstance(value, cst.Name) and value.value == "None")

    def _built(self, got: Passed, scope: Scope) -> bool:
        """The argument is certainly a sampler: a class called right there, or a name
        bound (every time) to such a call."""
        if got.absent or not got.known or got.conditional or got.value is None:
            return False
        value = got.value
        if isinstance(value, cst.Name):
            bindings = scope.lookup(value.value)
            if not bindings:
                return False
            for binding in bindings:
                if binding.kind is BindingKind.IMPORT or not isinstance(
                    binding.node, (cst.Assign, cst.AnnAssign)
                ):
                    return False
                if binding.value is None or not self._constructed(
                    binding.value, binding.scope or scope
                ):
                    return False
            return True
        return self._constructed(value, scope)

    def _constructed(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        if not isinstance(expr, cst.Call):
            return False
        func = expr.func
        last = func.attr.value if isinstance(func, cst.Attribute) else None
        if isinstance(func, cst.Name):
            bindings = scope.lookup(func.value)
            if bindings and all(isinstance(b.node, cst.ClassDef) for b in bindings):
                return True
            last = func.value
        if last is None or not _CLASS_NAME.match(last):
            return False
        names = qualified_names(func, scope)
        return bool(names)  # bound: imported or defined, not an unknown global

    # -- report -----------------------------------------------------------------------

    def _report(self, site: CallSite, problems: list[_Problem]) -> None:
        call = site.node
        message = "DataLoader raises ValueError: " + "; ".join(p.why for p in problems)
        reasons = [p.no_fix for p in problems if p.no_fix is not None]
        if reasons:
            self.report(call, message, no_fix_reason=reasons[0])
            return
        args: list[cst.Arg] = []
        for problem in problems:
            arg = problem.remove.arg
            if arg is None:  # from a `**kwargs` dict the file builds
                name = _dict_name(call)
                self.report(
                    call,
                    message,
                    no_fix_reason=f"the argument comes from `**{name}`, which other calls may "
                    "share: remove it from the dict where it applies to no loader",
                )
                return
            if arg not in args:
                args.append(arg)
        positional = [a for a in args if a.keyword is None]
        if any(_positional_name(call, a) != "shuffle" for a in positional) and positional:
            self.report(
                call,
                message,
                no_fix_reason="a positional argument cannot be removed without moving the "
                "ones after it: pass it by keyword",
            )
            return
        names = [a.keyword.value if a.keyword is not None else "shuffle" for a in args]
        new = call.with_changes(
            args=[
                a.with_changes(value=cst.Name("False")) if a in positional else a for a in call.args
            ]
        )
        new = remove_args(new, {a.keyword.value for a in args if a.keyword is not None})
        label = ", ".join(f"`{n}`" for n in names)
        self.report(call, message, Fix(f"Remove {label}", {call: new}))


def _positional_name(call: cst.Call, arg: cst.Arg) -> str:
    order = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers")
    index = [a for a in call.args if a.keyword is None and not a.star].index(arg)
    return order[index] if index < len(order) else "?"


def _dict_name(call: cst.Call) -> str:
    for arg in call.args:
        if arg.star == "**":
            return code_for(arg.value)
    return "kwargs"


def _is_zero(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer) and int_value(expr) == 0
