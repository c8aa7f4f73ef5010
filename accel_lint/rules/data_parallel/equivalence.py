"""How closely the migrated script reproduces the original (ACL401's page):
with 2 gloo processes on CPU, the mean of the ranks' losses matches the
original loss per step (measured: 2.4e-7) unless something random differs
between one process and several: shuffling (DistributedSampler draws its own
permutation), dropout masks drawn per rank, BatchNorm statistics per shard, or
random numbers drawn while loading a sample."""

from __future__ import annotations

from accel_lint.facts import FileFacts
from accel_lint.names import qualified_names
from accel_lint.rule import Equivalence
from accel_lint.rules.data_parallel.shape import Shape

_NN = ("torch.nn.", "torch.nn.modules.")
_PER_RANK = frozenset(
    {
        "BatchNorm1d",
        "BatchNorm2d",
        "BatchNorm3d",
        "LazyBatchNorm1d",
        "LazyBatchNorm2d",
        "LazyBatchNorm3d",
        "SyncBatchNorm",
        "Dropout",
        "Dropout1d",
        "Dropout2d",
        "Dropout3d",
        "AlphaDropout",
        "FeatureAlphaDropout",
        "functional.dropout",
        "functional.dropout1d",
        "functional.dropout2d",
        "functional.dropout3d",
        "functional.alpha_dropout",
        "functional.feature_alpha_dropout",
        "functional.batch_norm",
    }
)
_RANDOM = ("random.", "numpy.random.", "torch.rand", "torch.normal", "torch.bernoulli")


def equivalence(shape: Shape, facts: FileFacts) -> Equivalence:
    if any(loader.shuffle != "False" for loader in shape.loaders):
        return Equivalence.STATISTICAL
    for site in facts.calls:
        names = qualified_names(site.node.func, site.scope)
        if any(_per_rank(n) for n in names):
            return Equivalence.STATISTICAL
        function = site.function
        in_getitem = function is not None and function.name.value == "__getitem__"
        if in_getitem and any(n.startswith(_RANDOM) for n in names):
            return Equivalence.STATISTICAL
    return Equivalence.CLOSE


def _per_rank(name: str) -> bool:
    if name.startswith("torchvision.models."):
        return True  # their BatchNorm and dropout layers are out of sight
    return any(name.startswith(prefix) and name[len(prefix) :] in _PER_RANK for prefix in _NN)
