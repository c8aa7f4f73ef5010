"""ACL403 save-on-every-rank: `torch.save` in a distributed script that every process
runs, so all ranks write the same file. Page: rules/ACL403.md

The walk records (`record`); `finish()` then asks, for each `torch.save`: is it under
a rank guard where it stands, or in a function that only one process runs
(`callers`)? Does it write a file of its own process (`destination`)? If not, it is
reported, and the fix puts the statement, with the statements right after it that
use the saved file, under a rank test (`fix`), written with the script's own rank
variable when it has one (`rank_test`). Every file-wide answer is computed once, so
the rule's cost grows linearly with the file.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import Guard
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.ranks import RankAnalysis
from accel_lint.facts.syntax import last_name
from accel_lint.names import resolves_to
from accel_lint.rule import Equivalence, Fix, FixSafety, Invariant, Rule, Verification
from accel_lint.rules.save_on_every_rank.callers import Callers
from accel_lint.rules.save_on_every_rank.destination import Destinations
from accel_lint.rules.save_on_every_rank.fix import dependents, replacements, wrap_target
from accel_lint.rules.save_on_every_rank.rank_test import RankTest
from accel_lint.rules.save_on_every_rank.record import Def, Entry, Record, Save
from accel_lint.torch_api import TORCH_SAVE

__all__ = ["SaveOnEveryRank"]


class SaveOnEveryRank(Rule):
    code = "ACL403"
    name = "save-on-every-rank"
    summary = "torch.save in a distributed script, not guarded to one process"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.INTENDED_CHANGE, invariant=Invariant.RANK0_SAVE)

    def setup(self) -> None:
        self._record = Record()
        self._order = 0
        self._statements: list[cst.SimpleStatementLine | cst.SimpleStatementSuite] = []
        self._expr_guards: list[Guard] = []
        self._call_funcs: set[int] = set()
        self._stores: set[int] = set()  # assignment targets: not uses of a function
        self._lambda_guards: list[tuple[Guard, ...]] = []

    # -- walk: record ------------------------------------------------------------

    def visit_Module(self, node: cst.Module) -> None:
        self._note_block(node.body)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._note_block(node.body)

    def _note_block(self, body: Sequence[cst.BaseStatement]) -> None:
        block = tuple(body)
        for statement in block:
            self._record.block_of[statement] = block

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        stack = self.facts.functions_stack  # FactsCollector has pushed `node` already
        enclosing = stack[-2] if len(stack) > 1 else None
        scope = self.facts.scope.parent or self.facts.scope
        self._record.defs[node] = Def(self._order, tuple(self.facts.guards), scope, enclosing)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        # a lambda's body has fresh guards: keep the ones where it is made (and so callable)
        self._lambda_guards.append(tuple(self.facts.guards))

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self._lambda_guards.pop()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statements.append(node)

    def leave_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statements.pop()

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._statements.append(node)

    def leave_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._statements.pop()

    def visit_IfExp_body(self, node: cst.IfExp) -> None:
        self._expr_guards.append((node.test, True))

    def leave_IfExp_body(self, node: cst.IfExp) -> None:
        self._expr_guards.pop()

    def visit_IfExp_orelse(self, node: cst.IfExp) -> None:
        self._expr_guards.append((node.test, False))

    def leave_IfExp_orelse(self, node: cst.IfExp) -> None:
        self._expr_guards.pop()

    def visit_BooleanOperation_right(self, node: cst.BooleanOperation) -> None:
        # `rank == 0 and torch.save(...)`
        self._expr_guards.append((node.left, isinstance(node.operator, cst.And)))

    def leave_BooleanOperation_right(self, node: cst.BooleanOperation) -> None:
        self._expr_guards.pop()

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            self._record.with_of[item] = node

    def visit_Assign(self, node: cst.Assign) -> None:
        self._note_binding(node)
        self._stores.update(id(target.target) for target in node.targets)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._note_binding(node)
        self._stores.add(id(node.target))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._stores.add(id(node.target))

    def _note_binding(self, node: cst.CSTNode) -> None:
        self._order += 1
        self._record.assigned[node] = (self._order, self._guards())

    def visit_Call(self, node: cst.Call) -> None:
        self._order += 1
        self._call_funcs.add(id(node.func))
        for arg in node.args:
            self._record.arg_call[id(arg.value)] = (node, self.facts.scope)
        name = last_name(node.func)
        if name == "destroy_process_group":
            self._record.destroys.setdefault(self.facts.function, []).append(
                (node, self.facts.scope, self._order)
            )
        if name != "save":
            return
        statement = self._statements[-1] if self._statements else None
        self._record.saves.append(
            Save(
                node, self.facts.scope, self._guards(), self.facts.function, statement, self._order
            )
        )

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._call_funcs and id(node) not in self._stores:
            self._record.refs.setdefault(node.value, []).append((node, self._entry()))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        # `self.save_checkpoint` handed over as a callback rather than called
        if (
            id(node) not in self._call_funcs
            and id(node) not in self._stores
            and isinstance(node.value, cst.Name)
            and node.value.value in ("self", "cls")
        ):
            self._record.refs.setdefault(node.attr.value, []).append((node, self._entry()))

    def _guards(self) -> tuple[Guard, ...]:
        """Guards of the node being visited inside its function (`facts.guards` starts
        afresh in each def), those of the lambdas it sits in, and short-circuits."""
        outer = tuple(guard for guards in self._lambda_guards for guard in guards)
        return outer + tuple(self.facts.guards) + tuple(self._expr_guards)

    def _entry(self) -> Entry:
        facts = self.facts
        return Entry(self._guards(), facts.scope, facts.function, facts.class_def)

    # -- finish: decide ----------------------------------------------------------

    def finish(self) -> None:
        if not self.facts.is_distributed:
            return
        calls = CallGraph.of(self.facts)
        ranks = RankAnalysis.of(self.facts)
        callers = Callers(self._record, calls, ranks)
        destinations = Destinations(calls, ranks)
        rank_test = RankTest(self.facts, self._record, ranks)
        for save in self._record.saves:
            if not resolves_to(save.call.func, save.scope, TORCH_SAVE):
                continue
            if ranks.guarded(save.guards, save.scope):
                continue
            if save.function is not None and callers.guarded(save.function):
                continue
            if destinations.per_process(save):
                continue
            self._report(save, ranks, rank_test)

    def _report(self, save: Save, ranks: RankAnalysis, rank_test: RankTest) -> None:
        message = (
            "Every process runs this `torch.save`: all ranks write the same file at once, "
            "which races and can leave a corrupt checkpoint"
        )
        target, reason = wrap_target(save, self._record, ranks)
        if target is None:
            self.report(save.call, message, no_fix_reason=reason)
            return
        test, imports = rank_test.zero_test(save)
        if test is None:
            reason = "the process group is already destroyed here, so get_rank() would raise"
            self.report(save.call, message, no_fix_reason=reason)
            return
        following, later = dependents(target, save, self._record)
        if later is not None:
            reason = (
                f"`{code_for(later)}` uses the saved file further down, on every rank; "
                "guard the save and that use together"
            )
            self.report(save.call, message, no_fix_reason=reason)
            return
        also = " with the lines after it that use the file" if following else ""
        fix = Fix(
            f"Save on rank 0 only: wrap it{also} in `if {test}:`",
            replacements(target, following, cst.parse_expression(test)),
            imports,
        )
        self.report(save.call, message, fix)
