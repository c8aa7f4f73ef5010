"""ACL312 grad-scaler-with-bf16: a GradScaler in a file whose every autocast computes
in bfloat16, which has float32's exponent range: there is nothing to scale, and the
scaler still unscales, checks for inf/NaN and synchronizes on every step.
Page: rules/ACL312.md

The file must have at least one enabled autocast, each naming `dtype=torch.bfloat16`
(directly or through a name bound once to it); an autocast without a dtype is
float16 on CUDA and needs the scaler, and a file that mentions float16 anywhere
(`torch.float16`, `.half()`) may train in it. The fix removes the scaler and
rewrites every use of it in the file; where a use is beyond that (the scaler passed
to a function, `get_scale()` in a log, an `if scaler is not None` test), the
finding stays without a fix and says which use.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts.precision import Precision, Scaler, ScalerUse
from accel_lint.facts.tree import Tree
from accel_lint.names import BindingKind, qualified_names
from accel_lint.rule import Equivalence, Fix, FixSafety, Replacement, Rule, Verification
from accel_lint.torch_api import FLOAT16
from accel_lint.walk import all_children

_REMOVED_STATEMENTS = ("update", "unscale_", "load_state_dict")
# expressions that can take an attribute without parentheses
_ATOMIC = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString, cst.Integer)


class GradScalerWithBf16(Rule):
    code = "ACL312"
    name = "grad-scaler-with-bf16"
    summary = "GradScaler in a file whose every autocast is bfloat16: nothing to scale"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(
        Equivalence.CLOSE,
        needs_accelerator=(
            "a scaler costs unscale and inf-check kernels and a host sync per step on the GPU; "
            "scripts enable it on CUDA only"
        ),
    )

    def finish(self) -> None:
        precision = Precision.of(self.facts)
        if not precision.scalers or not self._all_bf16(precision):
            return
        self.tree = Tree.of(self.facts)
        for scaler in precision.scalers:
            if scaler.disabled():
                continue
            message = (
                "GradScaler with bfloat16 autocast: bfloat16 has float32's exponent range, so "
                "its gradients do not underflow; the scaler only adds unscale and inf-check "
                "work and a host sync to every step"
            )
            fix = self._fix(scaler)
            if isinstance(fix, str):
                self.report(scaler.call, message, no_fix_reason=fix)
            else:
                self.report(scaler.call, message, fix)

    def _all_bf16(self, precision: Precision) -> bool:
        active = []
        for autocast in precision.autocasts:
            if autocast.form == "reference" or not autocast.readable:
                return False  # called elsewhere, with arguments we cannot see
            if autocast.enabled is not False:
                active.append(autocast)
        if not active or any(a.dtype != "bfloat16" or not a.dtype_given for a in active):
            return False
        for attr in ("float16", "half"):
            for node, scope in self.facts.attributes_named(attr):
                if qualified_names(node, scope) <= FLOAT16 and qualified_names(node, scope):
                    return False
        return not self.facts.method_calls("half")

    # -- the fix: the scaler removed, each use rewritten ----------------------------------

    def _fix(self, scaler: Scaler) -> Fix | str:
        if scaler.handle is None or not scaler.followed:
            return "the scaler is not kept in one variable or attribute that the rule can follow"
        if scaler.maybe_none:
            return "the scaler is None on some runs; the code that tests for it needs a human"
        if scaler.passed:
            func = scaler.passed[0][1].name.value
            return f"the scaler is passed to `{func}()`; rewrite its uses there first"
        statement = scaler.statement
        if not _single_assignment(statement):
            return "the scaler is built inside a larger statement"
        assert isinstance(statement, cst.SimpleStatementLine)
        handle = code_for(scaler.uses[0].reference) if scaler.uses else "the scaler"
        replacements: dict[cst.CSTNode, Replacement] = {}
        removed: list[cst.BaseStatement] = [statement]
        for use in scaler.uses:
            reason = self._rewrite(use, replacements, removed)
            if reason is not None:
                return reason
        self._remove(removed, replacements)
        self._drop_import(scaler, replacements)
        return Fix(
            f"Remove the GradScaler: `{handle}.scale(loss).backward()` becomes "
            "`loss.backward()`, `step(opt)` becomes `opt.step()`",
            replacements,
        )

    def _rewrite(
        self,
        use: ScalerUse,
        replacements: dict[cst.CSTNode, Replacement],
        removed: list[cst.BaseStatement],
    ) -> str | None:
        name = code_for(use.reference)
        call = use.call
        if use.method is None or call is None:
            return f"`{name}` is used other than through its methods (passed on, stored or tested)"
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if use.method == "scale":
            if len(call.args) != 1 or len(positional) != 1:
                return f"`{name}.scale(...)` does not scale one loss"
            value = positional[0].value
            parent = self.tree.parent(call)
            if isinstance(parent, cst.Attribute) and not isinstance(value, _ATOMIC):
                value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            replacements[call] = value
            return None
        if use.method == "step":
            if not positional or call.args[0] is not positional[0]:
                return f"`{name}.step(...)` does not name its optimizer first"
            optimizer = positional[0].value
            if not isinstance(optimizer, _ATOMIC):
                optimizer = optimizer.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            rest = list(call.args[1:])
            replacements[call] = cst.Call(
                func=cst.Attribute(value=optimizer, attr=cst.Name("step")), args=rest
            )
            return None
        if use.method in _REMOVED_STATEMENTS:
            statement = self._own_statement(call)
            if statement is None:
                return f"the value of `{name}.{use.method}()` is used"
            removed.append(statement)
            return None
        if use.method == "state_dict":
            return self._drop_state(call, name, removed, replacements)
        return f"`{name}.{use.method}()` is used (the scaler's state is read)"

    def _drop_state(
        self,
        call: cst.Call,
        name: str,
        removed: list[cst.BaseStatement],
        replacements: dict[cst.CSTNode, Replacement],
    ) -> str | None:
        """`{"scaler": scaler.state_dict()}` loses its entry; `ckpt["scaler"] =
        scaler.state_dict()` goes."""
        parent = self.tree.parent(call)
        display = self.tree.parent(parent) if isinstance(parent, cst.DictElement) else None
        if isinstance(display, cst.Dict) and display not in replacements:
            kept = [e for e in display.elements if e is not parent]
            if kept and display.elements[-1] is parent:
                kept[-1] = kept[-1].with_changes(comma=parent.comma)
            replacements[display] = display.with_changes(elements=kept)
            return None
        if isinstance(parent, cst.Assign) and all(
            isinstance(t.target, cst.Subscript) for t in parent.targets
        ):
            statement = self.tree.parent(parent)
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
                removed.append(statement)
                return None
        return f"`{name}.state_dict()` is saved where the rule cannot drop it"

    def _own_statement(self, call: cst.Call) -> cst.SimpleStatementLine | None:
        expr = self.tree.parent(call)
        statement = self.tree.parent(expr) if isinstance(expr, cst.Expr) else None
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            return statement
        return None

    def _remove(
        self, removed: Sequence[cst.BaseStatement], replacements: dict[cst.CSTNode, Replacement]
    ) -> None:
        """Remove the statements; a block left empty goes with its `if` when the test
        has no effect, else keeps a `pass`."""
        gone: set[cst.CSTNode] = set(removed)
        changed = True
        while changed:
            changed = False
            for block in {self.tree.parent(s) for s in gone}:
                if not isinstance(block, cst.IndentedBlock):
                    continue
                if not all(s in gone for s in block.body):
                    continue
                owner = self.tree.parent(block)
                if (
                    isinstance(owner, cst.If)
                    and owner.orelse is None
                    and owner not in gone
                    and _pure(owner.test)
                    and isinstance(self.tree.parent(owner), (cst.IndentedBlock, cst.Module))
                ):
                    gone.add(owner)
                    changed = True
        for statement in gone:
            block = self.tree.parent(statement)
            if statement in replacements or any(a in gone for a in self.tree.ancestors(statement)):
                continue
            first = (
                isinstance(block, (cst.IndentedBlock, cst.Module))
                and all(s in gone for s in block.body)
                and statement is block.body[0]
            )
            if first:  # the block would be empty: it keeps a `pass`
                replacements[statement] = cst.SimpleStatementLine(body=[cst.Pass()])
                continue
            replacements[statement] = cst.RemovalSentinel.REMOVE

    def _drop_import(self, scaler: Scaler, replacements: dict[cst.CSTNode, Replacement]) -> None:
        """`from torch.amp import GradScaler` goes when the constructor was its only use."""
        func = scaler.call.func
        if not isinstance(func, cst.Name):
            return
        bindings = scaler.site.scope.lookup(func.value) or []
        if len(bindings) != 1 or bindings[0].kind is not BindingKind.IMPORT:
            return
        statement = bindings[0].node
        if not isinstance(statement, cst.ImportFrom) or isinstance(statement.names, cst.ImportStar):
            return
        if any(node is not func for node, _ in self.tree.references(bindings[0])):
            return
        line = self.tree.parent(statement)
        kept = [a for a in statement.names if _local(a) != func.value]
        if not kept:
            if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
                replacements[line] = cst.RemovalSentinel.REMOVE
            return
        if statement.rpar is None:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        replacements[statement] = statement.with_changes(names=kept)


def _single_assignment(statement: cst.BaseStatement | None) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], (cst.Assign, cst.AnnAssign))
    )


def _pure(expr: cst.BaseExpression) -> bool:
    """No call in it: evaluating the test has no effect to keep."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Call, cst.Await, cst.Yield, cst.NamedExpr)):
            return False
        stack.extend(all_children(node))
    return True


def _local(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return code_for(alias.name)
