"""ACL408 unsynced-batchnorm: DistributedDataParallel on a model whose BatchNorm layers
are not converted to SyncBatchNorm. Page: rules/ACL408.md"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import CallSite
from accel_lint.facts.wrappers import Wrappers
from accel_lint.names import LOCAL, Scope, qualified_names, resolves_to, spelling_for
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import (
    BATCH_NORM_MODEL,
    CONVERT_SYNC_BATCHNORM,
    DDP,
    LOCAL_BATCH_NORM,
    SEQUENTIAL,
)

_CONVERT = "torch.nn.SyncBatchNorm.convert_sync_batchnorm"
_MAX_DEPTH = 4
_BATCH_NORM_NAMES = frozenset(name.rpartition(".")[2] for name in LOCAL_BATCH_NORM)
_MESSAGE = (
    "The model handed to DistributedDataParallel has BatchNorm layers: each process "
    "normalizes with the statistics of its own share of the batch; with a few samples per "
    "GPU, `SyncBatchNorm.convert_sync_batchnorm` computes them over the global batch"
)


class UnsyncedBatchnorm(Rule):
    code = "ACL408"
    name = "unsynced-batchnorm"
    summary = (
        "DistributedDataParallel on a model with BatchNorm layers not converted to SyncBatchNorm"
    )
    fix_safety = FixSafety.UNSAFE
    verification = Verification(
        Equivalence.STATISTICAL,
        needs_accelerator="SyncBatchNorm synchronizes statistics on GPUs only (on CPU it raises)",
    )

    def finish(self) -> None:
        sites = self.facts.calls_resolving_to(DDP)
        if not sites:
            return
        self._wrappers = Wrappers.of(self.facts)
        self._class_calls: dict[cst.ClassDef, list[CallSite]] | None = None
        self._verdicts: dict[cst.ClassDef, bool] = {}
        for site in sites:
            module = _module_argument(site.node)
            if module is None:
                continue
            builders = list(self._wrappers.builders(module, site.scope))
            if any(
                resolves_to(call.func, scope, CONVERT_SYNC_BATCHNORM) for call, scope in builders
            ):
                continue  # converted (on some runs: the script's own choice)
            if not any(self._builds_batch_norm(call, scope, 0) for call, scope in builders):
                continue
            self._report(site, module)

    def _report(self, site: CallSite, module: cst.BaseExpression) -> None:
        if not _on_gpus(site.node):
            reason = (
                "SyncBatchNorm runs on GPUs only, and this DistributedDataParallel does not "
                "name its device (`device_ids`)"
            )
            self.report(site.node, _MESSAGE, no_fix_reason=reason)
            return
        convert, needed = spelling_for(_CONVERT, site.scope)
        converted = cst.parse_expression(f"{convert}({code_for(module)})")
        fix = Fix(
            "Convert the BatchNorm layers to SyncBatchNorm before wrapping",
            {module: converted},
            (needed,) if needed else (),
        )
        self.report(site.node, _MESSAGE, fix)

    # -- does it build batch norms? -----------------------------------------------------

    def _builds_batch_norm(self, call: cst.Call, scope: Scope, depth: int) -> bool:
        """`call` builds a module with torch.nn batch norms: a batch norm itself, a
        torchvision model made with them, a `Sequential` holding one, or a class of
        this file that creates one (through its own classes too)."""
        if depth > _MAX_DEPTH:
            return False
        names = qualified_names(call.func, scope)
        if names and LOCAL not in names:
            if names <= LOCAL_BATCH_NORM or all(BATCH_NORM_MODEL.match(n) for n in names):
                return True
            return names <= SEQUENTIAL and any(
                isinstance(arg.value, cst.Call)
                and self._builds_batch_norm(arg.value, scope, depth + 1)
                for arg in call.args
            )
        cls = _local_class(call.func, scope)
        return cls is not None and self._class_has_batch_norm(cls, depth + 1)

    def _class_has_batch_norm(self, cls: cst.ClassDef, depth: int) -> bool:
        found = self._verdicts.get(cls)
        if found is not None:
            return found
        self._verdicts[cls] = False  # a class that builds itself is not a batch norm
        found = (
            any(
                self._builds_batch_norm(site.node, site.scope, depth)
                for site in self._calls_in(cls)
            )
            or any(self._class_has_batch_norm(base, depth + 1) for base in self._local_bases(cls))
            or self._refers_to_batch_norm(cls)
        )
        self._verdicts[cls] = found
        return found

    def _calls_in(self, cls: cst.ClassDef) -> list[CallSite]:
        """Calls made inside the class's body and methods."""
        if self._class_calls is None:
            self._class_calls = {}
            for site in self.facts.calls:
                scope: Scope | None = site.scope
                while scope is not None:
                    if scope.kind == "class" and isinstance(scope.node, cst.ClassDef):
                        self._class_calls.setdefault(scope.node, []).append(site)
                    scope = scope.parent
        return self._class_calls.get(cls, [])

    def _local_bases(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        scope = self.facts.scope_of.get(cls)
        outer = scope.parent if scope is not None else None
        if outer is None:
            return []
        return [
            found
            for base in cls.bases
            if base.keyword is None and (found := _local_class(base.value, outer)) is not None
        ]

    def _refers_to_batch_norm(self, cls: cst.ClassDef) -> bool:
        """`norm_layer = nn.BatchNorm2d` (a default or an assignment) in the class: the
        layer is built through the variable. `isinstance(m, nn.BatchNorm2d)` is no use."""
        tests = {
            arg.value
            for site in self._calls_in(cls)
            if resolves_to(site.node.func, site.scope, {"builtins.isinstance"})
            for arg in site.node.args
        }
        for name in _BATCH_NORM_NAMES:
            for node, scope in self.facts.attributes_named(name):
                if node in tests or not _inside(scope, cls):
                    continue
                if resolves_to(node, scope, LOCAL_BATCH_NORM) and not _in_tuple(node, tests):
                    return True
        return False


def _converts(call: cst.Call, scope: Scope) -> bool:
    return resolves_to(call.func, scope, CONVERT_SYNC_BATCHNORM)


def _module_argument(call: cst.Call) -> cst.BaseExpression | None:
    for position, arg in enumerate(call.args):
        if arg.star:
            return None
        if (arg.keyword is None and position == 0) or (
            arg.keyword is not None and arg.keyword.value == "module"
        ):
            return arg.value
    return None


def _on_gpus(call: cst.Call) -> bool:
    """`device_ids=[...]` that is always a list: DDP accepts it for GPU modules only."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "device_ids":
            value = arg.value
            return isinstance(value, (cst.List, cst.Tuple)) and bool(value.elements)
    return False


def _local_class(func: cst.BaseExpression, scope: Scope) -> cst.ClassDef | None:
    if not isinstance(func, cst.Name):
        return None
    bindings = scope.lookup(func.value)
    if bindings and len(bindings) == 1 and isinstance(bindings[0].node, cst.ClassDef):
        return bindings[0].node
    return None


def _inside(scope: Scope, cls: cst.ClassDef) -> bool:
    current: Scope | None = scope
    while current is not None:
        if current.node is cls:
            return True
        current = current.parent
    return False


def _in_tuple(node: cst.CSTNode, tests: set[cst.BaseExpression]) -> bool:
    """`isinstance(m, (nn.BatchNorm2d, nn.GroupNorm))`."""
    return any(
        isinstance(test, (cst.Tuple, cst.List))
        and any(element.value is node for element in test.elements)
        for test in tests
    )
