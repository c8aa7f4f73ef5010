"""ACL301 manual-zero-grad-loop: a loop over a module's parameters (or an optimizer's
`param_groups`) that zero-fills every gradient. Page: rules/ACL301.md

The receiver analysis (`TorchObjects`) is shared with ACL302, which asks the same
question of `zero_grad` receivers: is this object built by torch, by this file, or
by something that is clearly not torch's?
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import CallSite, FileFacts, int_value, string_value
from accel_lint.names import LOCAL, BindingKind, Scope, qualified_names, resolves_to
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule

# Packages of the PyTorch project whose objects are torch modules and optimizers.
TORCH_FAMILY = ("torch", "torchvision", "torchaudio", "torchtext")
# Methods that return their receiver: `Net().to(device)` is still a `Net`.
_RETURNS_SELF = frozenset(
    {"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "train", "eval", "requires_grad_"}
)
ZEROS_LIKE = frozenset({"torch.zeros_like"})
# `set_to_none` exists from torch 1.7 (on both `Module` and `Optimizer`).
SET_TO_NONE_SINCE = (1, 7)

# What captures CUDA graphs (the modules' own spellings too: `torch.cuda.graphs.graph`).
_CUDA_GRAPHS = frozenset(
    {
        "torch.cuda.graph",
        "torch.cuda.graphs.graph",
        "torch.cuda.CUDAGraph",
        "torch.cuda.graphs.CUDAGraph",
        "torch.cuda.make_graphed_callables",
        "torch.cuda.graphs.make_graphed_callables",
        "torch.compiler.cudagraph_mark_step_begin",
    }
)
_COMPILE = frozenset({"torch.compile"})
_PARTIAL = frozenset({"functools.partial"})
_GRAPH_MODES = frozenset({"reduce-overhead", "max-autotune"})
# Methods that only torch's modules and optimizers answer to, among the objects a
# training script calls `zero_grad` on.
_TORCH_METHODS = (
    "step",
    "parameters",
    "named_parameters",
    "add_param_group",
    "train",
    "eval",
    "to",
    "cuda",
    "cpu",
    "half",
    "float",
    "modules",
    "named_modules",
    "children",
    "apply",
    "register_forward_hook",
    "requires_grad_",
)

# Callables of other libraries whose objects define their own `zero_grad` without a
# `set_to_none` parameter (passing it raises TypeError), read in their sources:
# apex's fused optimizers (`zero_grad(self)`, driven by their `set_grad_none` option)
# and FP16_Optimizer (`zero_grad(self, set_grads_to_None=...)`), DeepSpeed's engine
# (what `deepspeed.initialize` returns) and fused optimizers, horovod's
# `DistributedOptimizer` and fairseq's optimizers and trainer (`zero_grad(self)`).
# Everything else imported is unknown: `zero_grad(set_to_none=...)` is torch's API,
# and the wrappers that others build around torch (accelerate, Lightning, timm's
# factories, a project's own `utils.smart_optimizer`) forward it.
_OWN_ZERO_GRAD_BY_MODULE = {
    "apex.optimizers": (
        "FusedSGD",
        "FusedAdam",
        "FusedNovoGrad",
        "FusedLAMB",
        "FusedAdagrad",
        "FP16_Optimizer",
    ),
    "apex.optimizers.fused_sgd": ("FusedSGD",),
    "apex.optimizers.fused_adam": ("FusedAdam",),
    "apex.optimizers.fused_novograd": ("FusedNovoGrad",),
    "apex.optimizers.fused_lamb": ("FusedLAMB",),
    "apex.optimizers.fused_adagrad": ("FusedAdagrad",),
    "apex.optimizers.fp16_optimizer": ("FP16_Optimizer",),
    "apex.fp16_utils": ("FP16_Optimizer",),
    "apex.fp16_utils.fp16_optimizer": ("FP16_Optimizer",),
    "apex.contrib.optimizers": ("FusedLAMB", "FP16_Optimizer"),
    "apex.contrib.optimizers.fused_lamb": ("FusedLAMB",),
    "apex.contrib.optimizers.fp16_optimizer": ("FP16_Optimizer",),
    "deepspeed": ("initialize", "DeepSpeedEngine"),
    "deepspeed.runtime.engine": ("DeepSpeedEngine",),
    "deepspeed.ops.adam": ("FusedAdam",),
    "deepspeed.ops.adam.fused_adam": ("FusedAdam",),
    "deepspeed.ops.lion": ("FusedLion",),
    "deepspeed.ops.lion.fused_lion": ("FusedLion",),
    "horovod.torch": ("DistributedOptimizer",),
    "horovod.torch.optimizer": ("DistributedOptimizer",),
    "fairseq.trainer": ("Trainer",),
}
_OWN_ZERO_GRAD = frozenset(
    f"{module}.{name}" for module, names in _OWN_ZERO_GRAD_BY_MODULE.items() for name in names
)
_OWN_ZERO_GRAD_PACKAGES = ("fairseq.optim",)


class Kind(Enum):
    TORCH = "torch"  # built by torch, or by a class of this file that subclasses torch's
    OTHER = "other"  # clearly not torch's: see `_kind_of_names` and `_class_kind`
    UNKNOWN = "unknown"  # a parameter, an attribute, another library's object or factory


def _in_family(name: str, packages: Sequence[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ("abc", "builtins", "typing")))


def _in_stdlib(name: str) -> bool:
    return name.split(".")[0] in _STDLIB


def _not_torchs(name: str) -> bool:
    """Built by the standard library, or by a callable whose objects have a
    `zero_grad` of their own that takes no `set_to_none`."""
    return _in_stdlib(name) or name in _OWN_ZERO_GRAD or _in_family(name, _OWN_ZERO_GRAD_PACKAGES)


def _kind_of_names(names: frozenset[str]) -> Kind:
    if not names or LOCAL in names:
        return Kind.UNKNOWN
    if all(_in_family(n, TORCH_FAMILY) for n in names):
        return Kind.TORCH
    if all(_not_torchs(n) for n in names):
        return Kind.OTHER
    return Kind.UNKNOWN


@dataclass(frozen=True)
class _Ctor:
    """What one binding of a receiver was built by: a callee's qualified names, or a
    class of this file (with the scope its bases resolve in), or nothing we can see."""

    names: frozenset[str] = frozenset()
    class_def: cst.ClassDef | None = None
    class_scope: Scope | None = None


_UNSEEN = _Ctor()


class TorchObjects:
    """Answers "what is this receiver?" after the walk, for `opt`, `model`,
    `self.optimizer`: through its assignments, never through its spelling."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        # (class, attribute) -> values assigned to `self.<attribute>` in the class's methods
        self._self_attrs: dict[tuple[int, str], list[tuple[cst.BaseExpression, Scope]]] = {}
        self.accumulates_into_grads = False
        # receivers whose `param_groups` the file reads: torch's optimizer protocol
        self._param_groups_of: list[tuple[cst.BaseExpression, Scope]] = []

    def record_assign(self, node: cst.Assign) -> None:
        """Call during the walk for every `Assign`."""
        cls = self.facts.class_def
        if cls is None or self.facts.function is None:
            return
        for target in node.targets:
            t = target.target
            if (
                isinstance(t, cst.Attribute)
                and isinstance(t.value, cst.Name)
                and t.value.value == "self"
            ):
                key = (id(cls), t.attr.value)
                self._self_attrs.setdefault(key, []).append((node.value, self.facts.scope))

    def record_attribute(self, node: cst.Attribute) -> None:
        """Call during the walk for every `Attribute`."""
        if node.attr.value == "param_groups":
            self._param_groups_of.append((node.value, self.facts.scope))

    def record_aug_assign(self, node: cst.AugAssign) -> None:
        """Call during the walk for every `AugAssign`."""
        if isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)) and _is_a_grad(
            node.target
        ):
            self.accumulates_into_grads = True

    def adds_into_grads(self) -> bool:
        """Does the file add into `.grad` tensors by hand (`p.grad += g`,
        `p.grad.add_(g)`, `p.grad.copy_(g)`)? Then it needs them to be tensors, and
        zero-filling them is deliberate (parameter servers, federated averaging)."""
        if self.accumulates_into_grads:
            return True
        for method in _GRAD_WRITES:
            for site in self.facts.method_calls(method):
                func = site.node.func
                if isinstance(func, cst.Attribute) and _is_a_grad(func.value):
                    return True
        return False

    def file_imports_torch(self) -> bool:
        scopes = [self.facts.module_scope, *self.facts.scope_of.values()]
        return any(
            b.kind is BindingKind.IMPORT
            and b.target is not None
            and _in_family(b.target, ("torch",))
            for scope in scopes
            for bindings in scope.bindings.values()
            for b in bindings
        )

    def captures_cuda_graphs(self) -> bool:
        """Does the file capture CUDA graphs? A graph replays into the gradient
        tensors it captured, so they must stay allocated between steps: there,
        `set_to_none=False` (or a zero-filling loop) is required, not slow."""
        for site in self.facts.calls:
            names = qualified_names(site.node.func, site.scope)
            if not names or LOCAL in names:
                continue
            if names <= _CUDA_GRAPHS:
                return True
            if names <= _COMPILE and self._compiles_graphs(site):
                return True
            if names <= _PARTIAL and site.node.args:
                first = site.node.args[0]
                if (
                    first.keyword is None
                    and not first.star
                    and resolves_to(first.value, site.scope, _COMPILE)
                    and self._compiles_graphs(site)
                ):
                    return True
        for site in self.facts.method_calls("compile"):
            # `model.compile(mode=...)`: `nn.Module.compile` forwards to `torch.compile`
            func = site.node.func
            assert isinstance(func, cst.Attribute)
            if self.kind(func.value, site.scope) is not Kind.OTHER and self._compiles_graphs(site):
                return True
        return False

    def _compiles_graphs(self, site: CallSite) -> bool:
        """`mode="reduce-overhead"` or `"max-autotune"` (both capture CUDA graphs), or
        `options={"triton.cudagraphs": True}`, as the file reads it: a literal, a
        constant, a literal dict splatted in, an argparse option's default. A mode
        chosen at run time is the user's choice, not the file's design: with the
        default run capturing nothing, its findings stand."""
        for arg in site.node.args:
            items: list[tuple[str, cst.BaseExpression]] = []
            if arg.star == "**" and isinstance(arg.value, cst.Name):
                spread = self.facts.kwargs_dict(arg.value, site.scope)
                if spread is not None and spread.resolvable:
                    items = list(spread.values.items())
            elif arg.keyword is not None:
                items = [(arg.keyword.value, arg.value)]
            for key, value in items:
                if key == "mode" and self._graph_mode(value, site.scope):
                    return True
                if key == "options" and self._graph_options(value, site.scope):
                    return True
        return False

    def _graph_mode(self, value: cst.BaseExpression, scope: Scope) -> bool:
        option = self.facts.argparse_option_for(value)
        if option is not None and option.default is not None:
            value = option.default
        return string_value(self.facts.literal_value(value, scope)) in _GRAPH_MODES

    def _graph_options(self, value: cst.BaseExpression, scope: Scope) -> bool:
        flag: cst.BaseExpression | None = None
        if isinstance(value, cst.Dict):
            for element in value.elements:
                if (
                    isinstance(element, cst.DictElement)
                    and string_value(element.key) == "triton.cudagraphs"
                ):
                    flag = element.value
        elif isinstance(value, cst.Name):
            spread = self.facts.kwargs_dict(value, scope)
            if spread is not None and spread.resolvable:
                flag = spread.values.get("triton.cudagraphs")
        return isinstance(flag, cst.Name) and flag.value == "True"

    # -- what built a receiver ----------------------------------------------------

    def _ctors(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> list[_Ctor]:
        if depth > 4:
            return [_UNSEEN]
        if isinstance(expr, cst.Call):
            return [self._call_ctor(expr, scope)]
        if isinstance(expr, cst.Name) and expr.value == "self":
            # a method's `self` is an instance of its class
            cls_scope = _class_scope(scope)
            if cls_scope is not None and isinstance(cls_scope.node, cst.ClassDef):
                return [_Ctor(class_def=cls_scope.node, class_scope=cls_scope.parent)]
            return [_UNSEEN]
        if isinstance(expr, cst.Name):
            bindings = scope.lookup(expr.value)
            if not bindings:
                return [_UNSEEN]
            out: list[_Ctor] = []
            for b in bindings:
                owner = b.scope or scope
                if b.kind is BindingKind.IMPORT and b.target is not None:
                    out.append(_Ctor(names=frozenset({b.target})))
                elif b.value is not None:
                    out.extend(self._value_ctors(b.value, owner, depth))
                elif isinstance(b.node, cst.Param) and b.node.annotation is not None:
                    # `optimizer: torch.optim.Optimizer`: only torch's annotation is read
                    names = qualified_names(b.node.annotation.annotation, owner)
                    torch_typed = _kind_of_names(names) is Kind.TORCH
                    out.append(_Ctor(names=names) if torch_typed else _UNSEEN)
                elif isinstance(b.node, cst.Assign) and isinstance(b.node.value, cst.Call):
                    # `engine, opt, _, _ = deepspeed.initialize(...)`: only "clearly
                    # not torch's" is meaningful for one element of an unpacked result.
                    ctor = self._call_ctor(b.node.value, owner)
                    if _kind_of_names(ctor.names) is Kind.OTHER:
                        out.append(ctor)
                    else:
                        out.append(_UNSEEN)
                else:
                    out.append(_UNSEEN)
            return out
        if isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name) and expr.value.value == "self":
                cls_scope = _class_scope(scope)
                if cls_scope is not None and cls_scope.node is not None:
                    values = self._self_attrs.get((id(cls_scope.node), expr.attr.value))
                    if values:
                        return [c for v, s in values for c in self._value_ctors(v, s, depth)]
                return [_UNSEEN]
            names = qualified_names(expr, scope)
            if names and LOCAL not in names:
                return [_Ctor(names=names)]
        return [_UNSEEN]

    def _value_ctors(self, value: cst.BaseExpression, scope: Scope, depth: int) -> list[_Ctor]:
        if isinstance(value, cst.Call):
            return [self._call_ctor(value, scope)]
        if isinstance(value, (cst.Name, cst.Attribute)):
            return self._ctors(value, scope, depth + 1)
        return [_UNSEEN]

    def _call_ctor(self, call: cst.Call, scope: Scope) -> _Ctor:
        func = call.func
        while (
            isinstance(func, cst.Attribute)
            and func.attr.value in _RETURNS_SELF
            and isinstance(func.value, cst.Call)
        ):
            func = func.value.func
        if isinstance(func, cst.Name):
            bindings = scope.lookup(func.value)
            if bindings and len(bindings) == 1 and isinstance(bindings[0].node, cst.ClassDef):
                return _Ctor(class_def=bindings[0].node, class_scope=bindings[0].scope or scope)
        names = qualified_names(func, scope)
        if names and LOCAL not in names:
            return _Ctor(names=names)
        return _UNSEEN

    def _class_kind(self, cls: cst.ClassDef, scope: Scope, depth: int = 0) -> Kind:
        """TORCH when a base is torch's (through local classes too), OTHER when every
        base is local and plain (or has a `zero_grad` that is not torch's), UNKNOWN
        when a base comes from elsewhere."""
        if depth > 8:
            return Kind.UNKNOWN
        result = Kind.OTHER
        for base in cls.bases:
            if base.keyword is not None:
                continue
            expr = base.value
            if isinstance(expr, cst.Subscript):
                expr = expr.value  # `Generic[T]`
            if isinstance(expr, cst.Name):
                bindings = scope.lookup(expr.value)
                if bindings and len(bindings) == 1 and isinstance(bindings[0].node, cst.ClassDef):
                    base_scope = bindings[0].scope or scope
                    inner = self._class_kind(bindings[0].node, base_scope, depth + 1)
                    if inner is Kind.TORCH:
                        return Kind.TORCH
                    if inner is Kind.UNKNOWN:
                        result = Kind.UNKNOWN
                    continue
            names = qualified_names(expr, scope)
            if names and all(_not_torchs(n) for n in names):
                continue  # `object`, `abc.ABC`, `Generic[T]`, or a `zero_grad` not torch's
            if names and LOCAL not in names and all(_in_family(n, TORCH_FAMILY) for n in names):
                return Kind.TORCH
            # a base from another library may itself derive from torch (LightningModule)
            result = Kind.UNKNOWN
        return result

    def _ctor_kind(self, ctor: _Ctor) -> Kind:
        if ctor.class_def is not None and ctor.class_scope is not None:
            return self._class_kind(ctor.class_def, ctor.class_scope)
        return _kind_of_names(ctor.names)

    def own_zero_grad(self, expr: cst.BaseExpression, scope: Scope) -> str | None:
        """The name of a class of this file that `expr` may be an instance of and that
        defines its own `zero_grad` (directly or through a base of this file)."""
        for ctor in self._ctors(expr, scope):
            if ctor.class_def is not None and ctor.class_scope is not None:
                found = _defining_class(ctor.class_def, ctor.class_scope, "zero_grad")
                if found is not None:
                    return found
        return None

    def kind(self, expr: cst.BaseExpression, scope: Scope) -> Kind:
        """TORCH if any binding is torch-built; OTHER if some binding is clearly not
        torch and none is torch; UNKNOWN otherwise."""
        kinds = {self._ctor_kind(c) for c in self._ctors(expr, scope)}
        if Kind.TORCH in kinds:
            return Kind.TORCH
        if Kind.OTHER in kinds:
            return Kind.OTHER
        return Kind.UNKNOWN

    def used_as_torch(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        """Is `expr` used in the file the way torch's modules and optimizers are: called,
        stepped, its parameters or `param_groups` read, moved to a device, handed to torch
        (`scaler.step(opt)`, `StepLR(opt)`, `DDP(model)`)? For an object whose class
        cannot be seen, that is what says its `zero_grad` is torch's own."""
        for owner, owner_scope in self._param_groups_of:
            if same_object(owner, owner_scope, expr, scope):
                return True
        for method in _TORCH_METHODS:
            for site in self.facts.method_calls(method):
                func = site.node.func
                assert isinstance(func, cst.Attribute)
                if same_object(func.value, site.scope, expr, scope):
                    return True
        for site in self.facts.method_calls("step") + self.facts.method_calls("unscale_"):
            args = site.node.args
            if args and same_object(args[0].value, site.scope, expr, scope):
                return True
        for site in self.facts.calls:
            if same_object(site.node.func, site.scope, expr, scope):
                return True
            if any(same_object(a.value, site.scope, expr, scope) for a in site.node.args) and (
                _kind_of_names(qualified_names(site.node.func, site.scope)) is Kind.TORCH
            ):
                return True
        return False


def same_object(
    a: cst.BaseExpression, scope_a: Scope, b: cst.BaseExpression, scope_b: Scope
) -> bool:
    """Do two name chains denote the same variable (same bindings, or `self` of one class)?"""
    if isinstance(a, cst.Attribute) and isinstance(b, cst.Attribute):
        return a.attr.value == b.attr.value and same_object(a.value, scope_a, b.value, scope_b)
    if isinstance(a, cst.Call) and isinstance(b, cst.Call):
        # `rref.rpc_sync()`, `self.get_optimizer()`: an accessor, asked the same way
        return not a.args and not b.args and same_object(a.func, scope_a, b.func, scope_b)
    if isinstance(a, cst.Name) and isinstance(b, cst.Name) and a.value == b.value:
        if a.value == "self":
            ca, cb = _class_scope(scope_a), _class_scope(scope_b)
            return ca is not None and ca is cb
        found_a, found_b = scope_a.lookup(a.value), scope_b.lookup(b.value)
        return found_a is not None and found_a is found_b
    return False


def _defining_class(cls: cst.ClassDef, scope: Scope, method: str, depth: int = 0) -> str | None:
    if depth > 8:
        return None
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    if any(isinstance(s, cst.FunctionDef) and s.name.value == method for s in body):
        return cls.name.value
    for base in cls.bases:
        if base.keyword is None and isinstance(base.value, cst.Name):
            bindings = scope.lookup(base.value.value)
            if bindings and len(bindings) == 1 and isinstance(bindings[0].node, cst.ClassDef):
                found = _defining_class(
                    bindings[0].node, bindings[0].scope or scope, method, depth + 1
                )
                if found is not None:
                    return found
    return None


def _class_scope(scope: Scope) -> Scope | None:
    """The class whose method binds the `self` seen from `scope` (a closure inside a
    method sees the method's `self`)."""
    bindings = scope.lookup("self")
    if not bindings or len(bindings) != 1 or not isinstance(bindings[0].node, cst.Param):
        return None
    method = bindings[0].scope
    if method is None or method.parent is None or method.parent.kind != "class":
        return None
    return method.parent


# -- the loop body ------------------------------------------------------------------


_GRAD_WRITES = ("add_", "sub_", "copy_")


def _is_a_grad(expr: cst.BaseExpression) -> bool:
    """`<anything>.grad` or `<anything>.grad.data`."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        expr = expr.value
    return isinstance(expr, cst.Attribute) and expr.attr.value == "grad"


def _is_grad_of(expr: cst.BaseExpression, var: str, *, data: bool = False) -> bool:
    """`<var>.grad` (or `<var>.grad.data` when `data`)."""
    if data and isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        expr = expr.value
    return (
        isinstance(expr, cst.Attribute)
        and expr.attr.value == "grad"
        and isinstance(expr.value, cst.Name)
        and expr.value.value == var
    )


def _is_zero(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Integer):
        return int_value(expr) == 0
    if isinstance(expr, cst.Float):
        return float(expr.value.replace("_", "")) == 0.0
    return False


def _method_call(stmt: cst.BaseSmallStatement) -> tuple[cst.BaseExpression, str, cst.Call] | None:
    if (
        isinstance(stmt, cst.Expr)
        and isinstance(stmt.value, cst.Call)
        and isinstance(stmt.value.func, cst.Attribute)
    ):
        return stmt.value.func.value, stmt.value.func.attr.value, stmt.value
    return None


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _none_test(test: cst.BaseExpression, var: str, attr_chain: str = "") -> bool | None:
    """True for `<var>.grad<attr_chain> is not None`, False for `... is None`, else None."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    target = test.comparisons[0]
    left = test.left
    if attr_chain:
        if not (isinstance(left, cst.Attribute) and left.attr.value == attr_chain):
            return None
        left = left.value
    if not (_is_grad_of(left, var) and _is_none(target.comparator)):
        return None
    if isinstance(target.operator, cst.IsNot):
        return True
    if isinstance(target.operator, cst.Is):
        return False
    return None


def _statements(suite: cst.BaseSuite) -> Sequence[cst.BaseStatement | cst.BaseSmallStatement]:
    if isinstance(suite, cst.IndentedBlock):
        return suite.body
    assert isinstance(suite, cst.SimpleStatementSuite)
    return suite.body


@dataclass
class _Body:
    """What a loop body does with the gradient of its loop variable."""

    zeroes: bool = False  # some statement zero-fills `<var>.grad` on every iteration
    skips: bool = False  # zeroing that runs only for some parameters, or control flow
    extra: cst.CSTNode | None = None  # the first statement that is not part of zeroing


class _BodyReader:
    def __init__(self, var: str, scope: Scope) -> None:
        self.var = var
        self.scope = scope
        self.body = _Body()

    def _extra(self, node: cst.CSTNode) -> None:
        if self.body.extra is None:
            self.body.extra = node

    def read(self, statements: Sequence[cst.BaseStatement | cst.BaseSmallStatement]) -> None:
        for stmt in statements:
            if isinstance(stmt, cst.SimpleStatementLine):
                self.read(stmt.body)
            elif isinstance(stmt, cst.If):
                self._read_if(stmt)
            elif isinstance(stmt, (cst.BaseSmallStatement)):
                self._read_small(stmt)
            else:
                self._read_opaque(stmt)

    def _read_small(self, stmt: cst.BaseSmallStatement) -> None:
        if self.zeroing(stmt):
            self.body.zeroes = True
        elif self._housekeeping(stmt) or isinstance(stmt, cst.Pass):
            return
        elif isinstance(stmt, _CONTROL_FLOW):
            self.body.skips = True
        else:
            self._extra(stmt)

    def zeroing(self, stmt: cst.CSTNode) -> bool:
        """`g.zero_()`, `g.fill_(0)` for `g` = `<var>.grad[.data]`, or
        `<var>.grad = torch.zeros_like(<var>[.grad][.data])`."""
        var = self.var
        if isinstance(stmt, cst.BaseSmallStatement) and (call := _method_call(stmt)):
            receiver, method, node = call
            if not _is_grad_of(receiver, var, data=True):
                return False
            if method == "zero_":
                return not node.args
            if method == "fill_" and len(node.args) == 1:
                arg = node.args[0]
                return (arg.keyword is None or arg.keyword.value == "value") and _is_zero(arg.value)
            return False
        if (
            isinstance(stmt, cst.Assign)
            and len(stmt.targets) == 1
            and _is_grad_of(stmt.targets[0].target, var)
            and isinstance(stmt.value, cst.Call)
            and len(stmt.value.args) == 1
            and stmt.value.args[0].keyword is None
            and not stmt.value.args[0].star
            and resolves_to(stmt.value.func, self.scope, ZEROS_LIKE)
        ):
            like = stmt.value.args[0].value
            if isinstance(like, cst.Attribute) and like.attr.value == "data":
                like = like.value
            return _is_grad_of(like, var) or (isinstance(like, cst.Name) and like.value == var)
        return False

    def _housekeeping(self, stmt: cst.BaseSmallStatement) -> bool:
        """What torch's own zero_grad does before zeroing: detach the gradient from
        any graph it belongs to."""
        call = _method_call(stmt)
        if call is None or not _is_grad_of(call[0], self.var):
            return False
        method, node = call[1], call[2]
        if method == "detach_":
            return not node.args
        return (
            method == "requires_grad_"
            and len(node.args) == 1
            and isinstance(node.args[0].value, cst.Name)
            and node.args[0].value.value == "False"
        )

    def _read_if(self, node: cst.If) -> None:
        grad_set = _none_test(node.test, self.var)
        body = _statements(node.body)
        if grad_set is True:
            # `if p.grad is not None:` zeroes every gradient there is
            self.read(body)
            if node.orelse is not None and not _only_pass(node.orelse):
                # the else branch runs when there is no gradient: not zeroing, just more work
                if _has_control_flow(node.orelse):
                    self.body.skips = True
                else:
                    self._extra(node.orelse)
            return
        if grad_set is False and node.orelse is None and len(body) == 1 and _only_continue(body[0]):
            return  # `if p.grad is None: continue`
        if _none_test(node.test, self.var, "grad_fn") is not None and (
            node.orelse is None or isinstance(node.orelse, cst.Else)
        ):
            branches = [*body, *(_statements(node.orelse.body) if node.orelse else ())]
            if all(_small_statements(s) is not None for s in branches):
                smalls = [x for s in branches for x in _small_statements(s) or ()]
                # torch's own: detach_() when it has a grad_fn, else requires_grad_(False)
                if all(self._housekeeping(x) or isinstance(x, cst.Pass) for x in smalls):
                    return
        self._read_opaque(node)

    def _read_opaque(self, node: cst.CSTNode) -> None:
        """A statement we do not look into: zeroing inside it is conditional, and
        control flow inside it may skip the zeroing."""
        if self._contains_zeroing(node) or _has_control_flow(node):
            self.body.skips = True
        else:
            self._extra(node)

    def _contains_zeroing(self, node: cst.CSTNode) -> bool:
        return any(self.zeroing(n) for n in _small_nodes(node))


_CONTROL_FLOW = (cst.Continue, cst.Break, cst.Return, cst.Raise)


def _has_control_flow(node: cst.CSTNode) -> bool:
    return any(isinstance(n, _CONTROL_FLOW) for n in _small_nodes(node))


def _only_pass(node: cst.If | cst.Else) -> bool:
    if isinstance(node, cst.If):
        return False
    smalls = [_small_statements(s) for s in _statements(node.body)]
    return all(x is not None and all(isinstance(y, cst.Pass) for y in x) for x in smalls)


def _only_continue(stmt: cst.BaseStatement | cst.BaseSmallStatement) -> bool:
    smalls = _small_statements(stmt)
    return smalls is not None and len(smalls) == 1 and isinstance(smalls[0], cst.Continue)


def _small_statements(
    stmt: cst.BaseStatement | cst.BaseSmallStatement,
) -> Sequence[cst.BaseSmallStatement] | None:
    if isinstance(stmt, cst.SimpleStatementLine):
        return stmt.body
    if isinstance(stmt, cst.BaseSmallStatement):
        return [stmt]
    return None


def _small_nodes(node: cst.CSTNode) -> Iterator[cst.BaseSmallStatement]:
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.BaseSmallStatement):
            yield current
            continue
        stack.extend(current.children)


# -- the loop shapes ------------------------------------------------------------------


@dataclass
class _Loop:
    outer: cst.For  # where the finding is reported and what the fix replaces
    inner: cst.For  # the loop over single parameters
    var: str  # the parameter variable
    owner: cst.BaseExpression  # the module or optimizer `zero_grad` is called on
    what: str  # `model.parameters()`, `opt.param_groups`: for messages
    narrower: str | None = None  # why the owner's zero_grad would clear more than the loop
    outer_extra: cst.CSTNode | None = None
    outer_skips: bool = False


_PARAM_METHODS = {"parameters": 0, "named_parameters": 1}  # position of `recurse`


def _parameter_loop(node: cst.For) -> _Loop | None:
    """`for p in X.parameters():` / `for name, p in X.named_parameters():`"""
    it = node.iter
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute)):
        return None
    method = it.func.attr.value
    if method not in _PARAM_METHODS:
        return None
    target = node.target
    if method == "parameters":
        var = target.value if isinstance(target, cst.Name) else None
    else:
        var = None
        if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
            second = target.elements[1].value
            if isinstance(second, cst.Name) and isinstance(target.elements[0].value, cst.Name):
                var = second.value
    if var is None:
        return None
    return _Loop(
        node, node, var, it.func.value, code_for(it), _recurse_limit(it, _PARAM_METHODS[method])
    )


def _recurse_limit(call: cst.Call, position: int) -> str | None:
    """Why the call may iterate fewer parameters than the module's `zero_grad` clears."""
    value: cst.BaseExpression | None = None
    for index, arg in enumerate(call.args):
        if arg.star:
            return "its arguments cannot be read"
        if (arg.keyword is None and index == position) or (
            arg.keyword is not None and arg.keyword.value == "recurse"
        ):
            value = arg.value
    if value is None or (isinstance(value, cst.Name) and value.value == "True"):
        return None
    return f"it passes `recurse={code_for(value)}`, so only the module's own parameters are zeroed"


def _param_groups_loop(node: cst.For) -> _Loop | None:
    """`for g in opt.param_groups: for p in g["params"]: ...`"""
    it = node.iter
    if not (
        isinstance(it, cst.Attribute)
        and it.attr.value == "param_groups"
        and isinstance(node.target, cst.Name)
    ):
        return None
    group = node.target.value
    inner: cst.For | None = None
    others: list[cst.BaseStatement | cst.BaseSmallStatement] = []
    for stmt in _statements(node.body):
        if inner is None and isinstance(stmt, cst.For) and _is_params_of(stmt.iter, group):
            inner = stmt
        else:
            others.append(stmt)
    if inner is None or not isinstance(inner.target, cst.Name) or inner.asynchronous is not None:
        return None
    loop = _Loop(node, inner, inner.target.value, it.value, code_for(it))
    for other in others:
        smalls = _small_statements(other)
        if smalls is not None and all(isinstance(s, cst.Pass) for s in smalls):
            continue
        if _has_control_flow(other):
            loop.outer_skips = True
        elif loop.outer_extra is None:
            loop.outer_extra = other
    if node.orelse is not None and loop.outer_extra is None:
        loop.outer_extra = node.orelse
    return loop


def _is_params_of(expr: cst.BaseExpression, group: str) -> bool:
    if not (isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name)):
        return False
    if expr.value.value != group or len(expr.slice) != 1:
        return False
    index = expr.slice[0].slice
    return (
        isinstance(index, cst.Index)
        and isinstance(index.value, cst.SimpleString)
        and index.value.evaluated_value == "params"
    )


def _defines_zero_grad(function: cst.FunctionDef | None, owner: cst.BaseExpression) -> bool:
    return (
        function is not None
        and function.name.value == "zero_grad"
        and isinstance(owner, cst.Name)
        and owner.value == "self"
    )


# -- the fix ------------------------------------------------------------------


class _Comments(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[cst.Comment] = []

    def visit_Comment(self, node: cst.Comment) -> None:
        self.found.append(node)


def _replacement(loop: cst.For, call_code: str, module: cst.Module) -> cst.SimpleStatementLine:
    """`call_code` as a statement in place of `loop`, keeping every comment of the loop:
    its own leading lines, the header's comment as the trailing comment, and the
    comments of the body as lines above the call."""
    stmt = cst.parse_statement(call_code + module.default_newline, config=module.config_for_parsing)
    assert isinstance(stmt, cst.SimpleStatementLine)
    header: cst.TrailingWhitespace | None = None
    if isinstance(loop.body, cst.IndentedBlock):
        header = loop.body.header
    elif isinstance(loop.body, cst.SimpleStatementSuite):
        header = loop.body.trailing_whitespace
    collector = _Comments()
    loop.with_changes(leading_lines=()).visit(collector)
    inner = [c for c in collector.found if header is None or c is not header.comment]
    # `visit` on a copy keeps the comment nodes themselves (libcst reuses unchanged children)
    lines = [
        *loop.leading_lines,
        *(
            cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=c)
            for c in inner
        ),
    ]
    trailing = stmt.trailing_whitespace
    if header is not None and header.comment is not None:
        trailing = trailing.with_changes(whitespace=header.whitespace, comment=header.comment)
    return stmt.with_changes(leading_lines=lines, trailing_whitespace=trailing)


def _describe(node: cst.CSTNode) -> str:
    """A short quote of a statement for a message."""
    if isinstance(node, cst.Else):
        return "an `else:` block"
    lines = code_for(node).strip().splitlines()
    text = lines[0] if lines else ""
    if isinstance(node, cst.BaseCompoundStatement) or len(lines) > 1:
        text = text.rstrip(":") + ": ..." if text.endswith(":") else text + " ..."
    return f"`{text}`" if len(text) <= 48 else f"`{text[:45]}...`"


class ManualZeroGradLoop(Rule):
    code = "ACL301"
    name = "manual-zero-grad-loop"
    summary = "Loop that zero-fills every gradient instead of zero_grad(set_to_none=True)"
    fix_safety = FixSafety.UNSAFE
    equivalence = Equivalence.EXACT
    triggers = (b".grad",)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.objects = TorchObjects(self.facts)
        self._loops: list[tuple[cst.For, Scope, cst.FunctionDef | None]] = []

    def visit_For(self, node: cst.For) -> None:
        if node.asynchronous is None:
            self._loops.append((node, self.facts.scope, self.facts.function))

    def visit_Assign(self, node: cst.Assign) -> None:
        self.objects.record_assign(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.objects.record_aug_assign(node)

    def finish(self) -> None:
        if not self._loops or not self.objects.file_imports_torch():
            return
        if self.objects.adds_into_grads() or self.objects.captures_cuda_graphs():
            return
        for node, scope, function in self._loops:
            # `param_groups` of dicts with "params" is torch's optimizer protocol: the
            # owner is an optimizer unless it is clearly not torch's.
            loop = _param_groups_loop(node) or _parameter_loop(node)
            if loop is None or self.objects.kind(loop.owner, scope) is Kind.OTHER:
                continue
            if _defines_zero_grad(function, loop.owner):
                continue  # the class's own zero_grad: calling it there would recurse
            self._check(loop, scope)

    def _check(self, loop: _Loop, scope: Scope) -> None:
        reader = _BodyReader(loop.var, scope)
        reader.read(_statements(loop.inner.body))
        body = reader.body
        if not body.zeroes or body.skips or loop.outer_skips:
            return
        owner = code_for(loop.owner)
        message = (
            f"Gradients are zero-filled one by one in a loop over `{loop.what}`: "
            "a memset per parameter, and backward then adds into the zeros"
        )
        extra = body.extra or loop.outer_extra or loop.inner.orelse
        reason: str | None = None
        if extra is not None:
            reason = f"the loop also runs {_describe(extra)}"
        elif loop.narrower is not None:
            reason = loop.narrower
        elif (defining := self.objects.own_zero_grad(loop.owner, scope)) is not None:
            reason = f"`{defining}` defines its own `zero_grad`"
        else:
            target = self.ctx.settings.target_torch
            if target is not None and target < SET_TO_NONE_SINCE:
                version = ".".join(map(str, target))
                reason = (
                    f"torch {version} has no `set_to_none`; "
                    f"set `{loop.var}.grad = None` in the loop instead"
                )
        if reason is not None:
            self.report(loop.outer, f"{message} (no fix: {reason})")
            return
        call = f"{owner}.zero_grad(set_to_none=True)"
        fix = Fix(
            f"Replace the loop with `{call}`",
            {loop.outer: _replacement(loop.outer, call, self.ctx.module)},
            safety=self.fix_safety,
        )
        self.report(loop.outer, message, fix)
