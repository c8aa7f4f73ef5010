"""What `verify` and the runner inside the script's processes say to each other.

Both sides import this module: the parent as `accel_lint.verify.protocol`, the
child (which may run another interpreter, with only the standard library and
torch) by path, as a sibling of the runner package. It therefore imports nothing
but the standard library and must run on every Python the project supports.

The parent passes a `RunConfig` as JSON in the `CONFIG_ENV` environment variable;
each process that trains writes one `Record` as JSON into the run's `out`
directory when it stops. Every key is declared here, so both sides are checked
against one definition.
"""

from __future__ import annotations

import json
import os
from typing import TypedDict

CONFIG_ENV = "ACCEL_LINT_VERIFY"
# Set in every process of a run (and inherited by whatever it starts): the token
# by which the parent finds and ends a run's processes, even one that left the
# run's session with setsid().
RUN_MARKER_ENV = "ACCEL_LINT_VERIFY_RUN"
RECORD_VERSION = 2
EXIT_INTERNAL = 70  # the runner itself failed (a bug of ours), never the script

# Modes of a run.
EQUIV = "equiv"  # recorded: losses, final state, diagnostics (never timed)
TIME = "time"  # step clock and memory only
PROBE = "probe"  # an equivalence run that also records what the script really does

# Messages torch gives when a script needs CUDA and the machine has none
# (CPU wheel, CUDA wheel without a driver, without a device).
NEEDS_CUDA_MESSAGES = (
    "Torch not compiled with CUDA enabled",
    "Found no NVIDIA driver",
    "No CUDA GPUs are available",
    "no CUDA-capable device is detected",
    "CUDA driver initialization failed",
    "Cannot access accelerator device when none is available",
    "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False",
)


def needs_cuda(text: str) -> bool:
    return any(message in text for message in NEEDS_CUDA_MESSAGES)


# -- parent -> child ------------------------------------------------------------------


class RunConfig(TypedDict):
    out: str  # directory the records go to
    mode: str  # EQUIV, TIME or PROBE
    steps: int  # stop after this many steps of the first optimizer that steps
    warmup: int  # steps before the timed window (CUDA synchronises at its edges)
    seed: int
    seed_offset: int  # added to every global seed the script sets (statistical class)
    threads: int
    perturb: bool  # move every weight by one ulp at the first optimizer (noise floor)
    save_state: bool  # write the final parameters and buffers to out/state.pt
    reference: str | None  # a reference run's state.pt: record the difference to it
    dump_init: str | None  # directory for the initial weights and RNG state
    align_init: str | None  # start from the weights and RNG state dumped there
    progress: str | None  # file the runner keeps the number of steps done in
    profile_steps: int  # probe: the profiler stops after this many steps


# -- child -> parent: one record per process that trained -------------------------------


class ErrorRecord(TypedDict):
    type: str
    message: str
    traceback: str
    needs_cuda: bool


class MemoryRecord(TypedDict):
    host_peak_bytes: int  # this process plus its children (DataLoader workers)
    device_peak_bytes: int | None  # torch.cuda.max_memory_allocated, when CUDA was used


class GradRecord(TypedDict):
    """Parameters that reached an optimizer step with no gradient or an all-zero one."""

    steps: int
    none: dict[str, int]  # name -> steps with grad None
    zero: dict[str, int]  # name -> steps with an all-zero grad
    first_zero: dict[str, int]  # name -> first such step (0-based)


class TensorRow(TypedDict):
    name: str
    kind: str  # "param" | "buffer"
    shape: bool  # the shapes agree
    equal: bool
    max_abs: float | None
    rel_norm: float | None


class DiffRecord(TypedDict):
    """The final state against the reference run's, computed in the child (the
    parent never imports torch). `missing`/`extra` hold [name, kind] pairs."""

    tensors: list[TensorRow]
    missing: list[tuple[str, str]]
    extra: list[tuple[str, str]]


class InitEvent(TypedDict, total=False):
    optimizer: int  # the optimizer's construction index
    aligned: bool  # weights were copied from the reference's initial state
    differs: list[str]  # not aligned: parameters whose initial value differs
    copied: int
    removed: list[str]
    added: list[str]


class SamplerEvent(TypedDict):
    """One pass over a DistributedSampler: the order it handed out, hashed."""

    sampler: int  # the sampler's ordinal in this process
    epoch: int | None
    step: int  # optimizer steps done when the pass began
    backward: int  # backward passes done when the pass began
    n: int
    order: str


class StateDictCheck(TypedDict):
    """A state dict found in a saved object, held against the bare models."""

    keys: int
    values: str  # hash of the tensors by name, wrapper prefixes stripped
    loads_into: str | None  # a bare model it loads into with strict=True
    prefixed: int  # keys with a wrapper prefix (`module.`, `_orig_mod.`)


class SaveEvent(TypedDict):
    step: int
    path: str  # relative to the working directory when inside it
    content: str  # hash of the saved object's content (not of the file's bytes)
    state_dicts: list[StateDictCheck]


class ClipEvent(TypedDict):
    """A gradient clipping call and what the gradients it saw were."""

    step: int
    function: str
    norm: float  # the total norm of the gradients it was given (before clipping)
    scale: float | None  # the GradScaler's scale when a scaler was enabled
    unscaled: bool | None  # the scaler had unscaled these gradients (None: no scaler)


class MicroBatch(TypedDict):
    """The first optimizer's gradients before and after one backward pass."""

    before: list[float]
    after: list[float]


class GradWindow(TypedDict):
    """The gradients at an optimizer step of the first optimizer that steps, and
    before and after each backward pass since its previous step, as projections on
    fixed random directions (linear: a sum's projection is the sum of projections;
    the same tensors give bitwise the same projections)."""

    step: int
    at_step: list[float]
    micro: list[MicroBatch]  # one per backward pass in the window


class ScaleEvent(TypedDict):
    """An enabled GradScaler's scale when it scaled a loss."""

    step: int
    scale: float


class LogitsLoss(TypedDict):
    """A `binary_cross_entropy_with_logits` call: its value, and binary cross-entropy
    on the sigmoid of the same logits in float64 outside autocast (None when the call
    has arguments that loss has no equal for, such as `pos_weight`)."""

    value: float
    reference: float | None


class LoaderRecord(TypedDict):
    """A DataLoader the script built, and how it was used."""

    ordinal: int
    file: str  # where it was built: the script's frame
    row: int
    num_workers: int
    pin_memory: bool
    persistent_workers: bool
    prefetch_factor: int | None
    batch_size: int | None
    dataset: str  # the dataset's class
    in_memory: bool  # a TensorDataset, tensor, list or tuple: nothing to load
    passes: int  # iterators created (epochs started)
    batches: int  # batches handed out while the runner watched
    wait_s: float  # seconds the training loop waited for those batches
    trains: bool  # a training step happened while it was being iterated


class PatternHit(TypedDict):
    file: str
    row: int
    message: str


class PatternResult(TypedDict):
    """One pattern of torch's profiler pattern matcher, run on the probe's steps."""

    name: str  # the pattern's class
    shows: str  # the pattern it finds, as a rule name
    status: str  # "ran" | "skipped" (not applicable here) | "error"
    reason: str | None
    hits: list[PatternHit]


class ObservationRecord(TypedDict):
    """Something the probe saw the script do, with where it happened when known."""

    kind: str  # named after the rule that finds the same pattern in the source
    file: str | None
    row: int | None
    detail: str
    notable: bool  # worth a runtime finding of its own when no static finding names it


class RuntimeRecord(TypedDict):
    """The runtime second opinion (probe mode only)."""

    observations: list[ObservationRecord]
    configuration: list[str]  # what the script configured, one line each
    patterns: list[PatternResult]
    cuda: bool  # the run used CUDA


class _RecordBase(TypedDict):
    version: int
    pid: int
    rank: int | None
    world_size: int
    argv0: str
    mode: str
    active: bool  # built an optimizer or ran a backward pass
    stop_reason: str  # "steps" | "exit" | "error"
    steps: int  # of the primary optimizer
    optimizer_steps: list[int]
    first_step_s: float | None  # from the process's (or fork's) start
    step_times: list[float]  # the clock after each primary optimizer step
    backwards_at_step: list[int]
    losses: list[float]  # one per backward pass
    error: ErrorRecord | None
    device: str  # "cpu" | "cuda"
    device_count: int
    torch_version: str
    threads: int
    memory: MemoryRecord
    batch_size: int | None  # of the loader the training steps draw from
    loaders: list[LoaderRecord]


class Record(_RecordBase, total=False):
    # equivalence mode
    grads: GradRecord
    hashes: dict[str, str]
    tensor_count: dict[str, int]
    diff: DiffRecord
    init: list[InitEvent]
    samplers: list[SamplerEvent]
    saves: list[SaveEvent]
    clips: list[ClipEvent]
    grad_windows: list[GradWindow]
    scales: list[ScaleEvent]
    logits_losses: list[LogitsLoss]
    # `binary_cross_entropy` calls (`nn.BCELoss` included) by the dtype of the
    # probabilities they saw: "bfloat16" or "float16" where CPU autocast ran them
    probability_losses: dict[str, int]
    # DDP forward passes with gradient sync on: each backward pass after one
    # all-reduces every gradient bucket (`no_sync()` turns it off)
    ddp_syncs: int
    # probe mode
    runtime: RuntimeRecord


# -- child -> parent: writes the runner refused ------------------------------------------

# Each process of a run appends one JSON line per refused write to its own file in
# the run's `out` directory, as the write is refused: a script that catches the
# PermissionError (a try/except around its log writes) still has it reported, and
# so does a process that never trains and writes no record.
REFUSED_WRITES_GLOB = "refused_pid*.jsonl"


def refused_writes_file(out: str, pid: int) -> str:
    return os.path.join(out, f"refused_pid{pid}.jsonl")


class RefusedWrite(TypedDict):
    path: str  # as the script named it
    resolves_to: str  # where it leads: outside the run's copy of the folder


def read_refused_writes(out: str) -> list[RefusedWrite]:
    """Every process's refused writes, each (path, target) once, in the order of the
    files' names and then of their lines."""
    import glob  # the parent's side only

    found: list[RefusedWrite] = []
    seen: set[tuple[str, str]] = set()
    for name in sorted(glob.glob(os.path.join(glob.escape(out), REFUSED_WRITES_GLOB))):
        try:
            with open(name, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                data = json.loads(line)
            except ValueError:
                continue  # a line cut short by a killed process
            if not isinstance(data, dict):
                continue
            path, target = data.get("path"), data.get("resolves_to")
            if isinstance(path, str) and isinstance(target, str) and (path, target) not in seen:
                seen.add((path, target))
                found.append({"path": path, "resolves_to": target})
    return found


# -- the warm interpreter (see `runner.server`) -------------------------------------------


class ServerHello(TypedDict):
    """The warm interpreter's first line: torch is imported (or why not)."""

    python: str
    executable: str
    torch: str | None  # its version; None: torch cannot be imported there
    error: str | None


class SpawnRequest(TypedDict):
    id: int
    script: str  # absolute path
    argv: list[str]  # sys.argv for the script (the script first)
    cwd: str
    env: dict[str, str]
    output: str  # file for the run's stdout and stderr


class ServerEvent(TypedDict, total=False):
    id: int
    pid: int  # the run started; its pid is also its session and group id
    status: int  # the run's process ended: its exit status, or -signal
    cpu: float  # with status: CPU seconds of the run's process and what it waited for
    error: str  # it could not be started


# -- the runtime second opinion --------------------------------------------------------

# What the probe run can see a script do, named after the rule that finds the same
# pattern in the source (rule names are as fixed as rule codes), and whether it
# can only be seen when the script uses CUDA.
OBSERVABLE: dict[str, bool] = {
    "dataloader-sync-loading": False,
    "dataloader-unpinned-memory": False,
    "workers-restarted-each-epoch": False,
    "conv-bias-before-norm": False,
    "manual-zero-grad-loop": False,
    "zero-grad-keeps-tensors": False,
    "eval-without-no-grad": False,
    "debug-api-left-on": False,
    "data-parallel": False,
    "grad-scaler-with-bf16": False,
    "fp16-autocast-without-grad-scaler": True,
    "cudnn-autotuner-off": True,
    "foreach-disabled": True,
    "empty-cache-in-loop": True,
    "tensor-created-then-moved": True,
    "fp32-matmul-precision-default": True,
    "tensor-core-misaligned-dims": True,
}

# torch's profiler pattern matcher, pattern by pattern: (class, the pattern it
# shows as a rule name, whether it means anything only on CUDA).
PROFILER_PATTERNS: tuple[tuple[str, str, bool], ...] = (
    ("ExtraCUDACopyPattern", "tensor-created-then-moved", True),
    ("FP32MatMulPattern", "fp32-matmul-precision-default", True),
    ("OptimizerSingleTensorPattern", "foreach-disabled", True),
    ("SynchronizedDataLoaderPattern", "dataloader-sync-loading", False),
    ("GradNotSetToNonePattern", "zero-grad-keeps-tensors", False),
    ("Conv2dBiasFollowedByBatchNorm2dPattern", "conv-bias-before-norm", False),
    ("MatMulDimInFP16Pattern", "tensor-core-misaligned-dims", True),
)
