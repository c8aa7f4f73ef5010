"""ACL410 apex-ddp: `apex.parallel.DistributedDataParallel`, replaced by torch's
`DistributedDataParallel` on the rank's device. Page: rules/ACL410.md"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import CallSite, Guard
from accel_lint.facts.ranks import LOCAL_RANK, RankAnalysis
from accel_lint.facts.syntax import descendants
from accel_lint.facts.tree import Tree
from accel_lint.facts.wrappers import Wrappers
from accel_lint.names import Scope, qualified_names, spelling_for
from accel_lint.rule import Equivalence, Fix, FixSafety, Launcher, Rule, Verification
from accel_lint.torch_api import APEX_DDP, CUDA_SET_DEVICE, DDP

_TORCH_DDP = "torch.nn.parallel.DistributedDataParallel"
# apex's tuning knobs, with nothing to carry over: torch's DDP overlaps the
# all-reduce with the backward pass and sizes its buckets itself.
_DROPPED = frozenset(
    {"delay_allreduce", "message_size", "num_allreduce_streams", "retain_allreduce_buffers", "prof"}
)
# Methods only apex's wrapper has.
_APEX_METHODS = (
    "enable_allreduce",
    "disable_allreduce",
    "allreduce_params",
    "allreduce_fallback",
    "sync_bucket_structure",
)
_MESSAGE = (
    "apex's DistributedDataParallel is deprecated, CUDA-only and gone from current apex; torch's "
    "`DistributedDataParallel` does the same averaging and overlaps the all-reduce with "
    "the backward pass"
)


@dataclass(frozen=True)
class _Import:
    """`from apex.parallel import DistributedDataParallel as DDP` and where it stands."""

    alias: cst.ImportAlias
    node: cst.ImportFrom
    line: cst.SimpleStatementLine
    block: Sequence[cst.BaseStatement]  # the statements of the block that holds the line
    try_node: cst.Try | None  # the `try:` whose body is that block
    try_siblings: int  # statements beside that `try:` in its own block


class ApexDdp(Rule):
    code = "ACL410"
    name = "apex-ddp"
    summary = "apex.parallel.DistributedDataParallel: use torch's DistributedDataParallel"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.CLOSE, launcher=Launcher.TORCHRUN)

    def setup(self) -> None:
        self._imports: list[_Import] = []
        self._blocks: list[Sequence[cst.BaseStatement]] = []  # enclosing blocks' statements
        self._tries: list[tuple[cst.Try, int]] = []  # enclosing `try:`s, their block's size
        self._line: cst.SimpleStatementLine | None = None

    # -- walk -----------------------------------------------------------------------

    def visit_Module(self, node: cst.Module) -> None:
        self._blocks.append(node.body)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._blocks.append(node.body)

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._blocks.pop()

    def visit_Try(self, node: cst.Try) -> None:
        self._tries.append((node, len(self._blocks[-1]) if self._blocks else 1))

    def leave_Try(self, node: cst.Try) -> None:
        self._tries.pop()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._line = node

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        if not code_for(node.module).startswith("apex.parallel") or self._line is None:
            return
        for alias in node.names:
            if code_for(alias.name) == "DistributedDataParallel":
                block = self._blocks[-1] if self._blocks else (self._line,)
                try_node, try_siblings = self._tries[-1] if self._tries else (None, 1)
                if try_node is not None and try_node.body.body is not block:
                    try_node = None
                self._imports.append(
                    _Import(alias, node, self._line, block, try_node, try_siblings)
                )

    # -- decide ---------------------------------------------------------------------

    def finish(self) -> None:
        sites = self.facts.calls_resolving_to(APEX_DDP)
        if not sites:
            return
        self._ranks = RankAnalysis.of(self.facts)
        self._wrappers = Wrappers.of(self.facts)
        self._uses = self._imported_uses()
        planned = [(site, self._plan(site)) for site in sites]
        # every use of the wrapper is rewritten, or none: a wrap left on apex keeps its
        # import, and a rewritten one beside it would run two different wrappers
        refused = next(((s, p) for s, p in planned if isinstance(p, str)), None)
        wraps = {site.node.func for site in sites}
        stray = next((use for use in self._uses if use not in wraps), None)
        fixes: list[tuple[CallSite, cst.Call, tuple[str, ...], str]] = []
        for site, plan in planned:
            if isinstance(plan, str):
                self.report(site.node, _MESSAGE, no_fix_reason=plan)
            elif refused is not None:
                reason = (
                    f"another wrap with apex's DistributedDataParallel cannot be rewritten "
                    f"({refused[1]}), and the file's wraps are rewritten all together or not "
                    "at all"
                )
                self.report(site.node, _MESSAGE, no_fix_reason=reason, related=(refused[0].node,))
            elif stray is not None:
                reason = (
                    f"`{stray.value}` is also used other than to wrap a model, and the file's "
                    "uses of apex's wrapper are rewritten all together or not at all"
                )
                self.report(site.node, _MESSAGE, no_fix_reason=reason, related=(stray,))
            else:
                fixes.append((site, *plan))
        if not fixes:
            return
        # one fix for them all: applied alone, a wrap's rewrite could not drop the import
        removals = self._import_removals({site.node.func for site, *_ in fixes})
        replacements: dict[cst.CSTNode, cst.CSTNode | cst.RemovalSentinel] = dict(removals)
        imports: list[str] = []
        for site, new_call, needed, _ in fixes:
            replacements[site.node] = new_call
            imports.extend(i for i in needed if i not in imports)
        devices = sorted({device for *_, device in fixes})
        fix = Fix(
            f"Use torch's DistributedDataParallel on the rank's device ({', '.join(devices)})",
            replacements,
            tuple(imports),
        )
        for site, *_ in fixes:
            self.report(site.node, _MESSAGE, fix)

    def _imported_uses(self) -> list[cst.Name]:
        """Every read, anywhere in the file, of a name that `from apex.parallel import
        DistributedDataParallel` binds (also a read above the import, in a function
        that runs later)."""
        tree = Tree.of(self.facts)
        names = sorted({n for item in self._imports if (n := _bound_name(item.alias))})
        return [
            node
            for name in names
            for node, scope in tree.names(name)
            if qualified_names(node, scope) & APEX_DDP
        ]

    def _plan(self, site: CallSite) -> tuple[cst.Call, tuple[str, ...], str] | str:
        """The torch call replacing `site`, its imports and the device it names, or
        the reason there is none."""
        call = site.node
        module: cst.BaseExpression | None = None
        for position, arg in enumerate(call.args):
            keyword = arg.keyword.value if arg.keyword is not None else None
            if arg.star:
                return "its arguments are passed through `*args` / `**kwargs`"
            if (keyword is None and position == 0) or keyword == "module":
                module = arg.value
            elif keyword not in _DROPPED:
                shown = keyword or f"argument {position + 1}"
                return f"`{shown}` has no counterpart in torch's DistributedDataParallel"
        if module is None:
            return "the module to wrap is not passed"
        if any(self.facts.method_calls(m) for m in _APEX_METHODS):
            return "the script calls methods only apex's wrapper has"
        device = self._rank_device(site)
        if device is None:
            return "the script has no local-rank variable to name the rank's device with"
        expr, certain = device
        ddp, needed = spelling_for(_TORCH_DDP, site.scope)
        imports = [needed] if needed else []
        device_ids = f"[{code_for(expr)}]"
        if not certain and not self._on_cuda(module, site):
            cuda, needed = spelling_for("torch.cuda.is_available", site.scope)
            if needed and needed not in imports:
                imports.append(needed)
            device_ids = f"{device_ids} if {cuda}() else None"
        text = f"{ddp}({code_for(module)}, device_ids={device_ids})"
        new_call = cst.parse_expression(text)
        assert isinstance(new_call, cst.Call)
        return new_call, tuple(imports), f"`device_ids={device_ids}`"

    # -- the rank's device ------------------------------------------------------------

    def _rank_device(self, site: CallSite) -> tuple[cst.BaseExpression, bool] | None:
        """The device the script gives torch's own DDP (`NativeDDP(model,
        device_ids=[args.device])` in the other branch), else what it passes to
        `torch.cuda.set_device(...)` (and whether that call runs unconditionally), else
        its own local-rank variable; each only when readable at `site`."""
        for other in self.facts.calls_resolving_to(DDP):
            for arg in other.node.args:
                value = arg.value
                if (
                    arg.keyword is not None
                    and arg.keyword.value == "device_ids"
                    and isinstance(value, cst.List)
                    and len(value.elements) == 1
                    and _readable_at(value.elements[0].value, other.scope, site.scope)
                ):
                    return value.elements[0].value, True
        for other in self.facts.calls_resolving_to(CUDA_SET_DEVICE):
            args = other.node.args
            if len(args) != 1 or args[0].keyword is not None or args[0].star:
                continue
            expr = args[0].value
            if _readable_at(expr, other.scope, site.scope):
                return expr, not _conditional(other.guards, other.scope)
        for expr in self._local_rank_variables(site.scope):
            return expr, False
        return None

    def _local_rank_variables(self, scope: Scope) -> Iterator[cst.BaseExpression]:
        """`local_rank` / `args.local_rank` readable at `scope` that hold a local rank."""
        for option in self.facts.argparse_options.values():
            if option.dest == "local_rank":
                for name in sorted(self.facts.args_names):
                    if scope.lookup(name):
                        yield cst.Attribute(value=cst.Name(name), attr=cst.Name(option.dest))
                        return
        current: Scope | None = scope
        while current is not None:
            for name in current.bindings:
                expr = cst.Name(name)
                if self._ranks.rank_kind(expr, scope) == LOCAL_RANK:
                    yield expr
                    return
            current = current.parent

    def _on_cuda(self, module: cst.BaseExpression, site: CallSite) -> bool:
        """The wrapped module was moved with `.cuda()`: it is on a GPU."""
        return any(
            isinstance(call.func, cst.Attribute) and call.func.attr.value == "cuda"
            for call, _ in self._wrappers.builders(module, site.scope)
        )

    # -- the apex import --------------------------------------------------------------

    def _import_removals(
        self, fixed: set[cst.BaseExpression]
    ) -> dict[cst.CSTNode, cst.CSTNode | cst.RemovalSentinel]:
        """Drop `from apex.parallel import DistributedDataParallel` once every use of
        it is rewritten: the fixed script no longer needs apex for it."""
        out: dict[cst.CSTNode, cst.CSTNode | cst.RemovalSentinel] = {}
        if any(use not in fixed for use in self._uses):
            return out
        for item in self._imports:
            if _bound_name(item.alias) is None:
                continue
            assert not isinstance(item.node.names, cst.ImportStar)
            kept = [a for a in item.node.names if a is not item.alias]
            if kept:
                last = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                out[item.node] = item.node.with_changes(names=[*kept[:-1], last])
            elif len(item.line.body) > 1:
                out[item.node] = cst.RemovalSentinel.REMOVE
            elif len(item.block) > 1:
                out[item.line] = cst.RemovalSentinel.REMOVE
                out.update(_keep_comments(item.line, item.block, fixed))
            elif item.try_node is not None and _only_reports(item.try_node):
                # `try: from apex... except ImportError: raise ...` guards nothing now
                if item.try_siblings > 1:
                    out[item.try_node] = cst.RemovalSentinel.REMOVE
                else:
                    out[item.try_node] = cst.SimpleStatementLine([cst.Pass()])
        return out


def _bound_name(alias: cst.ImportAlias) -> str | None:
    bound = alias.asname.name if alias.asname is not None else alias.name
    return bound.value if isinstance(bound, cst.Name) else None


def _keep_comments(
    line: cst.SimpleStatementLine,
    block: Sequence[cst.BaseStatement],
    fixed: set[cst.BaseExpression],
) -> dict[cst.CSTNode, cst.CSTNode]:
    """The comment lines above a removed line, moved onto the next statement (unless
    that statement holds another edit of the fix)."""
    if not any(empty.comment is not None for empty in line.leading_lines):
        return {}
    index = list(block).index(line)
    if index + 1 >= len(block):
        return {}
    following = block[index + 1]
    if not isinstance(following, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        return {}
    if any(node in fixed for node in descendants(following)):
        return {}
    leading = [*line.leading_lines, *following.leading_lines]
    return {following: following.with_changes(leading_lines=leading)}


def _only_reports(node: cst.Try) -> bool:
    """Every handler of the `try:` only raises, passes or reports (no assignment that
    the rest of the script could read), and it has no `else:` / `finally:`."""
    if node.orelse is not None or node.finalbody is not None:
        return False
    for handler in node.handlers:
        body = handler.body.body if isinstance(handler.body, cst.IndentedBlock) else ()
        for statement in body:
            if not isinstance(statement, cst.SimpleStatementLine):
                return False
            if not all(isinstance(s, (cst.Raise, cst.Pass, cst.Expr)) for s in statement.body):
                return False
    return True


def _readable_at(expr: cst.BaseExpression, where: Scope, at: Scope) -> bool:
    """`expr` is a variable (`local_rank`, `args.gpu`) that means the same at `at` as
    at `where`."""
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return False
    there = where.lookup(expr.value)
    return bool(there) and at.lookup(expr.value) is there


def _conditional(guards: Sequence[Guard], scope: Scope) -> bool:
    """Under an `if` other than the `__main__` test."""
    return any(
        not (
            isinstance(test, cst.Comparison)
            and isinstance(test.left, cst.Name)
            and test.left.value == "__name__"
        )
        for test, _ in guards
    )
