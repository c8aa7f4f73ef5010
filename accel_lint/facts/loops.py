"""Loops as training scripts use them, built once per file (`Loops.of(facts)`) from
the loops and calls the walk recorded:

- epoch loops: a `for` over a counter (`range`, `trange`, `tqdm(range(...))`, a name
  bound to one) or a `while`, either named for epochs or training in its body;
- training loops: a loop whose body runs a backward pass (here or in a function of
  the file it calls), and the calls that run on every one of its iterations;
- gradient accumulation: the optimizer stepped once every k backward passes, either
  under a counter test in the training loop (`(i + 1) % k == 0`, `i % k == k - 1`,
  `step - last_step >= k`, a `should_step` flag bound to one of these), in the loop
  or in a function of the file it calls on every iteration, or after an inner loop
  of micro-batches; a loop that also steps on every iteration is not accumulation.

"Follow the calls" means the file's own functions, a few calls deep: a training
loop that calls `train_step(batch)` runs `train_step`'s body every step.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Union

import libcst as cst

from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import CallSite, FileFacts, Guard, LoopSite
from accel_lint.facts.syntax import children, descendants, last_name
from accel_lint.facts.tree import Tree
from accel_lint.names import Scope, resolves_to
from accel_lint.walk import all_children

Loop = Union[cst.For, cst.While]

_MAX_DEPTH = 3
# A loop whose body calls one of these trains (an evaluation loop does not).
_TRAINING_CALLS = ("backward", "manual_backward", "step")
_BACKWARD_CALLS = ("backward", "manual_backward")
# A counting loop whose variable is spelled like this counts epochs.
_EPOCH_NAME = re.compile(r"^(?:e|ep|.*epoch.*)$", re.IGNORECASE)
_COUNTERS = frozenset({"builtins.range", "itertools.count"})
# (k, the counter test) of a step that runs once every k iterations
_Window = tuple[cst.BaseExpression, cst.BaseExpression]


@dataclass(frozen=True)
class Accumulation:
    """The optimizer steps once every k backward passes of `loop`'s iterations.

    `kind` is "modulo" (`if (i + 1) % k == 0: opt.step()` in the loop that runs
    backward, or any counter test of `_window_of`, possibly in a function the loop
    calls: `via`) or "inner-loop" (`for micro in range(k): ...backward()` followed by
    `opt.step()` in the enclosing loop). `every` is the expression for k.
    """

    kind: str
    loop: Loop  # the loop whose iterations are micro-batches
    backward: CallSite  # the call in `loop`'s body that runs backward (itself, or a callee)
    step: CallSite
    every: cst.BaseExpression
    # "modulo": the test of the `if` whose body runs the step (the step branch)
    test: cst.BaseExpression | None = None
    # the call in `loop`'s body that runs `step` when the step is in a function it calls
    via: CallSite | None = None

    def optimizer(self) -> cst.BaseExpression | None:
        """The optimizer stepped: `opt` for `opt.step()` and for `scaler.step(opt)`."""
        return stepped_optimizer(self.step)


@dataclass(frozen=True)
class StepBlock:
    """Where an accumulation steps: `owner` (the counter test's `if`, or the loop around
    the micro-batches) runs `block` once per window, and `statement` of it steps."""

    owner: cst.If | cst.For | cst.While
    block: cst.IndentedBlock
    statement: cst.BaseStatement


class Loops:
    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.calls = CallGraph.of(facts)
        self._trains: dict[Loop, bool] = {}
        self._backward: dict[Loop, bool] = {}
        self._training: list[Loop] | None = None
        self._in_handlers: set[int] | None = None
        self._step: dict[Loop, bool] = {}
        self._bound: dict[Loop, set[str]] = {}
        # the calls in each loop (`in_body`: run by its body, not its header), built
        # once: scanning a function's calls for each of its loops is quadratic in a
        # long module-level script
        self._by_loop: dict[tuple[Loop, bool], list[CallSite]] | None = None

    @classmethod
    def of(cls, facts: FileFacts) -> Loops:
        return facts.shared(cls)

    def site(self, loop: Loop) -> LoopSite:
        return self.facts.loop_sites[loop]

    def all(self) -> Iterator[LoopSite]:
        return iter(self.facts.loop_sites.values())

    def body_calls(self, loop: Loop) -> list[CallSite]:
        """Calls the loop's body runs itself (not its header, not nested defs)."""
        return self._calls_in(loop, in_body=True)

    def _calls_in(self, loop: Loop, *, in_body: bool) -> list[CallSite]:
        if self._by_loop is None:
            index: dict[tuple[Loop, bool], list[CallSite]] = {}
            for sites in self.calls.by_function.values():
                for s in sites:
                    for body_loop in dict.fromkeys(s.bodies):
                        index.setdefault((body_loop, True), []).append(s)
                    for any_loop in dict.fromkeys(s.loops):
                        index.setdefault((any_loop, False), []).append(s)
            self._by_loop = index
        # `loops` and `bodies` hold the loops of the site's own function only
        return self._by_loop.get((loop, in_body), [])

    def callee_sites(self, site: CallSite) -> list[CallSite]:
        """The calls made by the body of the file's function that `site` runs."""
        callee = self.calls.local_callee(site.node, site.scope)
        if callee is None:
            return []
        return self.calls.by_function.get(callee[0], [])

    # -- epochs -----------------------------------------------------------------

    def counts(self, loop: Loop) -> bool:
        """A `for` over an epoch counter: `range(...)`, `itertools.count()`, `trange(...)`,
        `tqdm(range(...))`, or a name bound once to one (`it = trange(n)`)."""
        if not isinstance(loop, cst.For):
            return False
        scope = self.site(loop).scope
        iterable = loop.iter
        if isinstance(iterable, cst.Name):
            bindings = scope.lookup(iterable.value)
            if bindings and len(bindings) == 1 and bindings[0].value is not None:
                iterable = bindings[0].value
                scope = bindings[0].scope or scope
        return _counts(iterable, scope)

    def names_epochs(self, loop: Loop) -> bool:
        """The loop's variable, its iterable, or the value a name it iterates is bound to
        once (`train_iterator = trange(int(args.num_train_epochs))`) mentions epochs."""
        if isinstance(loop, cst.While):
            return _mentions_epoch(loop.test)
        if _mentions_epoch(loop.target) or _mentions_epoch(loop.iter):
            return True
        if isinstance(loop.iter, cst.Name):
            bindings = self.site(loop).scope.lookup(loop.iter.value)
            if bindings and len(bindings) == 1 and bindings[0].value is not None:
                return self.counts(loop) and _mentions_epoch(bindings[0].value)
        return False

    def is_epoch_loop(self, loop: Loop) -> bool:
        """A loop run once per epoch: a counter or a `while`, named for epochs or
        training in its body (`for i in range(3)` around an evaluation is not one)."""
        if isinstance(loop, cst.For) and not self.counts(loop):
            return False
        return self.names_epochs(loop) or self.trains(loop)

    def epoch_loops(self) -> list[Loop]:
        return [site.node for site in self.all() if self.is_epoch_loop(site.node)]

    # -- training -----------------------------------------------------------------

    def trains(self, loop: Loop) -> bool:
        """The loop's body runs a backward pass or an optimizer step, here or in a callee."""
        found = self._trains.get(loop)
        if found is None:
            found = self._trains[loop] = any(
                self._runs(s, _TRAINING_CALLS, 0) for s in self._inside(loop)
            )
        return found

    def runs_backward(self, loop: Loop) -> bool:
        """The loop's body runs a backward pass, here or in a callee: a training loop."""
        found = self._backward.get(loop)
        if found is None:
            found = self._backward[loop] = any(
                self._runs(s, _BACKWARD_CALLS, 0) for s in self._inside(loop)
            )
        return found

    def training_loops(self) -> list[Loop]:
        """Loops whose every iteration is a training step: they run backward, and no loop
        inside them does (the innermost such loop is the step loop)."""
        if self._training is None:
            self._training = self._innermost_training_loops()
        return self._training

    def _innermost_training_loops(self) -> list[Loop]:
        candidates = [site.node for site in self.all() if self.runs_backward(site.node)]
        inner = {
            outer
            for loop in candidates
            for outer in self.site(loop).bodies
            if outer in candidates and self.site(loop).function == self.site(outer).function
        }
        return [loop for loop in candidates if loop not in inner]

    def every_step(
        self, site: CallSite, ignoring: Callable[[Guard], bool] | None = None
    ) -> Loop | None:
        """The training loop that runs `site` on each of its iterations, directly or
        through the file's functions it calls unconditionally; None when the call is
        under a condition inside that loop, or not in a training loop. Guards for which
        `ignoring` answers True (a test of the machine, true on every step or on none)
        are not conditions."""
        return self._every_step(site, 0, ignoring)

    def _every_step(
        self, site: CallSite, depth: int, ignoring: Callable[[Guard], bool] | None = None
    ) -> Loop | None:
        for loop in reversed(site.bodies):
            if loop not in self.training_loops():
                continue
            if not self.is_step_loop(loop):
                return None  # an epoch loop around a function that holds the step loop
            if not self._unconditional_in(site.guards, loop, ignoring):
                return None
            # a call in an `except` block runs when an exception is caught, not every step
            return None if id(site.node) in self._handled() else loop
        if site.function is None or site.bodies or depth >= _MAX_DEPTH:
            return None
        if _conditions(site.guards, ignoring) or id(site.node) in self._handled():
            return None
        # a call of the function inside itself (or what the call graph takes for one:
        # `self.optimizer.step()` in a trainer's own `step`) never enters it
        callers = [c for c in self.calls.calls_to(site.function) if c.function is not site.function]
        loops = [self._every_step(caller, depth + 1, ignoring) for caller in callers]
        if not loops or None in loops:
            return None
        return loops[0]

    def is_step_loop(self, loop: Loop) -> bool:
        """A training loop whose iterations are steps: no function of the file it calls
        holds a training loop (`for epoch in ...: train(loader)` runs once per epoch)."""
        found = self._step.get(loop)
        if found is None:
            holders = {self.site(other).function for other in self.training_loops()}
            holders.discard(None)
            stack = [(s, 0) for s in self._inside(loop)]
            seen: set[cst.FunctionDef] = set()
            found = True
            while stack and found:
                call, depth = stack.pop()
                callee = self.calls.local_callee(call.node, call.scope)
                if callee is None or callee[0] in seen or depth >= _MAX_DEPTH:
                    continue
                seen.add(callee[0])
                found = callee[0] not in holders
                stack.extend((s, depth + 1) for s in self.calls.by_function.get(callee[0], ()))
            self._step[loop] = found
        return found

    def trains_every_iteration(self, loop: Loop) -> bool:
        """False when each backward pass in the loop's body runs only on some iterations,
        under `if <counter> % k == 0` (a reinforcement-learning loop that steps the
        environment every iteration and trains every k-th)."""
        inside = len(self.site(loop).guards)
        backs = [s for s in self.body_calls(loop) if self._runs_backward(s)]
        return not backs or not all(
            any(positive and _modulo_of(test) is not None for test, positive in s.guards[inside:])
            for s in backs
        )

    def _handled(self) -> set[int]:
        """Calls inside `except` blocks (found on demand)."""
        if self._in_handlers is None:
            self._in_handlers = _calls_in_handlers(self.facts.module)
        return self._in_handlers

    def _unconditional_in(
        self,
        guards: tuple[Guard, ...],
        loop: Loop,
        ignoring: Callable[[Guard], bool] | None = None,
    ) -> bool:
        inner = guards[len(self.site(loop).guards) :]
        return not _conditions(inner, ignoring)

    def step_functions(self) -> set[cst.FunctionDef]:
        """The file's functions that a training loop runs on every step."""
        out: set[cst.FunctionDef] = set()
        for loop in self.training_loops():
            stack = [
                (s, 0) for s in self.body_calls(loop) if self._unconditional_in(s.guards, loop)
            ]
            while stack:
                site, depth = stack.pop()
                callee = self.calls.local_callee(site.node, site.scope)
                if callee is None or callee[0] in out or depth >= _MAX_DEPTH:
                    continue
                out.add(callee[0])
                stack.extend(
                    (s, depth + 1)
                    for s in self.calls.by_function.get(callee[0], ())
                    if not s.guards and not s.bodies
                )
        return out

    def _inside(self, loop: Loop) -> list[CallSite]:
        return self._calls_in(loop, in_body=False)

    def _runs(self, site: CallSite, names: tuple[str, ...], depth: int) -> bool:
        func = site.node.func
        if type(func) is cst.Attribute and func.attr.value in names:
            return True
        if depth >= _MAX_DEPTH:
            return False
        return any(self._runs(s, names, depth + 1) for s in self.callee_sites(site))

    # -- gradient accumulation --------------------------------------------------------

    def _runs_backward(self, site: CallSite) -> bool:
        return self._runs(site, _BACKWARD_CALLS, 0)

    def accumulations(self) -> list[Accumulation]:
        """Every place the file accumulates gradients over several backward passes."""
        found: list[Accumulation] = []
        for loop in self.training_loops():
            back = self._one_backward(self.backward_sites(loop), loop)
            steps = self._steps_of(loop)
            if back is None or not steps:
                continue
            windows = [(step, via, self._window_step(step, via, loop)) for step, via in steps]
            if any(window is None for _, _, window in windows):
                continue  # a step on every iteration (a critic's or another optimizer's)
            for step, via, window in windows:
                if window is not None and window is not _MISS:
                    every, test = window
                    if _other_optimizer_steps(step, test, windows):
                        break  # a GAN's alternation: another model trains in between
                    found.append(Accumulation("modulo", loop, back, step, every, test, via))
                    break
        for loop in self.training_loops():
            if any(a.loop is loop for a in found) or self._steps_of(loop):
                continue
            outer = self._outer_step(loop, None)
            if outer is not None:
                found.append(outer)
        return found

    def _steps_of(self, loop: Loop) -> list[tuple[CallSite, CallSite | None]]:
        """The optimizer steps the loop's body runs: its own, and those of the file's
        functions it calls on every iteration (with the call that runs them)."""
        out: list[tuple[CallSite, CallSite | None]] = []
        for site in self.body_calls(loop):
            if _is_step(site):
                out.append((site, None))
            elif site.bodies and site.bodies[-1] is loop and not self._branches(site, loop):
                out.extend((inner, site) for inner in self._callee_steps(site, 0, set()))
        return out

    def _callee_steps(
        self, site: CallSite, depth: int, seen: set[cst.FunctionDef]
    ) -> list[CallSite]:
        callee = self.calls.local_callee(site.node, site.scope)
        if callee is None or callee[0] in seen or depth >= _MAX_DEPTH - 1:
            return []
        seen.add(callee[0])
        out: list[CallSite] = []
        for inner in self.calls.by_function.get(callee[0], ()):
            if inner.bodies:
                continue  # in a loop of the callee: not once per call
            if _is_step(inner):
                out.append(inner)
            elif not self._branches_in(inner.guards):
                out.extend(self._callee_steps(inner, depth + 1, seen))
        return out

    def _window_step(self, step: CallSite, via: CallSite | None, loop: Loop) -> _Window | None:
        """(k, the test) when the step runs under a counter test inside the loop (or in
        the function the loop calls); None when it runs on every iteration. A step under
        other conditions only is neither: (no k, no test) is returned as a miss."""
        inner = self._branches(step, loop) if via is None else self._branches_in(step.guards)
        if via is not None and self._branches(via, loop):
            return _MISS
        if not inner:
            return None
        for test, positive in inner:
            if positive:
                every = _window_of(test, step.scope, 0)
                if every is not None:
                    return every, test
        return _MISS

    def every_iteration(self, accumulation: Accumulation) -> list[CallSite]:
        """The calls that run on every iteration of the accumulation's micro-batch loop:
        in its own body (not in an inner loop or an `except`, and under no condition but
        ones the loop cannot change: `if args.clip:`, `if scaler is not None:`), and in
        the file's functions such a call runs, unconditionally, a few calls deep."""
        loop = accumulation.loop
        out: list[CallSite] = []
        stack: list[tuple[CallSite, int]] = []
        handled = self._handled()
        # the sides of the tests the step runs under: a call on the other side of one
        # (`if accum > 1: ... else: <steps every iteration>`) never runs with it
        stepping = {id(test): side for test, side in (accumulation.via or accumulation.step).guards}
        for site in self.body_calls(loop):
            if site.bodies[-1] is not loop:
                continue
            branches = self._branches(site, loop)
            if not all(self._invariant(test, loop) for test, _ in branches):
                continue
            if any(stepping.get(id(test), side) != side for test, side in branches):
                continue
            if id(site.node) in handled:
                continue
            out.append(site)
            stack.append((site, 0))
        seen: set[cst.FunctionDef] = set()
        while stack:
            site, depth = stack.pop()
            callee = self.calls.local_callee(site.node, site.scope)
            if callee is None or callee[0] in seen or depth >= _MAX_DEPTH:
                continue
            seen.add(callee[0])
            for inner in self.calls.by_function.get(callee[0], ()):
                if inner.bodies or self._branches_in(inner.guards) or id(inner.node) in handled:
                    continue
                out.append(inner)
                stack.append((inner, depth + 1))
        return out

    def _invariant(self, test: cst.BaseExpression, loop: Loop) -> bool:
        """The test gives the same answer on every iteration: it calls nothing and reads
        no name or attribute the loop binds (its target, assignments in its body)."""
        bound = self._bound.get(loop)
        if bound is None:
            bound = self._bound[loop] = _bound_in(loop)
        for node in descendants(test):
            if isinstance(node, (cst.Call, cst.NamedExpr, cst.Await, cst.Lambda)):
                return False
            if isinstance(node, (cst.Name, cst.Attribute)) and _dotted(node) in bound:
                return False
        return True

    def step_block(self, accumulation: Accumulation) -> StepBlock | None:
        """The block that runs once per window and the statement of it that steps: the
        body of the counter test's `if` (modulo), or the body of the loop around the
        micro-batch loop (inner loop). None when the step's statement cannot be placed
        in one (an `if` on one line)."""
        tree = Tree.of(self.facts)
        if accumulation.kind == "modulo":
            if accumulation.test is None:
                return None
            owner = tree.parent(accumulation.test)
        else:
            bodies = self.site(accumulation.loop).bodies
            owner = bodies[-1] if bodies else None
        if not isinstance(owner, (cst.If, cst.For, cst.While)):
            return None
        block = owner.body
        if not isinstance(block, cst.IndentedBlock):
            return None
        current: cst.CSTNode | None = accumulation.step.node
        while current is not None and tree.parent(current) is not block:
            current = tree.parent(current)
        if not isinstance(current, cst.BaseStatement):
            return None
        return StepBlock(owner, block, current)

    def movable(self, site: CallSite, accumulation: Accumulation) -> cst.SimpleStatementLine | str:
        """The line of `site`, a call run on every iteration, when a fix can move it into
        the step block: the call is the line's only statement (`f(...)` or `x = f(...)`),
        in the function that steps, and not alone in its block. Otherwise why not."""
        if site.function is not accumulation.step.function:
            return "the call and the optimizer step are in different functions"
        tree = Tree.of(self.facts)
        line = tree.statement_of(site.node)
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return "the call shares its line with other statements"
        small = line.body[0]
        if not (
            (isinstance(small, cst.Expr) and small.value is site.node)
            or (isinstance(small, cst.Assign) and small.value is site.node)
        ):
            return "the call is part of a larger statement"
        block = tree.parent(line)
        if not isinstance(block, cst.IndentedBlock) or len(block.body) < 2:
            return "the call is alone in its block"
        where = self.step_block(accumulation)
        if (
            where is not None
            and block is not where.block
            and block is not accumulation.loop.body
            and block not in tree.ancestors(where.owner)
        ):
            return "the call is under a condition of its own that the step branch is not"
        return line

    def _branches_in(self, guards: tuple[Guard, ...]) -> tuple[Guard, ...]:
        return tuple(g for g in guards if g[1] or g[0] not in self.facts.exit_tests)

    def backward_sites(self, loop: Loop) -> list[CallSite]:
        """The calls of the loop's body that run a backward pass (themselves or in a
        function of the file they call)."""
        return [s for s in self.body_calls(loop) if self._runs_backward(s)]

    def _one_backward(self, sites: list[CallSite], loop: Loop) -> CallSite | None:
        """The one backward pass each iteration runs: a single call, unconditional in the
        loop, or calls in the exclusive branches of `if`/`else` that together run on
        every iteration (`scaler.scale(loss).backward()` under `if args.fp16:`, else
        `loss.backward()`). Two passes in a row (a GAN's two losses) are not one."""
        if sites and _one_path_each([self._branches(s, loop) for s in sites]):
            return sites[0]
        return None

    def _branches(self, site: CallSite, loop: Loop) -> tuple[Guard, ...]:
        """The guards of `site` inside `loop`, early exits left out: after `if skip:
        continue`, the rest of the body is what every remaining iteration runs."""
        inner = site.guards[len(self.site(loop).guards) :]
        return tuple(g for g in inner if g[1] or g[0] not in self.facts.exit_tests)

    def _outer_step(self, loop: Loop, back: CallSite | None) -> Accumulation | None:
        """`for micro in range(k): ... backward()` (or `for part in batch.chunk(k):`) then
        `opt.step()` after it, in the loop around it: the inner loop's iterations are
        the micro-batches."""
        if not isinstance(loop, cst.For):
            return None
        chunks = _chunk_count(loop.iter)
        if chunks is None and not self.counts(loop):
            return None
        if back is None:
            back = self._one_backward(self.backward_sites(loop), loop)
            if back is None:
                return None
        if any(_is_step(s) for s in self.body_calls(loop)):
            return None
        bodies = self.site(loop).bodies
        if not bodies:
            return None
        outer = bodies[-1]
        steps = [
            s
            for s in self.body_calls(outer)
            if _is_step(s) and self._unconditional_in(s.guards, outer) and loop not in s.loops
        ]
        iterable = loop.iter
        if len(steps) != 1 or not isinstance(iterable, cst.Call) or not iterable.args:
            return None
        every = iterable.args[-1].value if len(iterable.args) <= 2 else None
        if chunks is not None:
            every = chunks
        if every is None:
            return None
        return Accumulation("inner-loop", loop, back, steps[0], every)


def _dotted(node: cst.Name | cst.Attribute) -> str | None:
    """`args.clip` for the attribute chain, `x` for a name; None for `f().x`."""
    if isinstance(node, cst.Name):
        return node.value
    inner = node.value
    if isinstance(inner, (cst.Name, cst.Attribute)):
        base = _dotted(inner)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def _bound_in(loop: Loop) -> set[str]:
    """Names and attribute chains the loop binds: its target, and the targets of the
    assignments, loops, `with ... as` and walruses in its body."""
    targets: list[cst.BaseExpression] = []
    if isinstance(loop, cst.For):
        targets.append(loop.target)
    for node in descendants(loop.body):
        if isinstance(node, cst.Assign):
            targets.extend(t.target for t in node.targets)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)):
            targets.append(node.target)
        elif isinstance(node, cst.AsName):
            if isinstance(node.name, cst.BaseExpression):
                targets.append(node.name)
        elif isinstance(node, cst.NamedExpr):
            targets.append(node.target)
    bound: set[str] = set()
    while targets:
        target = targets.pop()
        if isinstance(target, (cst.Tuple, cst.List)):
            targets.extend(e.value for e in target.elements)
        elif isinstance(target, (cst.StarredElement, cst.Subscript)):
            targets.append(target.value)
        elif isinstance(target, (cst.Name, cst.Attribute)):
            name = _dotted(target)
            if name is not None:
                bound.add(name)
    return bound


def _calls_in_handlers(module: cst.Module) -> set[int]:
    """The calls made inside `except` blocks: statements are walked down to the `try`
    statements, and only their handlers are walked in full."""
    found: set[int] = set()
    statements: list[cst.CSTNode] = list(module.body)
    handlers: list[cst.CSTNode] = []
    while statements:
        node = statements.pop()
        # by type: a failing `isinstance` against libcst's classes goes through ABCMeta
        if type(node) is cst.Try or type(node) is cst.TryStar:
            handlers.extend(node.handlers)
            statements.extend(_blocks_of(node))
        elif type(node) is not cst.SimpleStatementLine:  # a compound statement
            statements.extend(_blocks_of(node))
    while handlers:
        node = handlers.pop()
        if type(node) is cst.Call:
            found.add(id(node))
        handlers.extend(children(node))  # libcst's `children` rebuilds the node
    return found


def _blocks_of(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements directly inside a compound statement's blocks (not its handlers)."""
    if isinstance(node, cst.Match):
        return [statement for case in node.cases for statement in _blocks_of(case)]
    out: list[cst.CSTNode] = []
    body = getattr(node, "body", None)
    if isinstance(body, cst.IndentedBlock):
        out.extend(body.body)
    for field in ("orelse", "finalbody"):
        part = getattr(node, field, None)
        if isinstance(part, cst.If):
            out.append(part)  # an `elif`
        elif isinstance(part, (cst.Else, cst.Finally)):
            out.extend(_blocks_of(part))
    return out


def _conditions(guards: tuple[Guard, ...], ignoring: Callable[[Guard], bool] | None) -> bool:
    """Are some of these guards real conditions (not ignored)?"""
    return any(ignoring is None or not ignoring(guard) for guard in guards)


def _one_path_each(paths: list[tuple[Guard, ...]]) -> bool:
    """The guard sequences split every run into exactly one each: `[]` alone, or the
    same test first in every sequence, its true and false sides both split again."""
    if any(not path for path in paths):
        return len(paths) == 1
    test = paths[0][0][0]
    if any(path[0][0] is not test for path in paths):
        return False
    true = [path[1:] for path in paths if path[0][1]]
    false = [path[1:] for path in paths if not path[0][1]]
    return bool(true) and bool(false) and _one_path_each(true) and _one_path_each(false)


# a step under conditions that are not a counter test: neither accumulation nor a step
# on every iteration
_MISS: _Window = (cst.Name("None"), cst.Name("None"))


def _other_optimizer_steps(
    step: CallSite,
    test: cst.BaseExpression,
    windows: list[tuple[CallSite, CallSite | None, _Window | None]],
) -> bool:
    """Another optimizer steps outside the branch of `test` (a generator stepped on
    even iterations, a discriminator on odd ones)."""
    mine = stepped_optimizer(step)
    for other, _, window in windows:
        theirs = stepped_optimizer(other)
        if mine is None or theirs is None or theirs.deep_equals(mine):
            continue
        if window is None or window is _MISS or window[1] is not test:
            return True
    return False


def stepped_optimizer(site: CallSite) -> cst.BaseExpression | None:
    """`opt` for `opt.step()`, and for a GradScaler's `scaler.step(opt)`."""
    func = site.node.func
    if not isinstance(func, cst.Attribute):
        return None
    args = [a for a in site.node.args if a.keyword is None and not a.star]
    if args:
        return args[0].value
    return func.value


def _window_of(test: cst.BaseExpression, scope: Scope, depth: int) -> cst.BaseExpression | None:
    """k for a counter test that holds once every k iterations: `(i + 1) % k == 0`,
    `i % k == k - 1`, `not i % k`, `step - last_step >= k` (`or`-ed with an
    end-of-data test, `and`-ed with another), or a name bound to one of these (`if
    should_step:`, `if not accumulating:` for `accumulating = (i + 1) % k != 0`)."""
    every = _modulo_of(test)
    if every is not None:
        return every
    if isinstance(test, cst.BooleanOperation):
        return _window_of(test.left, scope, depth) or _window_of(test.right, scope, depth)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        operator = test.comparisons[0].operator
        right = test.comparisons[0].comparator
        if isinstance(operator, (cst.GreaterThanEqual, cst.GreaterThan)) and _difference(test.left):
            return right
        if isinstance(operator, (cst.LessThanEqual, cst.LessThan)) and _difference(right):
            return test.left
        return None
    if depth >= 2:
        return None
    negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    name = test.expression if isinstance(test, cst.UnaryOperation) else test
    if not isinstance(name, cst.Name):
        return None
    bindings = scope.lookup(name.value)
    if not bindings or any(b.value is None for b in bindings):
        return None
    found: cst.BaseExpression | None = None
    for binding in bindings:
        value = binding.value
        assert value is not None
        inner = (
            _not_modulo(value) if negated else _window_of(value, binding.scope or scope, depth + 1)
        )
        if inner is None:
            return None
        found = found or inner
    return found


def _not_modulo(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """k for `<counter> % k != 0`, which `not` turns into a counter test."""
    if (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.NotEqual)
    ):
        for side in (test.left, test.comparisons[0].comparator):
            if isinstance(side, cst.BinaryOperation) and isinstance(side.operator, cst.Modulo):
                return side.right
    return None


def _difference(expr: cst.BaseExpression) -> bool:
    """`step - last_step`: two counters subtracted."""
    return (
        isinstance(expr, cst.BinaryOperation)
        and isinstance(expr.operator, cst.Subtract)
        and not isinstance(expr.right, (cst.Integer, cst.Float))
        and not isinstance(expr.left, (cst.Integer, cst.Float))
    )


def is_optimizer_step(site: CallSite) -> bool:
    """`<optimizer>.step(...)` or `scaler.step(optimizer)`, not a scheduler's step."""
    return _is_step(site)


def _is_step(site: CallSite) -> bool:
    """`<optimizer>.step(...)`, or a GradScaler's `scaler.step(optimizer)`."""
    func = site.node.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "step":
        return False
    receiver = last_name(func.value) or ""
    return "sched" not in receiver.lower()


def _modulo_of(test: cst.BaseExpression) -> cst.BaseExpression | None:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        return _modulo_of(test.left) or _modulo_of(test.right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = test.expression
        if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Modulo):
            return inner.right
        return None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        operator = test.comparisons[0].operator
        left, right = test.left, test.comparisons[0].comparator
        if isinstance(operator, (cst.GreaterThanEqual, cst.LessThanEqual)):
            # `ni - last_opt_step >= accumulate` (or `accumulate <= ni - last_opt_step`)
            since, every = (
                (left, right)
                if isinstance(operator, cst.GreaterThanEqual)
                else (
                    right,
                    left,
                )
            )
            if isinstance(since, cst.BinaryOperation) and isinstance(since.operator, cst.Subtract):
                return every
            return None
        if not isinstance(operator, cst.Equal):
            return None
        for side in (left, right):
            if isinstance(side, cst.BinaryOperation) and isinstance(side.operator, cst.Modulo):
                return side.right
    return None


def _chunk_count(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """k for `batch.chunk(k)`, `torch.chunk(batch, k)`, or a `zip(...)` of such chunks
    (`zip(x.chunk(k), y.chunk(k))`): k micro-batches of a batch."""
    if not isinstance(expr, cst.Call):
        return None
    args = [a for a in expr.args if a.keyword is None and not a.star]
    if len(args) != len(expr.args) or not args:
        return None
    name = last_name(expr.func)
    if name == "chunk" and len(args) <= 2:
        return args[-1].value
    if name == "zip":
        counts = [_chunk_count(a.value) for a in args]
        first = counts[0]
        if first is not None and all(c is not None and c.deep_equals(first) for c in counts):
            return first
    return None


def _counts(expr: cst.BaseExpression, scope: Scope) -> bool:
    if not isinstance(expr, cst.Call):
        return False
    if resolves_to(expr.func, scope, _COUNTERS):
        return True
    name = last_name(expr.func)
    if name == "trange":
        return True
    if name in ("tqdm", "enumerate", "track") and expr.args and expr.args[0].keyword is None:
        return _counts(expr.args[0].value, scope)
    return False


def _mentions_epoch(expr: cst.CSTNode) -> bool:
    """`epoch`, `ep`, `e`, `epoch_idx`, `args.epochs` appear in the expression."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and _EPOCH_NAME.match(node.value):
            return True
        if isinstance(node, cst.Attribute):
            if _EPOCH_NAME.match(node.attr.value):
                return True
            stack.append(node.value)
        elif isinstance(node, cst.Call):
            stack.extend(arg.value for arg in node.args)  # not the callee: `range`, `tqdm`
        else:
            stack.extend(all_children(node))
    return False


def machine_test(guard: Guard) -> bool:
    """`if torch.cuda.is_available():`, `if device.type == "cuda":`, `if args.cuda:`: a
    test of the machine, true on every step or on none (every part of it)."""
    return _tests_machine(guard[0])


_MACHINE_FLAGS = frozenset(
    {"cuda", "use_cuda", "no_cuda", "is_cuda", "gpu", "use_gpu", "on_gpu", "cpu", "use_cpu", "type"}
)
_DEVICE_NAMES = frozenset({"cuda", "cpu", "mps", "xpu"})


def _tests_machine(test: cst.BaseExpression) -> bool:
    if isinstance(test, cst.BooleanOperation):
        return _tests_machine(test.left) and _tests_machine(test.right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _tests_machine(test.expression)
    if isinstance(test, cst.Call):
        return last_name(test.func) == "is_available"
    if isinstance(test, (cst.Name, cst.Attribute)):
        return (last_name(test) or "").lower() in _MACHINE_FLAGS
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        sides = (test.left, test.comparisons[0].comparator)
        return any(
            isinstance(side, cst.SimpleString) and side.value.strip("'\"") in _DEVICE_NAMES
            for side in sides
        )
    return False
