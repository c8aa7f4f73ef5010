"""ACL409 accumulation-without-no-sync: gradient accumulation under DistributedDataParallel
without `no_sync()` on the micro-batches that do not step. Page: rules/ACL409.md

DDP all-reduces the gradients at the end of every backward pass whose forward ran
outside `no_sync()`. When the optimizer steps once every k backward passes, k - 1
of those all-reduces are wasted: the gradients keep accumulating locally and the
next synchronized backward all-reduces the sum. The fix wraps the micro-batch,
forward and backward together (DDP decides in the forward whether the backward
will synchronize), in `with nullcontext() if <this micro-batch steps> else
model.no_sync():`, and only where that test can be evaluated before the forward
with the value it has at the step.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import CallSite, FileFacts
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.loops import Accumulation, Loop, Loops, is_optimizer_step
from accel_lint.facts.syntax import children, descendants, sub_expressions
from accel_lint.facts.tree import Tree
from accel_lint.facts.wrappers import Wrap, Wrappers
from accel_lint.layout import fits, width_for
from accel_lint.names import resolves_to, spelling_for
from accel_lint.rule import Equivalence, Fix, FixSafety, Launcher, Rule, Verification
from accel_lint.torch_api import DDP

_MAX_DEPTH = 3
# Calls a step test may make and still be evaluated early with the same value.
_PURE_CALLS = frozenset({"builtins.len", "builtins.int", "builtins.min", "builtins.max"})
_BACKWARD = ("backward", "manual_backward")


@dataclass(frozen=True)
class _Forward:
    """The call of the DDP-wrapped model in the micro-batch."""

    site: CallSite
    model: cst.BaseExpression  # `model`, `self.model`
    state: Wrap
    direct: bool  # in the accumulation loop's own body (not in a function it calls)


class AccumulationWithoutNoSync(Rule):
    code = "ACL409"
    name = "accumulation-without-no-sync"
    summary = "Gradient accumulation under DistributedDataParallel without no_sync()"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.CLOSE, launcher=Launcher.TORCHRUN)

    def finish(self) -> None:
        if not self.facts.calls_resolving_to(DDP):
            return
        if self.facts.attributes_named("no_sync") or self.facts.attributes_named(
            "require_backward_grad_sync"
        ):
            return  # the script already chooses when to synchronize
        self._loops = Loops.of(self.facts)
        self._calls = CallGraph.of(self.facts)
        self._wrappers = Wrappers.of(self.facts)
        for accumulation in self._loops.accumulations():
            forward = self._forward(accumulation)
            if forward is None:
                continue
            backward = self._backward_call(accumulation.backward, 0)
            if backward is None:
                continue
            self._report(accumulation, forward, backward)

    # -- what runs ----------------------------------------------------------------------

    def _forward(self, accumulation: Accumulation) -> _Forward | None:
        """The first call of a DDP-wrapped module in the micro-batch loop's body, or in
        a function of the file that the body calls."""
        loop = accumulation.loop
        found: _Forward | None = None
        for site in self._loops.body_calls(loop):
            candidate = self._wrapped_call(site, loop, direct=True)
            if candidate is None:
                for inner in self._loops.callee_sites(site):
                    candidate = self._wrapped_call(inner, inner.node, direct=False)
                    if candidate is not None:
                        break
            if candidate is not None and (found is None or candidate.state > found.state):
                found = candidate
                if candidate.state is Wrap.YES:
                    break
        return found

    def _wrapped_call(self, site: CallSite, at: cst.CSTNode, *, direct: bool) -> _Forward | None:
        func = site.node.func
        if isinstance(func, cst.Attribute) and not (
            isinstance(func.value, cst.Name) and func.value.value == "self"
        ):
            return None  # `model.train()`, `loss.backward()`: methods, not the forward
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return None
        state = self._wrappers.wrap_state(func, site.scope, DDP, at)
        if state is Wrap.NO:
            return None
        return _Forward(site, func, state, direct)

    def _backward_call(self, site: CallSite, depth: int) -> cst.Call | None:
        """The `.backward()` call that `site` is or runs."""
        func = site.node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _BACKWARD:
            return site.node
        if depth >= _MAX_DEPTH:
            return None
        for inner in self._loops.callee_sites(site):
            found = self._backward_call(inner, depth + 1)
            if found is not None:
                return found
        return None

    # -- report and fix ---------------------------------------------------------------

    def _report(self, accumulation: Accumulation, forward: _Forward, backward: cst.Call) -> None:
        every = code_for(accumulation.every)
        model = code_for(forward.model)
        message = (
            f"Gradient accumulation under DistributedDataParallel: the optimizer steps once "
            f"every `{every}` backward passes, but every backward pass all-reduces the "
            f"gradients; `{model}.no_sync()` on the micro-batches that do not step skips "
            f"those all-reduces"
        )
        planned = self._plan(accumulation, forward)
        if isinstance(planned, str):
            self.report(backward, message, no_fix_reason=planned)
        else:
            self.report(backward, message, planned)

    def _plan(self, accumulation: Accumulation, forward: _Forward) -> Fix | str:
        if forward.state is not Wrap.YES:
            model = code_for(forward.model)
            return f"`{model}` is not wrapped in DistributedDataParallel on every run"
        if not forward.direct:
            return "the model's forward runs in a function the loop calls; wrap it there"
        loop = accumulation.loop
        body = _statements(loop)
        if body is None:
            return "the loop's body is on one line"
        first = _index_of(body, forward.site.node)
        ends = [_index_of(body, s.node) for s in self._loops.backward_sites(loop)]
        last = None if None in ends or not ends else max(i for i in ends if i is not None)
        if first is None or last is None or first > last:
            return "the forward and backward passes are not in the loop's own statements"
        region = body[first : last + 1]
        if accumulation.kind == "modulo":
            test = self._modulo_test(accumulation, body, last)
        else:
            test = self._last_micro_batch(accumulation, loop)
        if isinstance(test, str):
            return test
        if accumulation.kind == "modulo":
            step_at = _index_of(body, accumulation.step.node) or len(body)
            changed = _assigned(body[first:step_at])
        else:
            changed = _assigned(body)
        model_roots = set(_roots(forward.model))
        if model_roots & changed:
            return f"`{code_for(forward.model)}` is reassigned inside the loop"
        if set(_roots(test)) & changed:
            return "the step test reads variables the micro-batch changes before the step"
        if accumulation.kind == "modulo" and not self._steps_only_in(accumulation, body[step_at]):
            return "the optimizer also steps outside the accumulation test"
        return self._fix(region, test, forward)

    def _modulo_test(
        self, accumulation: Accumulation, body: Sequence[cst.BaseStatement], last: int
    ) -> cst.BaseExpression | str:
        """The `if (i + 1) % k == 0:` around the step, when it follows the backward in
        the same body and can be read before the forward."""
        at = _index_of(body, accumulation.step.node)
        statement = body[at] if at is not None else None
        if not isinstance(statement, cst.If) or at is None or at <= last:
            return "the optimizer step is not under an `if` after the backward pass"
        test = statement.test
        for sub in sub_expressions(test):
            if isinstance(sub, (cst.NamedExpr, cst.Await, cst.Yield, cst.Lambda)):
                return "the step test has side effects"
            if isinstance(sub, cst.Call) and not resolves_to(
                sub.func, accumulation.step.scope, _PURE_CALLS
            ):
                return "the step test calls a function, which may not give the same answer earlier"
        return test

    def _last_micro_batch(self, accumulation: Accumulation, loop: Loop) -> cst.BaseExpression | str:
        """`micro == k - 1` for `for micro in range(k):`, when every iteration runs to
        its end (a `break` or `continue` could skip the synchronizing one)."""
        if not isinstance(loop, cst.For) or not isinstance(loop.target, cst.Name):
            return "the micro-batch loop has no counter"
        iterable = loop.iter
        if (
            not isinstance(iterable, cst.Call)
            or len(iterable.args) != 1
            or iterable.args[0].keyword is not None
            or iterable.args[0].star
            or not resolves_to(iterable.func, self._loops.site(loop).scope, {"builtins.range"})
        ):
            return "the micro-batch loop is not `for ... in range(k)`"
        count = iterable.args[0].value
        if any(isinstance(sub, cst.Call) for sub in sub_expressions(count)):
            return "the number of micro-batches is computed by a call"
        if _exits_early(loop):
            return "the micro-batch loop may leave an iteration early (`break`, `continue`)"
        text = code_for(count)
        if not isinstance(count, (cst.Name, cst.Attribute, cst.Integer, cst.Subscript)):
            text = f"({text})"
        return cst.parse_expression(f"{loop.target.value} == {text} - 1")

    def _steps_only_in(self, accumulation: Accumulation, statement: cst.BaseStatement) -> bool:
        """Every optimizer step of the loop's function is inside the step test's block:
        no step after the loop for a leftover of unsynchronized micro-batches."""
        function = self._loops.site(accumulation.loop).function
        inside = set(descendants(statement))
        return all(
            site.node in inside
            for site in self._calls.by_function.get(function, ())
            if is_optimizer_step(site)
        )

    def _fix(
        self,
        region: Sequence[cst.BaseStatement],
        steps: cst.BaseExpression,
        forward: _Forward,
    ) -> Fix:
        scope = forward.site.scope
        nullcontext, needed = spelling_for("contextlib.nullcontext", scope)
        model = code_for(forward.model)
        test = code_for(steps)
        header = f"{nullcontext}() if {test} else {model}.no_sync()"
        module = self.ctx.module
        depth = _depth_of(self.facts, region[0])
        if fits(f"with {header}:", depth, module, width_for(self.facts.text)):
            text = f"with {header}:\n    pass\n"
        else:  # black's layout of a long context expression
            lines = [f"{nullcontext}()", f"if {test}", f"else {model}.no_sync()"]
            text = "with (\n" + "".join(f"    {line}\n" for line in lines) + "):\n    pass\n"
        item = cst.parse_statement(text, config=module.config_for_parsing)
        assert isinstance(item, cst.With)
        first = region[0]
        assert isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        moved = [first.with_changes(leading_lines=()), *region[1:]]
        block = item.with_changes(
            body=cst.IndentedBlock(body=moved), leading_lines=first.leading_lines
        )
        replacements: dict[cst.CSTNode, cst.CSTNode | cst.RemovalSentinel] = {first: block}
        for statement in region[1:]:
            replacements[statement] = cst.RemovalSentinel.REMOVE
        return Fix(
            f"Skip the all-reduce on micro-batches that do not step: `with {header}:`",
            replacements,
            (needed,) if needed else (),
        )


def _depth_of(facts: FileFacts, target: cst.CSTNode) -> int:
    """How many blocks deep `target` stands."""
    return sum(isinstance(node, cst.IndentedBlock) for node in Tree.of(facts).ancestors(target))


def _statements(loop: Loop) -> Sequence[cst.BaseStatement] | None:
    body = loop.body
    return body.body if isinstance(body, cst.IndentedBlock) else None


def _index_of(body: Sequence[cst.BaseStatement], node: cst.CSTNode) -> int | None:
    for index, statement in enumerate(body):
        if any(inner is node for inner in descendants(statement)):
            return index
    return None


def _roots(expr: cst.CSTNode) -> Iterator[str]:
    """The variables an expression reads: `(i + 1) % args.k` reads `i`, `args`, `args.k`."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            yield node.value
        elif isinstance(node, cst.Attribute):
            yield code_for(node)
            stack.append(node.value)
        elif not isinstance(node, cst.Lambda):
            stack.extend(children(node))


def _assigned(statements: Sequence[cst.BaseStatement]) -> set[str]:
    """Names and attributes the statements bind (assignments, loop targets, `as`)."""
    out: set[str] = set()
    for statement in statements:
        for node in descendants(statement):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    out |= _bound(target.target)
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)):
                out |= _bound(node.target)
            elif isinstance(node, cst.AsName):
                out |= _bound(node.name)
            elif isinstance(node, cst.NamedExpr):
                out |= _bound(node.target)
    return out


def _bound(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, (cst.Name, cst.Attribute)):
        return {code_for(target)}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {name for element in target.elements for name in _bound(element.value)}
    if isinstance(target, cst.StarredElement):
        return _bound(target.value)
    if isinstance(target, cst.Subscript):
        return _bound(target.value)
    return set()


def _exits_early(loop: cst.For) -> bool:
    """A `break`, `continue` or `return` that leaves an iteration of this loop (those of a
    loop nested in it are its own, a `return` anywhere leaves)."""
    stack: list[cst.CSTNode] = [loop.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Break, cst.Continue, cst.Return)):
            return True
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, (cst.For, cst.While)):
            if any(isinstance(inner, cst.Return) for inner in descendants(node)):
                return True
            continue
        stack.extend(children(node))
    return False
