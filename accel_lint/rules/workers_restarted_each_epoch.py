"""ACL104 workers-restarted-each-epoch: a DataLoader with worker processes, iterated
every epoch, without `persistent_workers=True`. Page: rules/ACL104.md"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import add_keyword, code_for
from accel_lint.facts import CallSite, int_value
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.loader_args import passed
from accel_lint.facts.loader_flow import LoaderFlow, Read
from accel_lint.facts.loops import Loop, Loops
from accel_lint.facts.syntax import last_name
from accel_lint.names import Scope, qualified_names
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import RANDOM_FUNCTIONS

# `persistent_workers` exists since torch 1.7.
_PERSISTENT_SINCE = (1, 7)
# how many calls deep `_inside` looks for the loop that encloses a second read
_MAX_DEPTH = 3
_RANDOM_PREFIXES = ("random.", "numpy.random.", "torchvision.transforms.Random")


class WorkersRestartedEachEpoch(Rule):
    code = "ACL104"
    name = "workers-restarted-each-epoch"
    summary = "DataLoader with workers iterated every epoch without persistent_workers=True"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.EXACT)

    def setup(self) -> None:
        self._random_items = False
        self._through_calls: dict[tuple[cst.FunctionDef, cst.Call], list[Loop]] = {}

    def visit_Call(self, node: cst.Call) -> None:
        # global random numbers drawn while loading an item: the workers' generators
        # then matter, and persistent workers carry theirs on from epoch to epoch
        names = qualified_names(node.func, self.facts.scope)
        if not names or not any(
            n.startswith(_RANDOM_PREFIXES) or n in RANDOM_FUNCTIONS for n in names
        ):
            return
        fn = self.facts.function
        if any(n.startswith("torchvision.transforms.Random") for n in names) or (
            fn is not None and fn.name.value == "__getitem__"
        ):
            self._random_items = True

    def finish(self) -> None:
        flow = LoaderFlow.of(self.facts)
        for site in flow.loaders:
            workers = self._workers(site)
            if workers is None:
                continue
            got = passed(site.node, "persistent_workers", self.facts, site.scope)
            if not got.known or got.conditional:
                continue
            if not got.absent:
                assert got.value is not None
                if not _is_name(self.facts.literal_value(got.value, site.scope), "False"):
                    continue
            read = self._read_every_epoch(flow, site)
            if read is not None:
                self._report(site, *workers, got.value, read)

    def _workers(self, site: CallSite) -> tuple[str, cst.BaseExpression | None] | None:
        """How the call's `num_workers` is statically > 0, as the message says it, and
        the count when a command-line option sets it (0 is possible there)."""
        got = passed(site.node, "num_workers", self.facts, site.scope)
        if got.absent or not got.known or got.conditional or got.value is None:
            return None
        value = got.value
        option = self.facts.argparse_option_for(value)
        if option is not None:
            default = option.default
            if default is None:
                return None
            count = int_value(self.facts.literal_value(default, site.scope))
            if count is None or count <= 0:
                return None
            return f"`num_workers={code_for(value)}` (default {count})", value
        count = int_value(self.facts.literal_value(value, site.scope))
        if count is None or count <= 0 or _is_name(value, "True"):
            return None
        return f"`num_workers={code_for(value)}`", None

    def _read_every_epoch(self, flow: LoaderFlow, site: CallSite) -> Read | None:
        """A read of the loader inside an epoch loop that does not also rebuild it."""
        for read in flow.reads_of(site.node):
            for epoch in self._epoch_loops(flow, site.node, read.function, read.bodies):
                if not self._runs_inside(site, epoch):
                    return read
        return None

    def _epoch_loops(
        self,
        flow: LoaderFlow,
        loader: cst.Call,
        function: cst.FunctionDef | None,
        bodies: tuple[Loop, ...],
    ) -> list[Loop]:
        """The innermost epoch loop around a place, looking through the file's calls of
        the function it is in: those that hand it this loader, or all of them when none
        does (the loader then comes through `self` or a global)."""
        loops = Loops.of(self.facts)
        for loop in reversed(bodies):
            if loops.is_epoch_loop(loop):
                return [loop]
        if function is None:
            return []
        return self._callers_epoch_loops(flow, loader, function)

    def _callers_epoch_loops(
        self, flow: LoaderFlow, loader: cst.Call, function: cst.FunctionDef
    ) -> list[Loop]:
        """`_epoch_loops` through the calls of `function`, once per function and loader
        for the file (a recursive call adds nothing)."""
        key = (function, loader)
        found = self._through_calls.get(key)
        if found is not None:
            return found
        self._through_calls[key] = []
        callers = [site for site, _ in CallGraph.of(self.facts).invocations(function)]
        passing = [
            caller
            for caller in callers
            if any(
                loader in flow.origins(arg.value, caller.scope).loaders for arg in caller.node.args
            )
        ]
        out: list[Loop] = []
        for caller in passing or callers:
            for loop in self._epoch_loops(flow, loader, caller.function, caller.bodies):
                if loop not in out:
                    out.append(loop)
        self._through_calls[key] = out
        return out

    def _runs_inside(self, site: CallSite, loop: Loop) -> bool:
        """Does `site` run on each iteration of `loop` (a loader rebuilt every epoch)?"""
        if loop in site.bodies:
            return True
        if site.function is None or site.bodies:
            return False
        return loop in CallGraph.of(self.facts).loops_around(site.function)

    def _report(
        self,
        site: CallSite,
        workers: str,
        option: cst.BaseExpression | None,
        persistent: cst.BaseExpression | None,
        read: Read,
    ) -> None:
        call = site.node
        message = (
            f"DataLoader with {workers} starts its worker processes again every epoch: it is "
            "read in an epoch loop without `persistent_workers=True`"
        )
        equivalence = self._equivalence(site)
        related = (read.place,)
        target = self.ctx.target_torch
        if target is not None and target < _PERSISTENT_SINCE:
            self.report(
                call,
                message,
                no_fix_reason="`persistent_workers` needs torch 1.7 or later",
                equivalence=equivalence,
                related=related,
            )
            return
        twice = self._iterated_twice_at_once(site)
        if twice is not None:
            self.report(
                call, message, no_fix_reason=twice, equivalence=equivalence, related=related
            )
            return
        changed = self._dataset_changed(site)
        if changed is not None:
            reason = (
                f"the script works on the dataset as training goes (`{changed}`): if that "
                "changes it, persistent workers would keep reading their own old copy"
            )
            self.report(
                call, message, no_fix_reason=reason, equivalence=equivalence, related=related
            )
            return
        # a count the command line sets may be 0 there, and DataLoader rejects
        # persistent workers without workers: the value follows the count
        spelled = f"{code_for(option)} > 0" if option is not None else "True"
        if persistent is None:
            fix = Fix(
                f"Add `persistent_workers={spelled}`",
                {call: add_keyword(call, "persistent_workers", spelled)},
            )
        else:
            literal = self.facts.literal_value(persistent, site.scope)
            if literal is not persistent:  # a constant bound elsewhere: not in the call's scope
                spelled = "True"
            fix = Fix(
                f"Set `persistent_workers={spelled}`", {literal: cst.parse_expression(spelled)}
            )
        self.report(call, message, fix, equivalence=equivalence, related=related)

    def _iterated_twice_at_once(self, site: CallSite) -> str | None:
        """Why the loader must not be persistent when two iterations of it run at once
        (the same loader twice in one `zip(...)`, or a read of it inside a loop over it,
        also through a function of the file that loop calls): a persistent loader hands
        out one iterator, which the two would share."""
        flow = LoaderFlow.of(self.facts)
        loader = site.node
        reads = flow.reads_of(loader)
        for read in reads:
            if isinstance(read.place, cst.For):
                zipped = _zipped_twice(flow, read.place.iter, read.scope, loader)
                if zipped is not None:
                    return (
                        f"the loop reads this loader twice at once (`{code_for(zipped)}`): a "
                        "persistent loader hands out a single iterator, so the two would "
                        "share it and each epoch would run half the steps"
                    )
        loops = {read.place for read in reads if isinstance(read.place, cst.For)}
        for read in reads:
            if self._inside(read.function, read.bodies, loops - {read.place}, 0):
                return (
                    "this loader is read inside a loop over itself: a persistent loader "
                    "hands out a single iterator, so the inner read would use up the outer "
                    "loop's batches"
                )
        return None

    def _inside(
        self,
        function: cst.FunctionDef | None,
        bodies: tuple[Loop, ...],
        loops: set[cst.For],
        depth: int,
    ) -> bool:
        """A place inside one of `loops`, directly or through the file's calls of its
        function."""
        if any(isinstance(loop, cst.For) and loop in loops for loop in bodies):
            return True
        if function is None or depth >= _MAX_DEPTH:
            return False
        return any(
            self._inside(caller.function, caller.bodies, loops, depth + 1)
            for caller, _ in CallGraph.of(self.facts).invocations(function)
        )

    def _equivalence(self, site: CallSite) -> Equivalence:
        """Exact only when nothing random depends on when the workers start: a worker's
        seed is drawn from the loader's generator each time workers start, so without
        `generator=` the global stream (shuffling, dropout) shifts from epoch 2 on, and
        with it a shuffling sampler's own draws; items drawing random numbers carry the
        workers' generators on."""
        if self._random_items:
            return Equivalence.STATISTICAL
        call, scope = site.node, site.scope
        generator = passed(call, "generator", self.facts, scope)
        if generator.absent or not generator.known or _is_name(generator.value, "None"):
            return Equivalence.STATISTICAL
        for name in ("sampler", "batch_sampler"):
            if not passed(call, name, self.facts, scope).absent:
                return Equivalence.STATISTICAL
        shuffle = passed(call, "shuffle", self.facts, scope)
        if not shuffle.absent:
            value = shuffle.value
            if value is None or not _is_name(self.facts.literal_value(value, scope), "False"):
                return Equivalence.STATISTICAL
        return Equivalence.EXACT

    def _dataset_changed(self, site: CallSite) -> str | None:
        """A method called on the loader's dataset as training goes: on `<loader>.dataset`
        anywhere (`train_loader.dataset.create_epoch_tuples(model)`), on the dataset's
        name inside a loop or in another function (`train_set.set_epoch(epoch)`); or an
        attribute of the dataset assigned in a function. Any of these may change what
        the items are, which persistent workers, holding their own copy, would not see."""
        call, scope = site.node, site.scope
        dataset = passed(call, "dataset", self.facts, scope).value
        names = {dataset.value} if isinstance(dataset, cst.Name) else set()
        flow = LoaderFlow.of(self.facts)
        for other in self.facts.calls:
            func = other.node.func
            if not isinstance(func, cst.Attribute):
                continue
            receiver = func.value
            if isinstance(receiver, cst.Name) and receiver.value in names:
                if other.bodies or other.function is not site.function:
                    return code_for(func)
            elif (
                isinstance(receiver, cst.Attribute)
                and receiver.attr.value == "dataset"
                and call in flow.origins(receiver.value, other.scope).loaders
            ):
                return code_for(func)
        for assignments in self.facts.attribute_assignments.values():
            for assignment in assignments:
                if assignment.receiver in names and assignment.scope.kind == "function":
                    return f"{assignment.receiver}.{assignment.attr} = ..."
        return None


def _zipped_twice(
    flow: LoaderFlow, iterable: cst.BaseExpression, scope: Scope, loader: cst.Call
) -> cst.Call | None:
    """A `zip(...)` in a loop's iterable (also under `enumerate`, `tqdm`) with two
    arguments that may both hold `loader`."""
    stack: list[cst.BaseExpression] = [iterable]
    while stack:
        expr = stack.pop()
        if not isinstance(expr, cst.Call):
            continue
        args = [a.value for a in expr.args if a.keyword is None and not a.star]
        if last_name(expr.func) == "zip":
            holding = [a for a in args if loader in flow.origins(a, scope).loaders]
            if len(holding) > 1:
                return expr
        stack.extend(args)
    return None


def _is_name(expr: cst.BaseExpression | None, name: str) -> bool:
    return isinstance(expr, cst.Name) and expr.value == name
