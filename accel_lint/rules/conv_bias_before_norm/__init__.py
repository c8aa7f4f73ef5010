"""ACL201 conv-bias-before-norm: a convolution with a bias whose output goes straight
into a batch or instance norm, whose mean subtraction cancels that bias.
Page: rules/ACL201.md

The walk only collects (`collected.Collected`); `finish` then answers, one module
each: which calls build a conv or a norm (`classes`, `Collected.find_constructors`),
where a conv's output feeds a norm (`flow`, with `sequential` and `layer_lists` for
`nn.Sequential` neighbours), whether that is the conv's only use (`uses`), which
`.bias` reads would break once the bias is None (`bias_reads`), and how to turn the
bias off (`fix`). `syntax` holds the small node readers they share.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.rule import Equivalence, FixSafety, Rule, Verification
from accel_lint.rules.conv_bias_before_norm.bias_reads import bias_read_blockers
from accel_lint.rules.conv_bias_before_norm.branches import (
    Branch,
    branch_bias,
    listed_branch_bias,
)
from accel_lint.rules.conv_bias_before_norm.collected import Collected, Ctor, Edge
from accel_lint.rules.conv_bias_before_norm.fix import bias_fix
from accel_lint.rules.conv_bias_before_norm.flow import feeding_edges
from accel_lint.rules.conv_bias_before_norm.syntax import is_none, is_self
from accel_lint.rules.conv_bias_before_norm.uses import only_feeds_norms, other_uses

__all__ = ["ConvBiasBeforeNorm"]


class ConvBiasBeforeNorm(Rule):
    code = "ACL201"
    name = "conv-bias-before-norm"
    summary = "Convolution with a bias directly followed by a batch or instance norm"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.CLOSE)
    # a conv class is always spelled out, even behind an alias or a star import

    def setup(self) -> None:
        self._seen = Collected()

    # -- the walk: collect, resolve nothing yet ------------------------------------

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            self._seen.norm_spelled = True
            return
        for alias in node.names:
            if not isinstance(alias.name, cst.Name):
                continue
            name = alias.name.value
            if "Norm" in name:
                self._seen.norm_spelled = True
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self._seen.alias_of.append((alias.asname.name.value, name))

    def visit_Module(self, node: cst.Module) -> None:
        self._seen.blocks.append((node.body, self.facts.scope, None))

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._seen.blocks.append((node.body, self.facts.scope, self.facts.class_def))

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._seen.blocks.append((node.body, self.facts.scope, self.facts.class_def))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        outer = self.facts.scope.parent  # bases are evaluated outside the class body
        assert outer is not None
        self._seen.classes.append((node, outer))

    def visit_Call(self, node: cst.Call) -> None:
        cls = self.facts.class_def
        self._seen.calls.append((node, self.facts.scope, cls))
        if cls is None:
            return
        # `self.add_module("conv", ...)` / `setattr(self, "conv", ...)` rebind an attribute
        func = node.func
        name_arg: cst.BaseExpression | None = None
        if isinstance(func, cst.Attribute):
            if func.attr.value in ("add_module", "register_module") and is_self(func.value):
                name_arg = node.args[0].value if node.args else None
        elif (
            isinstance(func, cst.Name)
            and func.value == "setattr"
            and len(node.args) > 1
            and is_self(node.args[0].value)
        ):
            name_arg = node.args[1].value
        if isinstance(name_arg, cst.SimpleString):
            attr = name_arg.evaluated_value
            if isinstance(attr, str):
                self._seen.self_stores.setdefault(cls, {}).setdefault(attr, []).append(None)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        attr = node.attr.value
        value = node.value
        self._seen.receiver_attr[value] = attr
        if is_self(value):
            if self.facts.classes_stack:
                by_attr = self._seen.self_attrs.setdefault(self.facts.classes_stack[-1], {})
                by_attr.setdefault(attr, []).append(node)
        else:
            self._seen.attr_refs.setdefault(attr, []).append(node)
        if attr == "bias":
            self._seen.bias_reads.append(
                (node, self.facts.scope, tuple(self.facts.guards), self.facts.class_def)
            )
        elif not self._seen.norm_spelled and "Norm" in attr:
            self._seen.norm_spelled = True

    def visit_Name(self, node: cst.Name) -> None:
        self._seen.name_refs.setdefault(node.value, []).append((node, self.facts.scope))

    def visit_Assign(self, node: cst.Assign) -> None:
        single = len(node.targets) == 1
        value = node.value
        if single and isinstance(value, (cst.Name, cst.Attribute)):
            alias = node.targets[0].target
            if isinstance(alias, cst.Name):  # `Conv = nn.Conv2d`: a spelling to look for
                last = value.value if isinstance(value, cst.Name) else value.attr.value
                self._seen.alias_of.append((alias.value, last))
        if self.facts.classes_stack:
            for target in node.targets:
                self._store(target.target, value if single else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self.facts.classes_stack:
            self._store(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self.facts.classes_stack:
            self._store(node.target, None)

    def _store(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        cls = self.facts.class_def
        if cls is None:
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._store(element.value, None)
        elif isinstance(target, cst.StarredElement):
            self._store(target.value, None)
        elif isinstance(target, cst.Attribute) and is_self(target.value):
            stores = self._seen.self_stores.setdefault(cls, {})
            stores.setdefault(target.attr.value, []).append(value)
            self._seen.store_nodes.add(target)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        # `m.bias is None` / `m.bias is not None` reads the bias safely
        left = node.left
        if (
            isinstance(left, cst.Attribute)
            and left.attr.value == "bias"
            and any(is_none(c.comparator) for c in node.comparisons)
        ):
            self._seen.none_compared.add(left)

    # -- after the walk ---------------------------------------------------------

    def finish(self) -> None:
        seen = self._seen
        if not seen.norm_spelled:
            return
        seen.find_constructors()
        kinds = {c.conv for c in seen.ctors.values()}
        if kinds != {True, False}:
            return  # needs a conv and a norm
        edges = feeding_edges(seen, self.facts)
        if not edges:
            return
        blockers, blocks_all = bias_read_blockers(seen, self.facts)
        for ctor_call, found in edges.items():
            blocker = blockers.get(ctor_call) or blocks_all
            conv = seen.ctors[ctor_call]
            if _always(found):
                if only_feeds_norms(seen, found):
                    self._check(conv, found[0], blocker)
                    continue
                branch = branch_bias(seen, found, other_uses(seen, found))
            elif only_feeds_norms(seen, found):
                branch = listed_branch_bias(self.facts, found, conv.scope)
            else:
                branch = None
            if branch is not None:
                self._check(conv, found[0], blocker, branch)

    def _check(
        self,
        conv: Ctor,
        edge: Edge,
        blocker: cst.Attribute | None,
        branch: Branch | None = None,
    ) -> None:
        """Report the conv; with `branch` the norm only follows it on one branch of an
        `if`."""
        fix = bias_fix(conv, self.facts, branch.bias or "False" if branch else "False")
        if fix is None:
            return
        when = f" when {branch.when}" if branch else ""
        message = (
            f"`{conv.cls}` has a bias, but its output goes straight into `{edge.norm.cls}`{when}, "
            "whose mean subtraction cancels it: the bias is wasted computation and memory"
        )
        if branch is not None and branch.bias is None:
            self.report(conv.call, message, no_fix_reason=branch.reason)
            return
        if blocker is not None:
            self.report(
                conv.call,
                message,
                no_fix_reason=f"`{code_for(blocker)}` is read without a None check, "
                "and would be None after `bias=False`",
            )
            return
        self.report(conv.call, message, fix)


def _always(edges: list[Edge]) -> bool:
    """The conv feeds a norm wherever it is: each edge is unconditional, or the norm
    follows it on both branches of its `if`."""
    taken: dict[cst.If | cst.IfExp, set[bool]] = {}
    for edge in edges:
        if edge.when is not None:
            taken.setdefault(edge.when[0], set()).add(edge.when[1])
    return all(len(sides) == 2 for sides in taken.values())
