"""The one home of what the rules know about torch's API: qualified names (every
public spelling of each object, as `names.qualified_names` resolves them) and the
methods that matter to several rules. A rule that needs a torch name takes it from
here; a new spelling is added here once and every rule sees it."""

from __future__ import annotations

from collections.abc import Iterable


def _spellings(modules: Iterable[str], names: Iterable[str]) -> frozenset[str]:
    names = tuple(names)
    return frozenset(f"{module}.{name}" for module in modules for name in names)


# -- data loading -------------------------------------------------------------------

DATALOADER = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
DISTRIBUTED_SAMPLER = frozenset(
    {"torch.utils.data.distributed.DistributedSampler", "torch.utils.data.DistributedSampler"}
)
BATCH_SAMPLER = frozenset(
    {"torch.utils.data.BatchSampler", "torch.utils.data.sampler.BatchSampler"}
)
TENSOR_DATASET = frozenset(
    {"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"}
)

# -- modules ------------------------------------------------------------------------

_NN = ("torch.nn", "torch.nn.modules")
CONV_CLASSES = (
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
)
BATCH_NORM_CLASSES = ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm")
INSTANCE_NORM_CLASSES = ("InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d")
CONV = _spellings((*_NN, "torch.nn.modules.conv"), CONV_CLASSES)
BATCH_NORM = _spellings((*_NN, "torch.nn.modules.batchnorm"), BATCH_NORM_CLASSES)
INSTANCE_NORM = _spellings((*_NN, "torch.nn.modules.instancenorm"), INSTANCE_NORM_CLASSES)
SEQUENTIAL = _spellings((*_NN, "torch.nn.modules.container"), ("Sequential",))

# nn.Module methods that return the module itself: `Net().eval().to(device)` is a Net.
MODULE_RETURNS_SELF = frozenset(
    {
        "apply",
        "bfloat16",
        "cpu",
        "cuda",
        "double",
        "eval",
        "float",
        "half",
        "ipu",
        "mtia",
        "requires_grad_",
        "share_memory",
        "to",
        "to_empty",
        "train",
        "type",
        "xpu",
    }
)
# Methods only torch's modules and optimizers answer to, among the objects a training
# script calls `zero_grad` on.
MODULE_OR_OPTIMIZER_METHODS = frozenset(
    {
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
    }
)

# `zero_grad(set_to_none=...)` exists from torch 1.7 (on both `Module` and
# `Optimizer`), and its default became True in torch 2.0.
SET_TO_NONE_SINCE = (1, 7)
SET_TO_NONE_DEFAULT_SINCE = (2, 0)

# -- parallelism ----------------------------------------------------------------------

DATA_PARALLEL = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
    }
)
DDP = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.nn.DistributedDataParallel",
    }
)
INIT_PROCESS_GROUP = frozenset({"torch.distributed.init_process_group"})
GET_RANK = "torch.distributed.get_rank"
IS_INITIALIZED = "torch.distributed.is_initialized"
# Calls that run a function once per process: its body is every rank's code.
PROCESS_LAUNCHERS = frozenset(
    {
        "torch.multiprocessing.spawn",
        "torch.multiprocessing.start_processes",
        "torch.multiprocessing.Process",
        "multiprocessing.Process",
        "torch.distributed.elastic.multiprocessing.start_processes",
        "torch.distributed.launcher.api.elastic_launch",
        "torch.distributed.launcher.elastic_launch",
    }
)

# -- devices ------------------------------------------------------------------------

TORCH_DEVICE = frozenset({"torch.device"})
CUDA_IS_AVAILABLE = frozenset({"torch.cuda.is_available"})
CUDA_DEVICE_COUNT = frozenset({"torch.cuda.device_count"})
CUDA_SET_DEVICE = frozenset({"torch.cuda.set_device"})

# -- serialization --------------------------------------------------------------------

TORCH_SAVE = frozenset({"torch.save", "torch.serialization.save"})
TORCH_LOAD = frozenset({"torch.load", "torch.serialization.load"})

# -- tensors --------------------------------------------------------------------------

ZEROS_LIKE = frozenset({"torch.zeros_like"})
# torch functions that draw from the global random generator
RANDOM_FUNCTIONS = frozenset(
    f"torch.{n}"
    for n in (
        "rand",
        "randn",
        "randint",
        "randperm",
        "rand_like",
        "randn_like",
        "randint_like",
        "bernoulli",
        "normal",
        "multinomial",
        "poisson",
    )
)
