"""ACL404 sampler-missing-set-epoch: a shuffling `DistributedSampler` whose loader is
iterated every epoch, with no `set_epoch()` on it: every epoch sees epoch 0's order.
Page: rules/ACL404.md

The walk records where each expression's value goes (`record`); `finish()` follows
each shuffling sampler to the loaders and loops that read it (`flow`), finds the
epoch loops around those reads (`epochs`), and, when no `set_epoch()` call is on the
sampler, reports it with a `set_epoch()` call at the start of each epoch loop (`fix`,
which names the sampler as the loop can read it: `spelling`). `script` holds the
look-ups these steps share.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.facts import FileFacts
from accel_lint.names import Scope, resolves_to
from accel_lint.rule import Equivalence, FixSafety, Invariant, Rule, Verification
from accel_lint.rules.sampler_missing_set_epoch.epochs import epoch_loops, evaluation_only
from accel_lint.rules.sampler_missing_set_epoch.fix import set_epoch_fix
from accel_lint.rules.sampler_missing_set_epoch.flow import SAMPLER, Flow, Iteration, follow
from accel_lint.rules.sampler_missing_set_epoch.record import (
    Assigned,
    Branch,
    Iterated,
    Loop,
    LoopInfo,
    Passed,
    Receiver,
    Record,
    Returned,
    is_self_attribute,
)
from accel_lint.rules.sampler_missing_set_epoch.script import Script
from accel_lint.torch_api import DISTRIBUTED_SAMPLER

__all__ = ["SamplerMissingSetEpoch"]

# DistributedSampler(dataset, num_replicas, rank, shuffle, seed, drop_last)
_SHUFFLE_POSITION = 3


class SamplerMissingSetEpoch(Rule):
    code = "ACL404"
    name = "sampler-missing-set-epoch"
    summary = (
        "DistributedSampler iterated every epoch without set_epoch(): the same order each epoch"
    )
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.INTENDED_CHANGE, invariant=Invariant.EPOCH_RESHUFFLE)

    def setup(self) -> None:
        self._record = Record()

    # -- walk: record where each expression's value goes -------------------------

    def visit_Assign(self, node: cst.Assign) -> None:
        self._record.tick(node)
        self._record.contexts[id(node.value)] = Assigned(
            node, self.facts.scope, self.facts.class_def
        )
        for target in node.targets:
            self._note_attribute_store(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._record.tick(node)
        if node.value is not None:
            self._record.contexts[id(node.value)] = Assigned(
                node, self.facts.scope, self.facts.class_def
            )
            self._note_attribute_store(node.target, node.value)

    def _note_attribute_store(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        cls = self.facts.class_def
        if cls is not None and is_self_attribute(target):
            assert isinstance(target, cst.Attribute)
            self._record.attr_values.setdefault((cls, target.attr.value), []).append(value)

    def visit_Call(self, node: cst.Call) -> None:
        index: int | None = 0
        for arg in node.args:
            if arg.star == "*":
                index = None
            keyword = arg.keyword.value if arg.keyword is not None else None
            position = index if keyword is None and not arg.star else None
            self._record.contexts[id(arg.value)] = Passed(node, position, keyword, self.facts.scope)
            if keyword is None and index is not None and not arg.star:
                index += 1

    def visit_Return(self, node: cst.Return) -> None:
        function = self.facts.function
        if node.value is not None and function is not None:
            self._record.contexts[id(node.value)] = Returned(function)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._record.contexts[id(node.body)] = Branch(node)
        self._record.contexts[id(node.orelse)] = Branch(node)

    def visit_For(self, node: cst.For) -> None:
        self._note_loop(node)
        self._record.contexts[id(node.iter)] = Iterated(node)

    def visit_While(self, node: cst.While) -> None:
        self._note_loop(node)

    def _note_loop(self, node: Loop) -> None:
        # `facts.loops` holds the loops of the current function only, this one last
        enclosing = tuple(self.facts.loops[:-1])
        self._record.loops[node] = LoopInfo(
            node, self.facts.scope, self.facts.function, enclosing, self._record.tick(node)
        )

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "sampler":  # the one attribute that leads somewhere
            self._record.contexts[id(node.value)] = Receiver(node)
        if is_self_attribute(node):
            self._record.self_attrs.setdefault(node.attr.value, []).append(
                (node, self.facts.class_def)
            )

    def visit_Name(self, node: cst.Name) -> None:
        self._record.names.setdefault(node.value, []).append((node, self.facts.scope))

    # -- finish ------------------------------------------------------------------

    def finish(self) -> None:
        script = Script(self.facts, self._record)
        flows = [
            follow(script, site.node)
            for site in self.facts.calls
            if resolves_to(site.node.func, site.scope, DISTRIBUTED_SAMPLER)
            and _shuffles(self.facts, site.node, site.scope)
        ]
        if not flows:
            return
        unset = {id(flow.sampler) for flow in flows}
        for site in self.facts.method_calls("set_epoch"):
            assert isinstance(site.node.func, cst.Attribute)
            receiver = id(site.node.func.value)
            owners = [flow for flow in flows if receiver in flow.values[SAMPLER]]
            if not owners:
                return  # set_epoch on something we cannot follow: it may be this sampler
            unset -= {id(flow.sampler) for flow in owners}
        for flow in flows:
            if id(flow.sampler) in unset:
                self._check(script, flow)

    def _check(self, script: Script, flow: Flow) -> None:
        if flow.maybe_handed_over and not flow.batched_loader:
            return
        epochs: list[Loop] = []
        read: list[Iteration] = []  # the reads that repeat every epoch
        for iteration in flow.iterations:
            found = epoch_loops(script, iteration, flow)
            if found:
                read.append(iteration)
            for epoch in found:
                if epoch not in epochs:
                    epochs.append(epoch)
        if not epochs:
            return
        epochs.sort(key=lambda loop: script.record.loops[loop].order)  # source order
        message = (
            "DistributedSampler shuffles with the same permutation every epoch: `set_epoch()` "
            "is never called on it, so each epoch repeats epoch 0's order"
        )
        if evaluation_only(script, flow, read):
            # the order does not change an evaluation's result; a fixed one may be wanted
            reason = (
                "it only feeds evaluation, whose result does not depend on the order: pass "
                "`shuffle=False`, or call `set_epoch()` each epoch if a new order is wanted"
            )
            self.report(flow.sampler, message, no_fix_reason=reason)
            return
        fix, reason = set_epoch_fix(script, flow, epochs)
        if fix is None:
            self.report(flow.sampler, message, no_fix_reason=reason)
        else:
            self.report(flow.sampler, message, fix)


def _shuffles(facts: FileFacts, call: cst.Call, scope: Scope) -> bool:
    """True when the sampler certainly shuffles (`shuffle` absent or literally True)."""
    position = 0
    for arg in call.args:
        if arg.star:
            if arg.star == "**" and isinstance(arg.value, cst.Name):
                kwargs = facts.kwargs_dict(arg.value, scope)
                if kwargs is not None and kwargs.resolvable:
                    value = kwargs.values.get("shuffle")
                    if value is None:
                        continue
                    return _is_true(facts.literal_value(value, scope))
            return False
        if arg.keyword is None:
            if position == _SHUFFLE_POSITION:
                return _is_true(facts.literal_value(arg.value, scope))
            position += 1
        elif arg.keyword.value == "shuffle":
            return _is_true(facts.literal_value(arg.value, scope))
    return True


def _is_true(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"
