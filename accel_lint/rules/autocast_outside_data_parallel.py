"""ACL402 autocast-outside-data-parallel: a DataParallel model called inside an
autocast block while its `forward` does not enter autocast itself.
Page: rules/ACL402.md

autocast state is thread-local and DataParallel runs each replica's forward in a
worker thread. Before torch 1.7 those threads ran without autocast; since then
they re-enter it, but only its on/off state (`parallel_apply` calls
`torch.amp.autocast(device_type, enabled=...)`): a `dtype` or `cache_enabled`
set on the outer block is lost.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import CallSite
from accel_lint.names import (
    BindingKind,
    Scope,
    dotted_name,
    qualified_names,
    resolves_to,
    spelling_for,
)
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import DATA_PARALLEL
from accel_lint.walk import all_children

AUTOCAST = frozenset(
    {
        "torch.autocast",
        "torch.amp.autocast",
        "torch.amp.autocast_mode.autocast",
        "torch.cuda.amp.autocast",
        "torch.cuda.amp.autocast_mode.autocast",
    }
)
_CUDA_AUTOCAST = frozenset({"torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"})
# parameters by position: torch.autocast(device_type, dtype, enabled, cache_enabled),
# torch.cuda.amp.autocast(enabled, dtype, cache_enabled)
_PARAMS = ("device_type", "dtype", "enabled", "cache_enabled")
_CUDA_PARAMS = ("enabled", "dtype", "cache_enabled")
_DEFAULT_DTYPE = {"cuda": "float16"}
_ALL_LOST = "autocast itself"
_DTYPES = {
    "torch.float16": "float16",
    "torch.half": "float16",
    "torch.bfloat16": "bfloat16",
    "torch.float32": "float32",
    "torch.float": "float32",
    "torch.float64": "float64",
}
# Calls that return the module they are called on.
_MOVERS = frozenset({"to", "cuda", "cpu", "float", "half", "bfloat16", "double", "train"})


@dataclass(frozen=True)
class Autocast:
    """An autocast call of a `with` statement, its arguments by parameter name."""

    call: cst.Call
    scope: Scope
    device: str | None  # None when not a literal
    args: dict[str, cst.BaseExpression]

    def disabled(self) -> bool:
        enabled = self.args.get("enabled")
        return isinstance(enabled, cst.Name) and enabled.value == "False"


_MAX_HANDLES = 16  # how far a model is followed through the file's functions


def _is(site: CallSite, expr: cst.Name, name: str, node: cst.CSTNode) -> bool:
    """`expr` at `site` is the name `name` bound by `node` (an assignment or a parameter)."""
    if expr.value != name:
        return False
    return any(b.node is node for b in site.scope.lookup(name) or [])


@dataclass(frozen=True)
class Wrapped:
    """A model wrapped by `x = DataParallel(inner)`: the name it is called by, and
    the class it is built from when the file shows it."""

    target: str
    binding_node: cst.CSTNode  # the assignment of the DataParallel call
    inner: str | None  # the unwrapped model's name, if it has one
    class_def: cst.ClassDef | None

    @property
    def class_name(self) -> str | None:
        return self.class_def.name.value if self.class_def is not None else None


class AutocastOutsideDataParallel(Rule):
    code = "ACL402"
    name = "autocast-outside-data-parallel"
    summary = "DataParallel model called under autocast whose forward does not enter autocast"
    fix_safety = FixSafety.SAFE
    verification = Verification(
        Equivalence.CLOSE,
        needs_accelerator="DataParallel runs its replicas in threads only on several CUDA devices",
    )

    def setup(self) -> None:
        self._withs: list[cst.With | None] = []  # None: a def, whose body runs later
        self._in_with: dict[cst.Call, tuple[cst.With, ...]] = {}
        self._assigns: dict[cst.BaseExpression, tuple[cst.Assign, Scope]] = {}

    # -- walk --------------------------------------------------------------------

    def visit_With_body(self, node: cst.With) -> None:
        self._withs.append(node)

    def leave_With_body(self, node: cst.With) -> None:
        self._withs.pop()

    def _barrier(self, node: cst.CSTNode) -> None:
        self._withs.append(None)

    def _unbarrier(self, node: cst.CSTNode) -> None:
        self._withs.pop()

    visit_FunctionDef = _barrier
    visit_ClassDef = _barrier
    visit_Lambda = _barrier
    leave_FunctionDef = _unbarrier
    leave_ClassDef = _unbarrier
    leave_Lambda = _unbarrier

    def visit_Call(self, node: cst.Call) -> None:
        active: list[cst.With] = []
        for entry in reversed(self._withs):
            if entry is None:
                break
            active.append(entry)
        if active:
            self._in_with[node] = tuple(active)  # innermost first

    def visit_Assign(self, node: cst.Assign) -> None:
        # keyed by the wrapped call: `m = DataParallel(net).cuda()` wraps like `DataParallel(net)`
        self._assigns[_unmoved(node.value)] = (node, self.facts.scope)

    # -- finish ------------------------------------------------------------------

    def finish(self) -> None:
        wrapped = [
            w
            for site in self.facts.calls
            if resolves_to(site.node.func, site.scope, DATA_PARALLEL)
            for w in [self._wrapped(site)]
            if w is not None
        ]
        if not wrapped:
            return
        by_model = self._model_calls(wrapped)
        for model, calls in by_model.items():
            flagged = [(site, block) for site, block in calls if block is not None]
            flagged = [(s, b) for s, b in flagged if self._hazard(b) is not None]
            if not flagged or self._forward_autocasts(model):
                continue
            fix = self._fix(model, calls)
            for site, block in flagged:
                assert block is not None
                message = self._message(model, block)
                if isinstance(fix, str):
                    self.report(site.node, message, no_fix_reason=fix)
                else:
                    self.report(site.node, message, fix)

    def _wrapped(self, site: CallSite) -> Wrapped | None:
        call = site.node
        found = self._assigns.get(call)
        if found is None or len(found[0].targets) != 1:
            return None
        assign, scope = found
        target = assign.targets[0].target
        if not isinstance(target, cst.Name):
            return None
        module = _module_arg(call)
        if module is None:
            return None
        # `model = DataParallel(model)`: calls of `model` are calls of the wrapped model
        inner = module.value if isinstance(module, cst.Name) else None
        if inner == target.value:
            inner = None
        return Wrapped(target.value, assign, inner, _class_of(module, scope, call))

    def _model_calls(
        self, wrapped: list[Wrapped]
    ) -> dict[Wrapped, list[tuple[CallSite, Autocast | None]]]:
        """Every call of each wrapped model, with the innermost autocast block around it;
        also inside functions of the file the model is passed to (`train(loader, model)`)."""
        out: dict[Wrapped, list[tuple[CallSite, Autocast | None]]] = {w: [] for w in wrapped}
        for model in wrapped:
            handles: list[tuple[str, cst.CSTNode]] = [(model.target, model.binding_node)]
            seen: set[int] = set()
            while handles:
                name, node = handles.pop()
                if id(node) in seen or len(seen) > _MAX_HANDLES:
                    continue
                seen.add(id(node))
                for site in self.facts.calls:
                    func = site.node.func
                    if isinstance(func, cst.Name) and _is(site, func, name, node):
                        out[model].append((site, self._autocast_around(site)))
                    handles.extend(self._passed_to(site, name, node))
        return out

    def _passed_to(
        self, site: CallSite, name: str, node: cst.CSTNode
    ) -> list[tuple[str, cst.CSTNode]]:
        """The parameters of a function of this file that receive the model at `site`."""
        func = site.node.func
        if not isinstance(func, cst.Name):
            return []
        bindings = site.scope.lookup(func.value) or []
        if len(bindings) != 1 or not isinstance(bindings[0].node, cst.FunctionDef):
            return []
        params = bindings[0].node.params
        out: list[tuple[str, cst.CSTNode]] = []
        for index, arg in enumerate(site.node.args):
            value = arg.value
            if arg.star or not (isinstance(value, cst.Name) and _is(site, value, name, node)):
                continue
            param: cst.Param | None = None
            if arg.keyword is not None:
                every = [*params.posonly_params, *params.params, *params.kwonly_params]
                param = next((p for p in every if p.name.value == arg.keyword.value), None)
            elif index < len(positional := [*params.posonly_params, *params.params]):
                param = positional[index]
            if param is not None:
                out.append((param.name.value, param))
        return out

    def _autocast_around(self, site: CallSite) -> Autocast | None:
        for block in self._in_with.get(site.node, ()):
            for item in block.items:
                call = item.item
                if isinstance(call, cst.Call) and resolves_to(call.func, site.scope, AUTOCAST):
                    return _autocast(call, site.scope)
        return None

    def _hazard(self, block: Autocast) -> str | None:
        """What the replicas lose, or None when nothing is lost. DataParallel has no
        worker threads on the CPU (it calls the module directly), so a CPU block
        loses nothing; a device type we cannot read is taken for CUDA's."""
        if block.disabled() or block.device == "cpu":
            return None
        target = self.ctx.target_torch
        if target is not None and target < (1, 7):
            return _ALL_LOST
        dtype = block.args.get("dtype")
        if dtype is not None:
            chosen = {_DTYPES.get(n) for n in qualified_names(dtype, block.scope)}
            if len(chosen) == 1 and None not in chosen:
                (value,) = chosen
                if value != _DEFAULT_DTYPE.get(block.device or "cuda"):
                    return f"`dtype={code_for(dtype)}`"
        cache = block.args.get("cache_enabled")
        if isinstance(cache, cst.Name) and cache.value == "False":
            return "`cache_enabled=False`"
        return None

    def _forward_autocasts(self, model: Wrapped) -> bool:
        forward = _forward(model.class_def) if model.class_def is not None else None
        if forward is None:
            return False
        scope = self.facts.module_scope
        for decorator in forward.decorators:
            expr = decorator.decorator
            callee = expr.func if isinstance(expr, cst.Call) else expr
            if resolves_to(callee, scope, AUTOCAST):
                return True
        return any(resolves_to(call.func, scope, AUTOCAST) for call in _calls_in(forward.body))

    def _message(self, model: Wrapped, block: Autocast) -> str:
        forward = f"`{model.class_name}.forward`" if model.class_name else "the model's `forward`"
        lost = self._hazard(block)
        if lost == _ALL_LOST:
            return (
                f"DataParallel runs {forward} in worker threads, where autocast (thread-local) "
                "is off before torch 1.7: the replicas compute in float32"
            )
        message = (
            f"DataParallel runs {forward} in worker threads, which re-enter autocast without {lost}"
        )
        default = _DEFAULT_DTYPE.get(block.device or "cuda")
        if lost is not None and lost.startswith("`dtype=") and default is not None:
            message += f": the replicas compute in {default}"
        return message

    # -- fix -----------------------------------------------------------------------

    def _fix(self, model: Wrapped, calls: list[tuple[CallSite, Autocast | None]]) -> Fix | str:
        """Decorate the class's own `forward` with the block's autocast, when that
        cannot change any other call: every call of the model runs inside blocks
        with the same arguments, and the class has no other instance or subclass.
        Otherwise, why not."""
        if model.class_def is None or model.class_name is None:
            return "the wrapped model's class is not defined in this file"
        forward = _forward(model.class_def)
        if forward is None:
            return f"`{model.class_name}` inherits its `forward`"
        blocks = [block for _, block in calls]
        if any(b is None for b in blocks):
            return (
                f"`{model.target}` is also called outside autocast, which a decorator would change"
            )
        first = blocks[0]
        assert first is not None
        if any(_arguments_text(b) != _arguments_text(first) for b in blocks if b is not None):
            return f"`{model.target}` is called under autocast blocks with different arguments"
        if not all(_definition_time_safe(v) for v in first.args.values()):
            return (
                "the autocast arguments are only known at run time, not when the class is defined"
            )
        reason = self._other_uses(model)
        if reason is not None:
            return reason
        decorator = self._decorator(first)
        if decorator is None:
            return "the autocast device type is not a literal"
        text, needed = decorator
        new = forward.with_changes(
            decorators=[*forward.decorators, cst.Decorator(decorator=cst.parse_expression(text))]
        )
        return Fix(
            f"Decorate `{model.class_name}.forward` with `@{text}`",
            {forward: new},
            (needed,) if needed else (),
        )

    def _other_uses(self, model: Wrapped) -> str | None:
        """Why the decorator would reach more than this model: another instance, a
        subclass, or the unwrapped model called on its own."""
        assert model.class_def is not None and model.class_name is not None
        built = 0
        for site in self.facts.calls:
            func = site.node.func
            if isinstance(func, cst.Name):
                bindings = site.scope.lookup(func.value) or []
                if any(b.node is model.class_def for b in bindings):
                    built += 1
                if model.inner is not None and func.value == model.inner:
                    return f"the unwrapped `{model.inner}` is also called"
        for class_def in self.facts.class_defs.values():
            if any(
                isinstance(base.value, cst.Name) and base.value.value == model.class_name
                for base in class_def.bases
            ):
                return f"`{model.class_name}` is subclassed in this file"
        if built != 1:
            return f"`{model.class_name}` has other instances in this file"
        return None

    def _decorator(self, block: Autocast) -> tuple[str, str | None] | None:
        """`torch.autocast("cuda", dtype=...)` spelled the file's way; the block's own
        call as written when the target torch predates `torch.autocast` (1.10)."""
        target = self.ctx.target_torch
        scope = self.facts.module_scope
        if target is not None and target < (1, 10):
            return code_for(block.call), None
        if block.device is None:
            return None
        spelled, needed = spelling_for("torch.autocast", scope)
        parts = [f'"{block.device}"']
        parts += [f"{k}={code_for(v)}" for k, v in block.args.items() if k != "device_type"]
        return f"{spelled}({', '.join(parts)})", needed


def _module_arg(call: cst.Call) -> cst.BaseExpression | None:
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        if (arg.keyword is None and index == 0) or (
            arg.keyword is not None and arg.keyword.value == "module"
        ):
            return arg.value
    return None


def _class_of(expr: cst.BaseExpression, scope: Scope, wrap: cst.Call) -> cst.ClassDef | None:
    """The class of this file the module is built from: `Net()`, or a name bound to
    `Net()` (moves such as `model = model.to(device)` and the wrap itself aside)."""
    built: list[cst.BaseExpression] = []
    if isinstance(expr, cst.Name):
        for binding in scope.lookup(expr.value) or []:
            if binding.value is None or binding.kind is BindingKind.IMPORT:
                return None
            value = _unmoved(binding.value)
            if value is wrap or (isinstance(value, cst.Name) and value.value == expr.value):
                continue
            built.append(value)
    else:
        built.append(_unmoved(expr))
    if len(built) != 1 or not isinstance(built[0], cst.Call):
        return None
    callee = built[0].func
    if isinstance(callee, cst.Name):
        bindings = scope.lookup(callee.value) or []
        if len(bindings) == 1 and isinstance(bindings[0].node, cst.ClassDef):
            return bindings[0].node
    return None


def _unmoved(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`Net()` for `Net().to(device)`; `model` for `model.cuda()`."""
    while (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in _MOVERS
    ):
        expr = expr.func.value
    return expr


def _autocast(call: cst.Call, scope: Scope) -> Autocast | None:
    cuda = resolves_to(call.func, scope, _CUDA_AUTOCAST)
    params = _CUDA_PARAMS if cuda else _PARAMS
    args: dict[str, cst.BaseExpression] = {}
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        name = arg.keyword.value if arg.keyword is not None else None
        if name is None and index < len(params):
            name = params[index]
        if name is None:
            return None
        args[name] = arg.value
    device: str | None = "cuda" if cuda else None
    if not cuda:
        given = args.get("device_type")
        if isinstance(given, cst.SimpleString):
            value = given.evaluated_value
            device = value if isinstance(value, str) else None
    return Autocast(call, scope, device, args)


def _arguments_text(block: Autocast | None) -> str:
    if block is None:
        return ""
    return repr(sorted((k, code_for(v)) for k, v in block.args.items()))


def _definition_time_safe(expr: cst.BaseExpression) -> bool:
    """A decorator argument is evaluated when the class is defined: literals and
    torch attributes (`torch.bfloat16`) can be, `args.amp` cannot."""
    if isinstance(expr, (cst.SimpleString, cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False", "None")
    dotted = dotted_name(expr)
    return dotted is not None and dotted.startswith("torch.")


def _forward(class_def: cst.ClassDef) -> cst.FunctionDef | None:
    body = class_def.body
    if not isinstance(body, cst.IndentedBlock):
        return None
    for statement in body.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == "forward":
            return statement
    return None


def _calls_in(node: cst.CSTNode) -> list[cst.Call]:
    out: list[cst.Call] = []
    stack = list(all_children(node))
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(current, cst.Call):
            out.append(current)
        stack.extend(all_children(current))
    return out
