"""Mixed precision as a file uses it, built once per file (`Precision.of(facts)`):

- every autocast (`torch.autocast`, `torch.amp.autocast`, the legacy
  `torch.cuda.amp.autocast` / `torch.cpu.amp.autocast`): its arguments by parameter
  name, device type and dtype (autocast's default dtype when none is given: float16
  on CUDA, bfloat16 on the CPU), whether it is enabled, and its form (a `with` item,
  a decorator, another call, or the class passed around uncalled);
- every GradScaler built in the file (all spellings, resolved through imports): the
  name or `self.` attribute it is kept in, and every use of it (its method calls
  `scale`/`step`/`update`/`unscale_`/`state_dict`/..., and the other places it goes:
  passed to a function, stored, compared), followed into the parameters of the
  file's functions it is passed to;
- whether the file trains in float32 alone: `cuda_autocasts()`,
  `half_cuda_autocasts()`, `mentions_autocast()` and `other_than_float32()` (autocast,
  a GradScaler, apex's amp, `.half()`, a float16 dtype, a default dtype, a switch
  named for it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import CallSite, FileFacts
from accel_lint.facts.literals import string_value
from accel_lint.facts.syntax import argument_for
from accel_lint.facts.tree import Tree
from accel_lint.names import (
    LOCAL,
    Binding,
    BindingKind,
    Scope,
    import_bindings,
    qualified_names,
)
from accel_lint.torch_api import (
    AUTOCAST,
    AUTOCAST_CPU_LEGACY,
    AUTOCAST_CUDA_LEGACY,
    AUTOCAST_DEFAULT_DTYPE,
    DTYPE_NAMES,
    GRAD_SCALER,
    GRAD_SCALER_CPU_LEGACY,
    GRAD_SCALER_CUDA_LEGACY,
    NON_FLOAT32_CASTS,
    NON_FLOAT32_DTYPES,
    SET_DEFAULT_DTYPE,
)

_AUTOCAST_PARAMS = ("device_type", "dtype", "enabled", "cache_enabled")
_LEGACY_AUTOCAST_PARAMS = ("enabled", "dtype", "cache_enabled")
_SCALER_PARAMS = (
    "device",
    "init_scale",
    "growth_factor",
    "backoff_factor",
    "growth_interval",
    "enabled",
)
_MAX_DEPTH = 3  # how many calls deep a scaler is followed into the file's functions
# Libraries that run the model in a precision their configuration chooses.
_MIXED_PRECISION_LIBRARIES = ("apex", "deepspeed", "accelerate")
# A name that switches the precision: `fp16`, `args.use_amp`, `hp.fp16_run`, `bf16`,
# `half_precision`, `mixed_precision`.
_PRECISION_SWITCH = re.compile(
    r"(?:^|_)(?:fp16|bf16|amp|half|mixed_precision|autocast)(?:$|_)", re.IGNORECASE
)


@dataclass(frozen=True)
class Autocast:
    """One autocast in the file.

    `form` is "with" (an item of a `with` statement), "decorator", "call" (any other
    call: `ctx = autocast()`) or "reference" (the class itself, uncalled). `dtype` is
    the dtype's name ("float16", "bfloat16", ...) when the file says it or autocast's
    default applies, None when it is only known at run time; `dtype_given` says the
    call names one. `enabled` is None when it is decided at run time.
    """

    node: cst.BaseExpression  # the call, or the reference
    scope: Scope
    qualified: str
    form: str
    args: dict[str, cst.BaseExpression] = field(default_factory=dict)
    readable: bool = True  # False with `*args` or an unknown positional argument
    device: str | None = None
    dtype: str | None = None
    dtype_given: bool = False
    enabled: bool | None = True
    with_node: cst.With | None = None
    decorated: cst.FunctionDef | None = None

    @property
    def legacy(self) -> bool:
        return self.qualified in AUTOCAST_CUDA_LEGACY or self.qualified in AUTOCAST_CPU_LEGACY


@dataclass(frozen=True)
class ScalerUse:
    """A place the file mentions a scaler: `method` is the method called on it
    (`scale`, `step`, ...) or None when the scaler itself goes somewhere (passed,
    stored, compared, returned). `call` is the method call."""

    reference: cst.BaseExpression
    scope: Scope
    method: str | None
    call: cst.Call | None = None


@dataclass
class Scaler:
    """A GradScaler the file builds. `handle` is where it is kept: ("name", binding)
    or ("attr", attribute name, class) for `self.<attr>`; None when the constructor's
    value goes elsewhere. `followed` is False when some mention of the handle could
    not be read (another binding of the same name, `other.<attr>`...). `maybe_none`:
    the handle holds None on some runs (`GradScaler() if amp else None`)."""

    call: cst.Call
    site: CallSite
    qualified: str
    args: dict[str, cst.BaseExpression]
    device: str | None
    enabled: cst.BaseExpression | None
    statement: cst.BaseStatement | None  # the assignment that keeps it
    handle: tuple[str, Binding] | tuple[str, str, cst.ClassDef] | None = None
    uses: list[ScalerUse] = field(default_factory=list)
    followed: bool = True
    maybe_none: bool = False
    # uses inside functions of the file it was passed to, by parameter
    passed: list[tuple[cst.Call, cst.FunctionDef, ScalerUse]] = field(default_factory=list)

    @property
    def legacy_device(self) -> str | None:
        if self.qualified in GRAD_SCALER_CUDA_LEGACY:
            return "cuda"
        if self.qualified in GRAD_SCALER_CPU_LEGACY:
            return "cpu"
        return None

    def disabled(self) -> bool:
        return isinstance(self.enabled, cst.Name) and self.enabled.value == "False"

    def all_uses(self) -> list[ScalerUse]:
        return [*self.uses, *(use for _, _, use in self.passed)]


class Precision:
    @classmethod
    def of(cls, facts: FileFacts) -> Precision:
        return facts.shared(cls)

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.calls = CallGraph.of(facts)
        self.autocasts: list[Autocast] = self._autocasts()
        self.scalers: list[Scaler] = [
            self._scaler(site) for site in facts.calls_resolving_to(GRAD_SCALER)
        ]

    @property
    def tree(self) -> Tree:
        """Built when first asked: a file that trains in float32 (what ACL207 asks
        about most) needs no second pass over its tree."""
        return Tree.of(self.facts)

    # -- autocast ---------------------------------------------------------------------

    def _autocasts(self) -> list[Autocast]:
        found: list[Autocast] = []
        seen: set[cst.CSTNode] = set()
        for site in self.facts.calls_resolving_to(AUTOCAST):
            found.append(self._autocast_call(site.node, site.scope))
            seen.add(site.node.func)
        for attr in ("autocast",):
            for node, scope in self._mentions(attr):
                if node in seen:
                    continue
                names = qualified_names(node, scope)
                if names and LOCAL not in names and names <= AUTOCAST:
                    found.append(self._autocast_reference(node, scope, min(names)))
        return found

    def _mentions(self, name: str) -> list[tuple[cst.BaseExpression, Scope]]:
        out: list[tuple[cst.BaseExpression, Scope]] = []
        for attribute, scope in self.facts.attributes_named(name):
            out.append((attribute, scope))
        if name in self.facts.text:  # a file that never spells the name reads it nowhere
            out.extend(self.tree.names(name))
        return out

    def _autocast_reference(
        self, node: cst.BaseExpression, scope: Scope, qualified: str
    ) -> Autocast:
        parent = self.tree.parent(node)
        if isinstance(parent, cst.Decorator):
            decorated = self.tree.parent(parent)
            function = decorated if isinstance(decorated, cst.FunctionDef) else None
            return self._with_defaults(
                Autocast(node, scope, qualified, "decorator", decorated=function)
            )
        return Autocast(node, scope, qualified, "reference", enabled=None)

    def _autocast_call(self, call: cst.Call, scope: Scope) -> Autocast:
        names = qualified_names(call.func, scope)
        qualified = min(names)
        legacy = names <= AUTOCAST_CUDA_LEGACY or names <= AUTOCAST_CPU_LEGACY
        params = _LEGACY_AUTOCAST_PARAMS if legacy else _AUTOCAST_PARAMS
        args, readable = _arguments(call, params)
        parent = self.tree.parent(call)
        form, with_node, decorated = "call", None, None
        if isinstance(parent, cst.WithItem):
            holder = self.tree.parent(parent)
            if isinstance(holder, cst.With):
                form, with_node = "with", holder
        elif isinstance(parent, cst.Decorator):
            form = "decorator"
            holder = self.tree.parent(parent)
            decorated = holder if isinstance(holder, cst.FunctionDef) else None
        autocast = Autocast(
            call, scope, qualified, form, args, readable, with_node=with_node, decorated=decorated
        )
        return self._with_defaults(autocast)

    def _with_defaults(self, autocast: Autocast) -> Autocast:
        args = autocast.args
        if autocast.qualified in AUTOCAST_CUDA_LEGACY:
            device: str | None = "cuda"
        elif autocast.qualified in AUTOCAST_CPU_LEGACY:
            device = "cpu"
        else:
            given = args.get("device_type")
            device = None
            if given is not None:
                device = string_value(self.facts.literal_value(given, autocast.scope))
        dtype: str | None = None
        dtype_given = "dtype" in args
        if dtype_given:
            dtype = self.dtype_of(args["dtype"], autocast.scope)
        elif autocast.readable and device is not None:
            dtype = AUTOCAST_DEFAULT_DTYPE.get(device)
        enabled: bool | None = True
        if "enabled" in args:
            value = self.facts.literal_value(args["enabled"], autocast.scope)
            enabled = _bool(value)
        if not autocast.readable:
            enabled = None if enabled is True else enabled
        return Autocast(
            autocast.node,
            autocast.scope,
            autocast.qualified,
            autocast.form,
            args,
            autocast.readable,
            device,
            dtype,
            dtype_given,
            enabled,
            autocast.with_node,
            autocast.decorated,
        )

    def dtype_of(self, expr: cst.BaseExpression, scope: Scope) -> str | None:
        """ "float16", "bfloat16", ... for `torch.bfloat16` or a name bound once to it."""
        for _ in range(3):
            names = qualified_names(expr, scope)
            chosen = {DTYPE_NAMES.get(n) for n in names}
            if len(chosen) == 1 and None not in chosen:
                return chosen.pop()
            if not isinstance(expr, cst.Name):
                return None
            bindings = scope.lookup(expr.value)
            if not bindings or len(bindings) != 1 or bindings[0].value is None:
                return None
            expr = bindings[0].value
            scope = bindings[0].scope or scope
        return None

    def autocasts_in(self, device: str | None = None) -> list[Autocast]:
        return [a for a in self.autocasts if device is None or a.device == device]

    def cuda_autocasts(self) -> list[Autocast]:
        """Autocasts that may be on for CUDA: on or decided by a flag, for `"cuda"` or
        for a device computed in a file that uses CUDA."""
        return [
            a
            for a in self.autocasts
            if a.enabled is not False
            and (a.device == "cuda" or (a.device is None and self.facts.touches_cuda))
        ]

    def half_cuda_autocasts(self) -> list[Autocast]:
        """CUDA autocasts in float16 (the default on CUDA) or bfloat16, or in a dtype
        chosen at run time: all but those that name float32."""
        return [a for a in self.cuda_autocasts() if a.dtype != "float32"]

    def mentions_autocast(self) -> bool:
        """The file calls, passes or imports autocast (any device, on or off)."""
        if self.autocasts:
            return True
        return any(t in AUTOCAST for t in import_bindings(self.facts.module_scope).values())

    def other_than_float32(self) -> bool:
        """Anything that says the model may not train in float32 alone: autocast, a
        GradScaler, apex/DeepSpeed/Accelerate (imported anywhere), `.half()` /
        `.bfloat16()` / `.double()`, a float16/bfloat16/float64 dtype, a changed
        default dtype, or a switch named for it (`args.fp16`, `use_amp`, `--bf16`)."""
        facts = self.facts
        if self.mentions_autocast() or self.scalers:
            return True
        if facts.calls_resolving_to(SET_DEFAULT_DTYPE):
            return True
        if any(facts.method_calls(m) for m in NON_FLOAT32_CASTS):
            return True
        for attr in ("float16", "half", "bfloat16", "float64", "double"):
            for node, scope in facts.attributes_named(attr):
                if qualified_names(node, scope) & NON_FLOAT32_DTYPES:
                    return True
        for binding in facts.all_bindings():
            if _PRECISION_SWITCH.search(binding.name):
                return True
            target = binding.target
            if binding.kind is BindingKind.IMPORT and target is not None:
                if target.split(".")[0] in _MIXED_PRECISION_LIBRARIES:
                    return True
                if target in NON_FLOAT32_DTYPES:
                    return True
        if any(_PRECISION_SWITCH.search(name) for name in facts.attribute_names()):
            return True
        return any(_PRECISION_SWITCH.search(option) for option in facts.argparse_options)

    # -- GradScaler ---------------------------------------------------------------------

    def _scaler(self, site: CallSite) -> Scaler:
        call = site.node
        names = qualified_names(call.func, site.scope)
        qualified = min(names)
        legacy = names <= GRAD_SCALER_CUDA_LEGACY or names <= GRAD_SCALER_CPU_LEGACY
        params = _SCALER_PARAMS[1:] if legacy else _SCALER_PARAMS
        args, _ = _arguments(call, params)
        device = None
        if legacy:
            device = "cuda" if names <= GRAD_SCALER_CUDA_LEGACY else "cpu"
        elif "device" in args:
            device = string_value(self.facts.literal_value(args["device"], site.scope))
        else:
            device = "cuda"
        scaler = Scaler(
            call, site, qualified, args, device, args.get("enabled"), self.tree.statement_of(call)
        )
        self._follow(scaler)
        return scaler

    def _follow(self, scaler: Scaler) -> None:
        value: cst.CSTNode = scaler.call
        parent = self.tree.parent(value)
        if isinstance(parent, cst.IfExp):
            other = parent.orelse if parent.body is value else parent.body
            if not (isinstance(other, cst.Name) and other.value == "None"):
                scaler.followed = False
                return
            scaler.maybe_none = True
            value = parent
            parent = self.tree.parent(parent)
        target: cst.BaseExpression | None = None
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and parent.value is value:
            target = parent.targets[0].target
        elif isinstance(parent, cst.AnnAssign) and parent.value is value:
            target = parent.target
        scope = scaler.site.scope
        if isinstance(target, cst.Name):
            bindings = scope.lookup(target.value) or []
            mine = [b for b in bindings if b.node is parent]
            if len(mine) != 1:
                scaler.followed = False
                return
            binding = mine[0]
            scaler.handle = ("name", binding)
            if len(bindings) != 1:
                others = [b for b in bindings if b is not binding]
                if all(_is_none(b) for b in others):
                    scaler.maybe_none = True
                else:
                    scaler.followed = False
            self._name_uses(scaler, binding, target, 0)
        elif (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
            and scaler.site.function is not None
            and self.calls.class_of(scaler.site.function) is not None
        ):
            cls = self.calls.class_of(scaler.site.function)
            assert cls is not None
            scaler.handle = ("attr", target.attr.value, cls)
            self._attribute_uses(scaler, target, cls)
        else:
            scaler.followed = False

    def _name_uses(
        self,
        scaler: Scaler,
        binding: Binding,
        bound: cst.CSTNode,
        depth: int,
        into: tuple[cst.Call, cst.FunctionDef] | None = None,
    ) -> None:
        for node, scope in self.tree.references(binding):
            if node is bound:
                continue
            parent = self.tree.parent(node)
            if isinstance(parent, (cst.Param, cst.AssignTarget)) or (
                isinstance(parent, cst.AnnAssign) and parent.target is node
            ):
                scaler.followed = False  # rebound elsewhere
                continue
            use = self._use(node, scope)
            if into is None:
                scaler.uses.append(use)
            else:
                scaler.passed.append((*into, use))
            if use.method is None:
                self._passed_on(scaler, node, scope, depth)

    def _attribute_uses(self, scaler: Scaler, target: cst.Attribute, cls: cst.ClassDef) -> None:
        for node, scope in self.facts.attributes_named(target.attr.value):
            if node is target:
                continue
            receiver = node.value
            own = isinstance(receiver, cst.Name) and receiver.value == "self"
            if not own or self._class_of_scope(scope) is not cls:
                scaler.followed = False
                continue
            parent = self.tree.parent(node)
            if isinstance(parent, cst.AssignTarget) or (
                isinstance(parent, cst.AnnAssign) and parent.target is node
            ):
                scaler.followed = False  # assigned again
                continue
            use = self._use(node, scope)
            scaler.uses.append(use)

    def _class_of_scope(self, scope: Scope) -> cst.ClassDef | None:
        current: Scope | None = scope
        while current is not None:
            if current.kind == "class" and isinstance(current.node, cst.ClassDef):
                return current.node
            current = current.parent
        return None

    def _use(self, node: cst.BaseExpression, scope: Scope) -> ScalerUse:
        parent = self.tree.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            grand = self.tree.parent(parent)
            if isinstance(grand, cst.Call) and grand.func is parent:
                return ScalerUse(node, scope, parent.attr.value, grand)
        return ScalerUse(node, scope, None)

    def _passed_on(self, scaler: Scaler, node: cst.Name, scope: Scope, depth: int) -> None:
        """Follow a scaler passed to a function of the file into its parameter."""
        arg = self.tree.parent(node)
        call = self.tree.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(arg, cst.Arg) or not isinstance(call, cst.Call) or arg.star:
            return
        if depth >= _MAX_DEPTH:
            return
        callee = self.calls.local_callee(call, scope)
        if callee is None:
            return
        func, offset = callee
        param = _parameter_for(func, call, arg, offset)
        inner = self.facts.scope_of.get(func)
        if param is None or inner is None:
            return
        bindings = inner.bindings.get(param.name.value)
        if bindings and len(bindings) == 1:
            self._name_uses(scaler, bindings[0], param.name, depth + 1, (call, func))

    # -- queries ------------------------------------------------------------------------

    def scaler_of(self, receiver: cst.BaseExpression) -> Scaler | None:
        """The scaler a method-call receiver (a mention found by `Scaler.uses`) denotes."""
        for scaler in self.scalers:
            if any(use.reference is receiver for use in scaler.all_uses()):
                return scaler
        return None


def _arguments(
    call: cst.Call, params: tuple[str, ...]
) -> tuple[dict[str, cst.BaseExpression], bool]:
    """The call's arguments by parameter name; False when some cannot be placed."""
    args: dict[str, cst.BaseExpression] = {}
    readable = True
    position = 0
    for arg in call.args:
        if arg.star:
            readable = False
            continue
        if arg.keyword is not None:
            args[arg.keyword.value] = arg.value
            continue
        if position < len(params):
            args[params[position]] = arg.value
        else:
            readable = False
        position += 1
    return args, readable


def _bool(expr: cst.BaseExpression) -> bool | None:
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def _is_none(binding: Binding) -> bool:
    return (
        binding.kind is BindingKind.LOCAL
        and isinstance(binding.value, cst.Name)
        and binding.value.value == "None"
    )


def _parameter_for(
    func: cst.FunctionDef, call: cst.Call, arg: cst.Arg, offset: int
) -> cst.Param | None:
    params = [*func.params.posonly_params, *func.params.params]
    if arg.keyword is not None:
        every = [*params, *func.params.kwonly_params]
        return next((p for p in every if p.name.value == arg.keyword.value), None)
    index = offset
    for other in call.args:
        if other is arg:
            break
        if other.keyword is None and not other.star:
            index += 1
    if (
        index < len(params)
        and argument_for(call, params[index].name.value, index, offset) is arg.value
    ):
        return params[index]
    return None
