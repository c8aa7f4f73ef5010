"""ACL401 data-parallel: `torch.nn.DataParallel`, and its migration to
DistributedDataParallel under torchrun. Page: rules/ACL401.md

The fix is a codemod in small steps, each a pure function from the surveyed
`Shape` of the script to a `Plan` of edits (one module per concern):
`process_group` (set up from torchrun's environment, destroy at the end),
`wrap` (DataParallel -> DistributedDataParallel), `samplers` (DistributedSampler,
per-process batch, `set_epoch`), `rank_zero` (saves and prints from rank 0),
`directories` (directories every process may create).
`plan.to_fix` composes them into one `Fix`.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.names import Scope, resolves_to
from accel_lint.rule import Equivalence, Fix, FixSafety, Launcher, Rule, Verification
from accel_lint.rules.data_parallel.directories import tolerate_existing
from accel_lint.rules.data_parallel.equivalence import equivalence
from accel_lint.rules.data_parallel.imagenet import imagenet_fix
from accel_lint.rules.data_parallel.own_ddp import own_ddp_fix
from accel_lint.rules.data_parallel.plan import merge, to_fix
from accel_lint.rules.data_parallel.process_group import set_up_and_tear_down
from accel_lint.rules.data_parallel.rank_zero import only_rank_zero
from accel_lint.rules.data_parallel.samplers import shard_training_data
from accel_lint.rules.data_parallel.shape import NoFix, Reference, Shape
from accel_lint.rules.data_parallel.survey import survey_script
from accel_lint.rules.data_parallel.tree import Tree
from accel_lint.rules.data_parallel.wrap import exclusive_wraps, several_wraps, wrap_in_ddp
from accel_lint.torch_api import DATA_PARALLEL

__all__ = ["DataParallel"]

_WHY = (
    "DataParallel drives every GPU from one process: its threads contend for the GIL, the "
    "model is copied to each GPU at every step and outputs are gathered on the first one"
)


class DataParallel(Rule):
    code = "ACL401"
    name = "data-parallel"
    summary = "torch.nn.DataParallel: one process for all GPUs (use DistributedDataParallel)"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(
        Equivalence.CLOSE,
        launcher=Launcher.TORCHRUN,
        needs_accelerator="DistributedDataParallel beats DataParallel with one process per GPU; "
        "on CPU, DataParallel is a plain call and DDP adds a second process and gloo all-reduces",
    )

    def setup(self) -> None:
        self._aliases = {"DataParallel"}  # names the file may import DataParallel as
        self._references: list[tuple[cst.BaseExpression, Scope]] = []
        self._bases: set[cst.CSTNode] = set()

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            if (
                isinstance(alias.name, cst.Name)
                and alias.name.value == "DataParallel"
                and alias.asname is not None
                and isinstance(alias.asname.name, cst.Name)
            ):
                self._aliases.add(alias.asname.name.value)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self._aliases:
            self._references.append((node, self.facts.scope))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "DataParallel":
            self._references.append((node, self.facts.scope))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bases.update(base.value for base in node.bases)

    def finish(self) -> None:
        references = [
            Reference(node, scope)
            for node, scope in self._references
            if resolves_to(node, scope, DATA_PARALLEL)
        ]
        for ref in references:
            if ref.node in self._bases:
                self.report(
                    ref.node,
                    _WHY,
                    no_fix_reason="a subclass of DataParallel must be ported to "
                    "DistributedDataParallel by hand",
                )
        calls = [s for s in self.facts.calls if resolves_to(s.node.func, s.scope, DATA_PARALLEL)]
        if not calls:
            return
        tree = Tree(self.ctx.module)
        if self.facts.is_distributed:
            try:
                # pytorch/examples' ImageNet script and its copies: one fix for its wraps
                template = imagenet_fix(calls, self.facts, tree)
            except NoFix as refused:
                for site in calls:
                    self.report(site.node, _WHY, no_fix_reason=str(refused))
                return
            if template is not None:
                for site in calls:
                    self.report(site.node, _WHY, template, equivalence=Equivalence.STATISTICAL)
                return
            # a script with its own distributed path: each fallback wrap is dropped alone
            for site in calls:
                try:
                    fix = own_ddp_fix(site, self.facts, tree)
                except NoFix as refused:
                    self.report(site.node, _WHY, no_fix_reason=str(refused))
                    continue
                self.report(site.node, _WHY, fix, equivalence=Equivalence.STATISTICAL)
            return
        branches: list[cst.Call] = []
        if len(calls) > 1:
            # the same model wrapped in the branches of one `if` is one wrap
            if not exclusive_wraps([s.node for s in calls], tree):
                many = several_wraps([(s.node, s.function) for s in calls], tree)
                for site in calls:
                    self.report(site.node, _WHY, no_fix_reason=many)
                return
            branches = [s.node for s in calls[1:]]
        site = calls[0]
        try:
            shape = survey_script(site, self.facts, tree, references, branches)
        except NoFix as reason:
            for wrapped in calls:
                self.report(wrapped.node, _WHY, no_fix_reason=str(reason))
            return
        fix = self._fix(shape)
        self.report(site.node, _WHY, fix, equivalence=equivalence(shape, self.facts))
        for other in branches:
            # the one fix migrates every branch; each call is a finding of its own
            self.report(other, _WHY, fix, equivalence=equivalence(shape, self.facts))

    def _fix(self, shape: Shape) -> Fix:
        plan = merge(
            [
                set_up_and_tear_down(shape),
                wrap_in_ddp(shape),
                shard_training_data(shape),
                only_rank_zero(shape),
                tolerate_existing(shape),
                shape.names.imports,
            ]
        )
        devices = shape.wrap.devices
        count = devices if devices is not None and devices.isdigit() else "<GPUs>"
        launch = f"torchrun --nproc_per_node={count}"
        message = f"Migrate to DistributedDataParallel (launch with `{launch}`)"
        return to_fix(shape.tree, plan, message)
