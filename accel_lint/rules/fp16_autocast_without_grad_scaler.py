"""ACL314 fp16-autocast-without-grad-scaler: a CUDA autocast in float16 (autocast's
default on CUDA, or `dtype=torch.float16`) whose loss the file backpropagates, in a
file with no GradScaler: small float16 gradients flush to zero. Page: rules/ACL314.md

The loss is `.backward()`-ed in the same function and comes from the `with
autocast(...)` block: assigned inside it, or built after it from what was (directly,
or divided for accumulation); or autocast decorates a trained `forward`. A
file that scales its loss some other way (any GradScaler, an object named like a
scaler, `accelerator.backward(loss)`, Lightning's `manual_backward`) is not reported.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.order import Orders
from accel_lint.facts.precision import Autocast, Precision
from accel_lint.facts.tree import Tree
from accel_lint.rule import FixSafety, Rule
from accel_lint.torch_api import GRAD_SCALER


class Fp16AutocastWithoutGradScaler(Rule):
    code = "ACL314"
    name = "fp16-autocast-without-grad-scaler"
    summary = "float16 CUDA autocast around a loss that is backpropagated, with no GradScaler"
    fix_safety = FixSafety.NONE

    def finish(self) -> None:
        precision = Precision.of(self.facts)
        candidates = [
            a
            for a in precision.autocasts
            if a.form in ("with", "decorator")
            and a.enabled is not False
            and self._fp16_on_cuda(a, precision)
        ]
        if not candidates or self._scales_losses():
            return
        tree = Tree.of(self.facts)
        for autocast in candidates:
            if self._backpropagated(autocast, tree):
                self.report(
                    autocast.node,
                    "float16 autocast without a GradScaler: gradients smaller than float16's "
                    'range (about 6e-8) become zero; add `torch.amp.GradScaler("cuda")` around '
                    "backward and the optimizer step, or use `dtype=torch.bfloat16` on Ampere "
                    "or later",
                )

    def _fp16_on_cuda(self, autocast: Autocast, precision: Precision) -> bool:
        """float16 on CUDA: said so, or autocast's default on a device that is CUDA when
        the script runs on a GPU (`device_type=device.type`)."""
        if autocast.device == "cuda":
            return autocast.dtype == "float16"
        if autocast.device is not None or not autocast.readable:
            return False
        given = autocast.args.get("device_type")
        spelled = code_for(given) if given is not None else ""
        if not (spelled.endswith(".type") or "device" in spelled.lower()):
            return False
        if "dtype" not in autocast.args:
            return True
        return precision.dtype_of(autocast.args["dtype"], autocast.scope) == "float16"

    def _scales_losses(self) -> bool:
        """Anything in the file that may scale the loss: a GradScaler, an object or a
        function named like a scaler, a `.scale(...)` call, a framework's backward."""
        if self.facts.calls_resolving_to(GRAD_SCALER):
            return True
        for attr in ("GradScaler", "scale", "scale_loss", "manual_backward"):
            if self.facts.attributes_named(attr) or self.facts.method_calls(attr):
                return True
        if self.facts.method_calls("backward") and any(
            site.node.args
            and isinstance(site.node.func, cst.Attribute)
            and site.node.func.attr.value == "backward"
            and not isinstance(site.node.func.value, (cst.Name, cst.BinaryOperation))
            for site in self.facts.method_calls("backward")
        ):
            return True  # `accelerator.backward(loss)`, `engine.backward(loss)`
        tree = Tree.of(self.facts)
        return any("scaler" in name.lower() for name in tree.spelled())

    def _backpropagated(self, autocast: Autocast, tree: Tree) -> bool:
        """The loss `.backward()`-ed in the same function comes from the block: a name
        assigned in it, or built after it from one (`out = model(x)` inside, `loss =
        criterion(out, y)` after). A decorated function (`@torch.autocast(...)` on a
        module's `forward`) is backpropagated when it is a `forward` or the file calls
        it, and the file runs a backward pass."""
        if autocast.form == "decorator":
            return self._decorated_trains(autocast)
        block = autocast.with_node
        if block is None:
            return False
        function = self._function_of(block, tree)
        orders = Orders.of(self.facts)
        for site in self.facts.method_calls("backward"):
            if site.function is not function:
                continue
            func = site.node.func
            assert isinstance(func, cst.Attribute)
            if orders.comes_from(func.value, site.scope, block.body):
                return True
        return False

    def _decorated_trains(self, autocast: Autocast) -> bool:
        decorated = autocast.decorated
        if decorated is None or not self.facts.method_calls("backward"):
            return False
        if decorated.name.value == "forward":
            return True
        graph = CallGraph.of(self.facts)
        trains = {site.function for site in self.facts.method_calls("backward") if site.function}
        return any(site.function in trains for site in graph.calls_to(decorated))

    def _function_of(self, node: cst.CSTNode, tree: Tree) -> cst.FunctionDef | None:
        for ancestor in tree.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef):
                return ancestor
        return None
