"""ACL412 load-without-map-location: `torch.load(...)` without `map_location` in a
distributed script. Page: rules/ACL412.md"""

from __future__ import annotations

import re

import libcst as cst

from accel_lint.edits import add_keyword, code_for
from accel_lint.facts import CallSite
from accel_lint.facts.ranks import RankAnalysis
from accel_lint.facts.syntax import last_name
from accel_lint.names import Scope
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
        loads = self.facts.calls_resolving_to(TORCH_LOAD)
        placed = [site for site in loads if _chooses_location(site)]
        for site in loads:
            if _chooses_location(site) or ranks.guarded(site.guards, site.scope):
                continue  # one process loads: it is the one GPU 0 belongs to
            if self._loads_data(site.node) or self._own_file(site, ranks):
                continue
            if any(_other_branch(site, other) for other in placed):
                continue  # `if args.gpu is None: load(f) else: load(f, map_location=...)`
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

    def _own_file(self, site: CallSite, ranks: RankAnalysis) -> bool:
        """One file per rank (`f"queue{rank}.pth"`): each process reads back what it
        saved itself, onto its own device."""
        args = site.node.args
        if not args:
            return False
        keyword = args[0].keyword
        if keyword is not None and keyword.value != "f":
            return False
        return self._names_rank(args[0].value, site.scope, ranks, 0)

    def _names_rank(
        self, expr: cst.BaseExpression, scope: Scope, ranks: RankAnalysis, depth: int
    ) -> bool:
        if ranks.mentions_rank(expr, scope):
            return True
        if depth >= 2 or not isinstance(expr, cst.Name):
            return False
        bindings = scope.lookup(expr.value) or []
        return any(
            b.value is not None
            and b.scope is not None
            and self._names_rank(b.value, b.scope, ranks, depth + 1)
            for b in bindings
        )

    def _loads_data(self, call: cst.Call) -> bool:
        """A cache of preprocessed data (`features = torch.load(cached_features_file)`):
        built from CPU tensors, not a checkpoint of GPU tensors."""
        path = code_for(call.args[0].value) if call.args else ""
        return bool(_DATA.search(f"{path} {self._targets.get(call, '')}"))


def _other_branch(site: CallSite, other: CallSite) -> bool:
    """`other` is in the other branch of an `if` around `site`: the script chose where
    each branch loads to."""
    if other.function is not site.function:
        return False
    mine = {id(test): positive for test, positive in site.guards}
    return any(mine.get(id(test)) is (not positive) for test, positive in other.guards)


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
