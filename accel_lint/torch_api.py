"""The one home of what the rules know about torch's API: qualified names (every
public spelling of each object, as `names.qualified_names` resolves them) and the
methods that matter to several rules. A rule that needs a torch name takes it from
here; a new spelling is added here once and every rule sees it."""

from __future__ import annotations

import re
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
DATASET_BASE = frozenset({"torch.utils.data.Dataset", "torch.utils.data.dataset.Dataset"})
# numpy functions that build an array in memory (`np.load` without `mmap_mode`)
NUMPY_ARRAYS = frozenset(
    f"numpy.{n}"
    for n in ("array", "asarray", "load", "zeros", "ones", "stack", "concatenate", "arange")
) | frozenset({"numpy.random.rand", "numpy.random.randn"})
SUBSET = frozenset({"torch.utils.data.Subset", "torch.utils.data.dataset.Subset"})

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
# The batch norms that compute statistics on each process's own batch (what
# `SyncBatchNorm.convert_sync_batchnorm` replaces).
LOCAL_BATCH_NORM = _spellings(
    (*_NN, "torch.nn.modules.batchnorm"),
    (
        "BatchNorm1d",
        "BatchNorm2d",
        "BatchNorm3d",
        "LazyBatchNorm1d",
        "LazyBatchNorm2d",
        "LazyBatchNorm3d",
    ),
)

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
# apex's DistributedDataParallel: CUDA only, superseded by torch's
APEX_DDP = frozenset(
    {
        "apex.parallel.DistributedDataParallel",
        "apex.parallel.distributed.DistributedDataParallel",
    }
)
# What wraps a module in a `.module` attribute (state_dict keys get a `module.` prefix).
MODULE_WRAPPERS = DATA_PARALLEL | DDP | APEX_DDP
# Converters of batch norms into synchronized ones (torch's and apex's).
CONVERT_SYNC_BATCHNORM = frozenset(
    {
        "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
        "torch.nn.modules.SyncBatchNorm.convert_sync_batchnorm",
        "torch.nn.modules.batchnorm.SyncBatchNorm.convert_sync_batchnorm",
        "apex.parallel.convert_syncbn_model",
        "apex.parallel.sync_batchnorm.convert_syncbn_model",
    }
)
# torchvision's classification models built with BatchNorm layers (`resnet50`, also as
# `torchvision.models.resnet.resnet50`); its detection models freeze theirs.
BATCH_NORM_MODEL = re.compile(
    r"^torchvision\.models(?:\.\w+)?\.(?:resnet\d+|resnext\d+_\w+|wide_resnet\d+_\d+"
    r"|densenet\d+|vgg\d+_bn|inception_v3|googlenet|mobilenet_v[23]\w*|efficientnet_\w+"
    r"|regnet_\w+|shufflenet_v2_\w+|mnasnet\w+)$"
)
INIT_PROCESS_GROUP = frozenset({"torch.distributed.init_process_group"})
# The launcher torchrun replaced (it passes `--local-rank` instead of setting LOCAL_RANK).
DISTRIBUTED_LAUNCH = "torch.distributed.launch"
DISTRIBUTED_RUN = "torch.distributed.run"
GET_RANK = "torch.distributed.get_rank"
IS_INITIALIZED = "torch.distributed.is_initialized"
BARRIER = frozenset({"torch.distributed.barrier", "torch.distributed.distributed_c10d.barrier"})
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

# -- autograd -----------------------------------------------------------------------

# contexts and decorators under which no autograd graph is built: evaluation
NO_GRAD = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.inference_mode",
    }
)

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

# -- cuDNN, TF32 and other process-wide kernel settings ---------------------------------

CUDNN_MODULE = "torch.backends.cudnn"
CUDNN_BENCHMARK = frozenset({"torch.backends.cudnn.benchmark"})
CUDNN_ENABLED = frozenset({"torch.backends.cudnn.enabled"})
# context managers / setters that choose cuDNN's flags, benchmark included
CUDNN_FLAGS = frozenset({"torch.backends.cudnn.flags", "torch.backends.cudnn.set_flags"})
SET_FLOAT32_MATMUL_PRECISION = frozenset({"torch.set_float32_matmul_precision"})
# `torch.set_float32_matmul_precision` exists from torch 1.12 (when TF32 matmuls
# became off by default); `torch.backends.cuda.matmul.allow_tf32` from 1.7.
FLOAT32_MATMUL_PRECISION_SINCE = (1, 12)
ALLOW_TF32_SINCE = (1, 7)
# Attributes under `torch.backends` that choose the float32 precision of matmuls and
# convolutions: the legacy switches and the `fp32_precision` settings of torch 2.9.
TF32_ATTRIBUTES = ("allow_tf32", "fp32_precision")

# -- compilers ------------------------------------------------------------------------

TORCH_COMPILE = frozenset({"torch.compile"})
COMPILE_MODES = frozenset(
    {"default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"}
)
# torch.compile's in-tree backends, for a string passed where a mode was meant
COMPILE_BACKENDS = frozenset(
    {"inductor", "eager", "aot_eager", "cudagraphs", "openxla", "tvm", "onnxrt", "ipex"}
)
JIT_SCRIPT = frozenset({"torch.jit.script", "torch.jit._script.script"})
JIT_TRACE = frozenset({"torch.jit.trace", "torch.jit.trace_module", "torch.jit._trace.trace"})
JIT_SAVE = frozenset({"torch.jit.save", "torch.jit._serialization.save"})
# What is done to a scripted or traced module that prepares it for deployment, not
# for training.
JIT_EXPORT = JIT_SAVE | frozenset(
    {"torch.jit.freeze", "torch.jit.optimize_for_inference", "torch.onnx.export"}
)
# `torch.compile` replaces TorchScript for speed from torch 2.0.
COMPILE_SINCE = (2, 0)

# -- precision (float32 training) ------------------------------------------------------

# dtypes other than float32 a model or its inputs may be cast to
NON_FLOAT32_DTYPES = frozenset(
    {"torch.float16", "torch.half", "torch.bfloat16", "torch.float64", "torch.double"}
)
# module methods that cast parameters away from float32
NON_FLOAT32_CASTS = frozenset({"half", "bfloat16", "double"})
SET_DEFAULT_DTYPE = frozenset({"torch.set_default_dtype", "torch.set_default_tensor_type"})
CHANNELS_LAST = frozenset({"torch.channels_last"})

# -- layers ---------------------------------------------------------------------------

CONV2D = _spellings((*_NN, "torch.nn.modules.conv"), ("Conv2d", "ConvTranspose2d"))
LINEAR = _spellings((*_NN, "torch.nn.modules.linear"), ("Linear",))
EMBEDDING = _spellings((*_NN, "torch.nn.modules.sparse"), ("Embedding",))

# Factory functions that take `device=` (keyword-only) and build a new tensor; the
# random ones draw from the generator of the device they run on.
TENSOR_CREATOR_NAMES = (
    "zeros",
    "ones",
    "rand",
    "randn",
    "empty",
    "full",
    "arange",
    "tensor",
    "eye",
    "linspace",
)
TENSOR_CREATORS = frozenset(f"torch.{n}" for n in TENSOR_CREATOR_NAMES)
# Creators ACL212 reports a cast of (`torch.zeros(n).half()`): those that take `dtype=`
CAST_CREATORS = frozenset(
    f"torch.{n}"
    for n in ("zeros", "ones", "rand", "randn", "empty", "full", "arange", "tensor", "eye")
) | {"torch.linspace"}
RANDOM_CREATORS = frozenset({"torch.rand", "torch.randn"})
# Creators whose values are the same in every dtype (0, 1, uninitialised): a dtype
# conversion after them can be folded into `dtype=` without changing a bit.
DTYPE_EXACT_CREATORS = frozenset({"torch.zeros", "torch.ones", "torch.empty", "torch.eye"})
VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})

# -- devices, continued -----------------------------------------------------------------

# Calls that answer "is an accelerator available?": a test on them chooses the device.
DEVICE_TESTS = frozenset(
    {"torch.cuda.is_available", "torch.accelerator.is_available", "torch.xpu.is_available"}
)
# Calls that return an accelerator device (or its index).
ACCELERATOR_DEVICES = frozenset(
    {
        "torch.accelerator.current_accelerator",
        "torch.cuda.current_device",
        "torch.xpu.current_device",
    }
)
# Device types that are accelerators a host tensor is copied to.
ACCELERATOR_TYPES = frozenset({"cuda", "xpu", "mps"})
DEFAULT_COLLATE = frozenset(
    {
        "torch.utils.data.default_collate",
        "torch.utils.data.dataloader.default_collate",
        "torch.utils.data._utils.collate.default_collate",
    }
)
# -- autograd ---------------------------------------------------------------------------

_GRAD_MODE = ("torch", "torch.autograd", "torch.autograd.grad_mode")
# Contexts and decorators that stop autograd from recording a graph.
NO_GRAD = _spellings(_GRAD_MODE, ("no_grad", "inference_mode"))
SET_GRAD_ENABLED = _spellings(_GRAD_MODE, ("set_grad_enabled",))
ENABLE_GRAD = _spellings(_GRAD_MODE, ("enable_grad",))
AUTOGRAD_GRAD = frozenset({"torch.autograd.grad"})
AUTOGRAD_BACKWARD = frozenset({"torch.autograd.backward"})
# Functions that differentiate (`torch.func.grad`, `torch.autograd.functional.jacobian`).
_FUNC_TRANSFORMS = ("grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian")
DIFFERENTIATE = _spellings(("torch.func", "functorch"), _FUNC_TRANSFORMS) | _spellings(
    ("torch.autograd.functional",), ("jacobian", "hessian", "vjp", "jvp", "hvp", "vhp")
)

# Debugging aids that slow every step when left on.
SET_DETECT_ANOMALY = _spellings(
    ("torch.autograd", "torch.autograd.anomaly_mode"), ("set_detect_anomaly",)
)
DETECT_ANOMALY = _spellings(("torch.autograd", "torch.autograd.anomaly_mode"), ("detect_anomaly",))
AUTOGRAD_PROFILER = _spellings(
    ("torch.autograd.profiler", "torch.autograd.profiler_legacy"), ("profile",)
) | frozenset({"torch.autograd.profiler.emit_nvtx"})
GRADCHECK = _spellings(
    ("torch.autograd", "torch.autograd.gradcheck"), ("gradcheck", "gradgradcheck")
)

# -- device memory and synchronization ----------------------------------------------------

EMPTY_CACHE = frozenset(
    {
        "torch.cuda.empty_cache",
        "torch.cuda.memory.empty_cache",
        "torch.mps.empty_cache",
        "torch.xpu.empty_cache",
        "torch.xpu.memory.empty_cache",
        "torch.accelerator.empty_cache",
        "torch.accelerator.memory.empty_cache",
    }
)
DEVICE_SYNCHRONIZE = frozenset(
    {
        "torch.cuda.synchronize",
        "torch.mps.synchronize",
        "torch.xpu.synchronize",
        "torch.accelerator.synchronize",
    }
)
# Tensor methods that copy to the host and wait for the device.
HOST_SYNC_METHODS = frozenset({"item", "cpu", "numpy", "tolist"})
# torch functions whose result an `if` turns into a Python bool (a wait for the device)
TENSOR_TESTS = frozenset(
    f"torch.{n}" for n in ("isfinite", "isnan", "isinf", "any", "all", "equal", "allclose")
)

# -- mixed precision ------------------------------------------------------------------

# torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)
AUTOCAST_GENERIC = frozenset(
    {"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"}
)
# torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)
AUTOCAST_CUDA_LEGACY = frozenset(
    {"torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast"}
)
# torch.cpu.amp.autocast(enabled=True, dtype=torch.bfloat16, cache_enabled=True)
AUTOCAST_CPU_LEGACY = frozenset({"torch.cpu.amp.autocast", "torch.cpu.amp.autocast_mode.autocast"})
AUTOCAST = AUTOCAST_GENERIC | AUTOCAST_CUDA_LEGACY | AUTOCAST_CPU_LEGACY
# what autocast computes in when no dtype is given (torch.get_autocast_dtype's defaults)
AUTOCAST_DEFAULT_DTYPE = {"cuda": "float16", "cpu": "bfloat16"}

# torch.amp.GradScaler(device="cuda", init_scale, growth_factor, backoff_factor,
# growth_interval, enabled); the legacy classes take the same arguments without `device`
GRAD_SCALER_GENERIC = frozenset(
    {"torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.GradScaler"}
)
GRAD_SCALER_CUDA_LEGACY = frozenset(
    {"torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler"}
)
GRAD_SCALER_CPU_LEGACY = frozenset(
    {"torch.cpu.amp.GradScaler", "torch.cpu.amp.grad_scaler.GradScaler"}
)
GRAD_SCALER = GRAD_SCALER_GENERIC | GRAD_SCALER_CUDA_LEGACY | GRAD_SCALER_CPU_LEGACY

CUSTOM_FWD_CUDA_LEGACY = frozenset(
    {"torch.cuda.amp.custom_fwd", "torch.cuda.amp.autocast_mode.custom_fwd"}
)
CUSTOM_BWD_CUDA_LEGACY = frozenset(
    {"torch.cuda.amp.custom_bwd", "torch.cuda.amp.autocast_mode.custom_bwd"}
)
# The deprecated spellings of `torch.cuda.amp` / `torch.cpu.amp` (a FutureWarning from
# torch 2.4) and the device their `torch.amp` replacement must name.
DEPRECATED_AMP: dict[str, tuple[str, str]] = {
    **dict.fromkeys(AUTOCAST_CUDA_LEGACY, ("autocast", "cuda")),
    **dict.fromkeys(AUTOCAST_CPU_LEGACY, ("autocast", "cpu")),
    **dict.fromkeys(GRAD_SCALER_CUDA_LEGACY, ("GradScaler", "cuda")),
    **dict.fromkeys(GRAD_SCALER_CPU_LEGACY, ("GradScaler", "cpu")),
    **dict.fromkeys(CUSTOM_FWD_CUDA_LEGACY, ("custom_fwd", "cuda")),
    **dict.fromkeys(CUSTOM_BWD_CUDA_LEGACY, ("custom_bwd", "cuda")),
}
DEPRECATED_AMP_SINCE = (2, 4)
DEPRECATED_AMP_MODULES = frozenset(
    {
        "torch.cuda.amp",
        "torch.cpu.amp",
        "torch.cuda.amp.autocast_mode",
        "torch.cpu.amp.autocast_mode",
    }
)

FLOAT16 = frozenset({"torch.float16", "torch.half"})
BFLOAT16 = frozenset({"torch.bfloat16"})
DTYPE_NAMES = {
    "torch.float16": "float16",
    "torch.half": "float16",
    "torch.bfloat16": "bfloat16",
    "torch.float32": "float32",
    "torch.float": "float32",
    "torch.float64": "float64",
    "torch.double": "float64",
}

# The dtypes a tensor method casts to (`.half()`), and every spelling of each dtype
# a `.to(<dtype>)` or `dtype=` may name (ACL212).
CAST_METHODS = {
    "float": "torch.float32",
    "half": "torch.float16",
    "double": "torch.float64",
    "bfloat16": "torch.bfloat16",
    "long": "torch.int64",
    "int": "torch.int32",
    "short": "torch.int16",
    "bool": "torch.bool",
}
DTYPES = {
    **{name: name for name in ("torch.float16", "torch.bfloat16", "torch.float32")},
    **{name: name for name in ("torch.float64", "torch.int64", "torch.int32")},
    **{name: name for name in ("torch.int16", "torch.int8", "torch.uint8", "torch.bool")},
    "torch.half": "torch.float16",
    "torch.float": "torch.float32",
    "torch.double": "torch.float64",
    "torch.long": "torch.int64",
    "torch.int": "torch.int32",
    "torch.short": "torch.int16",
}

# How a file puts work on an accelerator, or receives a device to put it on: the rule
# table asks it of a file's bytes (ACL308 is not parsed for without it), and ACL308 of
# the text (with none, there is no device to wait for). The table looks for each
# spelling as a word (quicker than the pattern, which tries every position).
DEVICE_SPELLINGS = (
    b"cuda",
    b"device",
    b"mps",
    b"xpu",
    b"accelerat",
    b"xla",
    b"npu",
    b"hpu",
    b".to(",
)
DEVICE_WORDS = re.compile(b"|".join(re.escape(word) for word in DEVICE_SPELLINGS))

CLIP_GRAD = _spellings(
    ("torch.nn.utils", "torch.nn.utils.clip_grad"),
    ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"),
)

# binary cross-entropy on probabilities, which CUDA autocast refuses to run
BCE_LOSS = frozenset(
    {"torch.nn.BCELoss", "torch.nn.modules.BCELoss", "torch.nn.modules.loss.BCELoss"}
)
BCE_FUNCTION = frozenset({"torch.nn.functional.binary_cross_entropy"})
BCE_WITH_LOGITS = "torch.nn.functional.binary_cross_entropy_with_logits"
SIGMOID = frozenset({"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit"})
SIGMOID_MODULE = _spellings((*_NN, "torch.nn.modules.activation"), ("Sigmoid",))

# the TF32 switches: legacy booleans and, from torch 2.9, the `fp32_precision` strings
TF32_LEGACY_MATMUL = "torch.backends.cuda.matmul.allow_tf32"
TF32_LEGACY_CUDNN = "torch.backends.cudnn.allow_tf32"
FP32_PRECISION_SINCE = (2, 9)
FP32_PRECISION_OWNERS = frozenset(
    {
        "torch.backends",
        "torch.backends.cuda.matmul",
        "torch.backends.cudnn",
        "torch.backends.cudnn.conv",
        "torch.backends.cudnn.rnn",
        "torch.backends.mkldnn",
        "torch.backends.mkldnn.matmul",
        "torch.backends.mkldnn.conv",
        "torch.backends.mkldnn.rnn",
    }
)
FLOAT32_MATMUL_PRECISION = frozenset(
    {"torch.set_float32_matmul_precision", "torch.get_float32_matmul_precision"}
)

# -- optimizers -----------------------------------------------------------------------

# torch.optim optimizers that take `foreach=` (and the ones with a `fused=` CUDA kernel)
FOREACH_OPTIMIZER_CLASSES = (
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "Adamax",
    "AdamW",
    "ASGD",
    "NAdam",
    "RAdam",
    "RMSprop",
    "Rprop",
    "SGD",
)
FOREACH_OPTIMIZERS = frozenset(f"torch.optim.{n}" for n in FOREACH_OPTIMIZER_CLASSES) | frozenset(
    f"torch.optim.{n.lower()}.{n}" for n in FOREACH_OPTIMIZER_CLASSES
)
FUSED_OPTIMIZERS = frozenset(f"torch.optim.{n}" for n in ("Adam", "AdamW", "SGD")) | frozenset(
    f"torch.optim.{n.lower()}.{n}" for n in ("Adam", "AdamW", "SGD")
)
OPTIMIZER_BASE = frozenset({"torch.optim.Optimizer", "torch.optim.optimizer.Optimizer"})

# -- determinism ----------------------------------------------------------------------

USE_DETERMINISTIC_ALGORITHMS = frozenset({"torch.use_deterministic_algorithms"})
CUDNN_DETERMINISTIC = "torch.backends.cudnn.deterministic"

# -- other libraries -------------------------------------------------------------------

# apex's own mixed precision (deprecated by apex in favour of torch.amp)
APEX_AMP = _spellings(("apex.amp", "apex.amp.frontend", "apex.amp.handle"), ("initialize", "init"))
APEX_AMP |= _spellings(("apex.amp", "apex.amp.handle"), ("scale_loss",))
