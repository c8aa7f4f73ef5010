"""ACL207 fp32-matmul-precision-default: a file that trains on CUDA in float32 and never
chooses a float32 matmul precision, so TF32 tensor cores stay unused.
Page: rules/ACL207.md"""

from __future__ import annotations

from accel_lint.facts.calls import CallGraph
from accel_lint.facts.entry import Entry
from accel_lint.facts.file import CallSite
from accel_lint.facts.precision import Precision
from accel_lint.facts.syntax import last_name
from accel_lint.facts.training import Training
from accel_lint.names import qualified_names
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import (
    ALLOW_TF32_SINCE,
    CUDNN_FLAGS,
    FLOAT32_MATMUL_PRECISION_SINCE,
    SET_FLOAT32_MATMUL_PRECISION,
    TF32_ATTRIBUTES,
)


class Fp32MatmulPrecisionDefault(Rule):
    code = "ACL207"
    name = "fp32-matmul-precision-default"
    summary = "Float32 training on CUDA that never chooses a float32 matmul precision (TF32)"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(
        Equivalence.CLOSE,
        needs_accelerator="TF32 tensor cores exist only on NVIDIA GPUs from Ampere on",
    )

    def finish(self) -> None:
        facts = self.facts
        if not facts.touches_cuda:
            return
        training = Training.of(facts)
        steps = training.optimizer_steps() if training.trains else []
        steps = [s for s in steps if not self._in_test(s)]
        if not steps or self._chosen() or Precision.of(facts).other_than_float32():
            return
        message = (
            "Training runs in float32 on CUDA and never chooses a float32 matmul precision: "
            "matmuls run in full float32, leaving the TF32 tensor cores of Ampere and later "
            "GPUs unused"
        )
        target = self.ctx.target_torch
        if target is not None and target < ALLOW_TF32_SINCE:
            reason = "TF32 can be chosen from torch 1.7 on, and the target torch is older"
            self.report(steps[0].node, message, no_fix_reason=reason)
            return
        if target is None or target >= FLOAT32_MATMUL_PRECISION_SINCE:
            module, template = "torch", '{}.set_float32_matmul_precision("high")'
        else:
            module, template = "torch.backends.cuda.matmul", "{}.allow_tf32 = True"
        entry = Entry.of(facts)
        insertion = entry.insertion(module, template)
        if insertion is None:
            reason = entry.reason or "no place for the setting"
            self.report(steps[0].node, message, no_fix_reason=reason)
            return
        fix = Fix(
            f"Add `{insertion.code}` {insertion.where}", insertion.replacements, insertion.imports
        )
        self.report(steps[0].node, message, fix)

    def _in_test(self, site: CallSite) -> bool:
        """A step in a test (`def test_*`, a method of a `*Test*` class): tests pin
        their numerics on purpose and are not training runs."""
        function = site.function
        if function is None:
            return False
        if function.name.value.startswith("test"):
            return True
        cls = CallGraph.of(self.facts).class_of(function)
        return cls is not None and "Test" in cls.name.value

    def _chosen(self) -> bool:
        """Any explicit choice: `set_float32_matmul_precision(...)`, a TF32 switch or an
        `fp32_precision` setting under `torch.backends` (read or written), cuDNN's
        flags, or a helper of the project named for it (`enable_tf32()`)."""
        facts = self.facts
        if facts.calls_resolving_to(SET_FLOAT32_MATMUL_PRECISION) or facts.calls_resolving_to(
            CUDNN_FLAGS
        ):
            return True
        for attr in TF32_ATTRIBUTES:
            for node, scope in facts.attributes_named(attr):
                names = qualified_names(node, scope)
                if names and all(n.startswith("torch.backends.") for n in names):
                    return True
        for site in facts.calls:
            name = (last_name(site.node.func) or "").lower()
            if "tf32" in name or "matmul_precision" in name:
                return True
        return False
