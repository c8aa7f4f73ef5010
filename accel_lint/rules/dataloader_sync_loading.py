"""ACL101 dataloader-sync-loading: a DataLoader that loads batches in the training
process (`num_workers` absent or statically 0). Page: rules/ACL101.md"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import add_keyword, code_for
from accel_lint.facts import int_value
from accel_lint.names import Scope, assigned_value, qualified_names, resolves_to, spelling_for
from accel_lint.rule import Equivalence, Fix, FixSafety, Option, Rule
from accel_lint.rules._dataloader import DATALOADER, passed

# Calls that draw from a global random generator (torch, numpy, random).
_RANDOM_PREFIXES = ("random.", "numpy.random.", "torchvision.transforms.Random")
_TORCH_RANDOM = frozenset(
    f"torch.{n}"
    for n in (
        "rand",
        "randn",
        "randint",
        "randperm",
        "rand_like",
        "randn_like",
        "randint_like",
        "bernoulli",
        "normal",
        "multinomial",
        "poisson",
    )
)


class DataloaderSyncLoading(Rule):
    code = "ACL101"
    name = "dataloader-sync-loading"
    summary = "DataLoader without worker processes (num_workers absent or 0)"
    fix_safety = FixSafety.UNSAFE
    equivalence = Equivalence.EXACT
    triggers = (b"DataLoader",)
    options = {
        "num-workers": Option(
            "auto", (int, str), 'worker count the fix writes: an integer, or "auto"'
        ),
        "max-workers": Option(8, int, 'cap of the "auto" expression on os.cpu_count()'),
    }

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._calls: list[tuple[cst.Call, Scope]] = []
        self._getitem_random: dict[str, bool] = {}
        self._random_transforms = False

    def visit_Call(self, node: cst.Call) -> None:
        self._calls.append((node, self.facts.scope))
        names = qualified_names(node.func, self.facts.scope)
        if names and any(n.startswith(_RANDOM_PREFIXES) or n in _TORCH_RANDOM for n in names):
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
        workers = self._workers_expression()
        spelled, needs = (
            spelling_for("os.cpu_count", scope) if "os.cpu_count" in workers else ("", None)
        )
        if spelled:
            workers = workers.replace("os.cpu_count", spelled)
        imports = (needs,) if needs else ()
        equivalence = self._equivalence(call, scope)
        if got.absent:
            fix = Fix(
                f"Add `num_workers={workers}`",
                {call: add_keyword(call, "num_workers", workers)},
                imports,
                self.fix_safety,
            )
            self.report(
                call,
                "DataLoader loads every batch in the training process: `num_workers` is not set "
                "(default 0)",
                fix,
                equivalence=equivalence,
            )
            return
        assert got.value is not None
        value = got.value
        option = self.facts.argparse_option_for(value)
        if option is not None:
            if option.default is None or option.default_arg is None:
                return
            default = self.facts.literal_value(option.default, scope)
            if int_value(default) != 0:
                return
            flag = option.flag
            new_arg = option.default_arg.with_changes(value=cst.parse_expression(workers))
            fix = Fix(
                f"Change the default of `{flag}` to `{workers}`",
                {option.default_arg: new_arg},
                imports,
                self.fix_safety,
            )
            self.report(
                call,
                f"DataLoader loads every batch in the training process: `num_workers` is "
                f"`{code_for(value)}`, and the default of `{flag}` is 0",
                fix,
                equivalence=equivalence,
                related=(option.default,),
            )
            return
        literal = self.facts.literal_value(value, scope)
        if int_value(literal) != 0:
            return
        if literal is value:
            target: cst.CSTNode = value
            where = "`num_workers=0`"
        else:
            target = literal  # the constant's assigned value: the knob the user set
            where = f"`num_workers={code_for(value)}`, which is 0"
        fix = Fix(
            f"Set `num_workers={workers}`",
            {target: cst.parse_expression(workers)},
            imports,
            self.fix_safety,
        )
        self.report(
            call,
            f"DataLoader loads every batch in the training process: {where}",
            fix,
            equivalence=equivalence,
        )

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
        if isinstance(dataset, cst.Name):
            origin = assigned_value(dataset, scope)
            if (
                isinstance(origin, cst.Call)
                and isinstance(origin.func, cst.Name)
                and self._getitem_random.get(origin.func.value)
            ):
                return Equivalence.STATISTICAL
        return Equivalence.EXACT
