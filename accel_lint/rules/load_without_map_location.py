"""ACL412 load-without-map-location: `torch.load(...)` without `map_location` in a
distributed script. Page: rules/ACL412.md"""

from __future__ import annotations

import re

import libcst as cst

from accel_lint.edits import add_keyword, code_for
from accel_lint.facts import CallSite
from accel_lint.facts.ranks import RankAnalysis
from accel_lint.facts.syntax import last_name
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import TORCH_LOAD

# Names of cached datasets, features and vocabularies: what scripts load besides checkpoints.
_DATA = re.compile(r"cache|feature|dataset|example|vocab|tokeni[sz]|label", re.IGNORECASE)
# torch.load(f, map_location=None, pickle_module=..., *, weights_only=..., ...)
_MAP_LOCATION_INDEX = 1


class LoadWithoutMapLocation(Rule):
    code = "ACL412"
    name = "load-without-map-location"
    summary = "torch.load without map_location in a distributed script: every rank loads onto GPU 0"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(
        Equivalence.EXACT,
        needs_accelerator="only checkpoints saved from a GPU are restored onto one",
    )

    def setup(self) -> None:
        self._targets: dict[cst.Call, str] = {}  # `features = torch.load(...)`: "features"

    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Call) and last_name(node.value.func) == "load":
            self._targets[node.value] = " ".join(code_for(t.target) for t in node.targets)

    def finish(self) -> None:
        if not self.facts.is_distributed:
            return
        ranks = RankAnalysis.of(self.facts)
        for site in self.facts.calls_resolving_to(TORCH_LOAD):
            if _chooses_location(site) or ranks.guarded(site.guards, site.scope):
                continue  # one process loads: it is the one GPU 0 belongs to
            if self._loads_data(site.node):
                continue
            call = site.node
            self.report(
                call,
                "Every process runs this `torch.load` without `map_location`: tensors saved "
                "from a GPU are restored onto that GPU (usually GPU 0) in every rank, which "
                "fills its memory and slows every rank down",
                Fix(
                    'Load onto the CPU: `map_location="cpu"`',
                    {call: add_keyword(call, "map_location", '"cpu"')},
                ),
            )

    def _loads_data(self, call: cst.Call) -> bool:
        """A cache of preprocessed data (`features = torch.load(cached_features_file)`):
        built from CPU tensors, not a checkpoint of GPU tensors."""
        path = code_for(call.args[0].value) if call.args else ""
        return bool(_DATA.search(f"{path} {self._targets.get(call, '')}"))


def _chooses_location(site: CallSite) -> bool:
    """`map_location=` given (as keyword or second positional argument), or arguments we
    cannot read (`*args`, `**kwargs`)."""
    positional = 0
    for arg in site.node.args:
        if arg.star:
            return True
        if arg.keyword is None:
            positional += 1
        elif arg.keyword.value == "map_location":
            return True
    return positional > _MAP_LOCATION_INDEX
