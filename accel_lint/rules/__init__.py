"""The rule table: one line per rule, sorted by code. Codes are a public contract.

Each line names the rule's class (imported only when a file needs it), whether it
is on by default, its trigger words and what else the file must contain: a file that
contains none of the trigger words, or misses a requirement, cannot match, so it is
never parsed for that rule (a name can only be resolved through an import if it is
spelled somewhere). Requirements are what a rule's definition needs besides its own
API (a backward call for a rule about training, `cuda` for one about CUDA); they keep
library code that merely mentions the words (torch's own sources) from being parsed.
The table itself imports nothing heavy, so `check` on files that mention no trigger
never loads libcst.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from accel_lint.called import Called
from accel_lint.purpose import is_test_or_check_file
from accel_lint.torch_api import (
    AUTOGRAD_PROFILER,
    BATCH_NORM_CLASSES,
    CAST_CREATORS,
    CLIP_GRAD,
    CONV_CLASSES,
    DATALOADER,
    DDP,
    DETECT_ANOMALY,
    DEVICE_SPELLINGS,
    FUSED_OPTIMIZERS,
    GRADCHECK,
    INIT_PROCESS_GROUP,
    INSTANCE_NORM_CLASSES,
    MODULE_WRAPPERS,
    SET_DETECT_ANOMALY,
    SET_TO_NONE_DEFAULT_SINCE,
    TENSOR_CREATOR_NAMES,
    TORCH_LOAD,
    TORCH_SAVE,
    ZEROS_LIKE,
)
from accel_lint.torch_api import (
    DATA_PARALLEL as DATA_PARALLEL_CLASSES,
)

if TYPE_CHECKING:
    from accel_lint.rule import Rule


Need = tuple[bytes | re.Pattern[bytes], ...]


# a word or pattern of the table -> whether one file's bytes hold it
Found = dict[bytes | re.Pattern[bytes], bool]


def _has(data: bytes, word: bytes | re.Pattern[bytes], found: Found) -> bool:
    hit = found.get(word)
    if hit is None:
        hit = found[word] = (
            word in data if isinstance(word, bytes) else word.search(data) is not None
        )
    return hit


def matching(codes: frozenset[str], data: bytes, path: str = "") -> list[RuleEntry]:
    """The entries of `codes` whose words and requirements `data` meets (at `path`)."""
    found: Found = {}
    return [e for e in RULES if e.code in codes and e.may_match(data, path, found)]


@dataclass(frozen=True)
class RuleEntry:
    code: str
    target: str  # "module.Class" inside this package
    triggers: tuple[bytes, ...]
    default_enabled: bool = True
    # each must be met too: one of its words appears, or one of its patterns matches
    requires: tuple[Need, ...] = ()
    # then, on CPython's tree (before libcst parses the file): the file calls one name
    # of each set, and moves (`.cuda()`, `.to()`) the result of a call to one of `moves`
    calls: tuple[frozenset[str], ...] = ()
    moves: frozenset[str] = frozenset()
    casts: frozenset[str] = frozenset()  # the same for a cast (`.half()`, `.to(dtype)`)
    biased: frozenset[str] = frozenset()  # one of these is called without `bias=False`
    looped: frozenset[str] = frozenset()  # a `for` loop iterates one of these
    # a function with a `for` loop that is named for evaluation or calls `.eval()`
    evaluates: bool = False
    # one of these is called with an argument; below `plain_below` (a target torch
    # whose default the rule reports), a call without one counts too
    argued: frozenset[str] = frozenset()
    plain_below: tuple[int, int] | None = None
    # False: never reported in a test, or a file named for checking or measuring
    in_checking_files: bool = True
    # the file has the shape of a gradient accumulation (`Called.accumulates`), or
    # of a loss accumulated in a loop (`Called.accumulates_loss`): asked last, of the
    # files every other requirement lets through (a second pass over CPython's tree)
    accumulates: bool = False
    accumulates_loss: bool = False

    @cached_property
    def rule(self) -> type[Rule]:
        module, _, name = self.target.rpartition(".")
        cls: type[Rule] = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        if cls.code != self.code:
            raise TypeError(f"the table's {self.code} line names {cls.__name__} ({cls.code})")
        return cls

    def may_match(self, data: bytes, path: str = "", found: Found | None = None) -> bool:
        """`path`: the file's, when known (a rule may never report in a test).
        `found`: what was looked for in `data` already (rules share words and
        requirements: each is looked for once per file)."""
        if found is None:
            found = {}
        if self.triggers and not any(_has(data, t, found) for t in self.triggers):
            return False
        if not self.in_checking_files and is_test_or_check_file(path):
            return False
        return all(any(_has(data, w, found) for w in need) for need in self.requires)

    def may_call(self, seen: Called, target_torch: tuple[int, int] | None = None) -> bool:
        """`target_torch`: the setting (None: the latest torch)."""
        if self.moves and not self.moves & seen.moved:
            return False
        if self.casts and not self.casts & seen.cast:
            return False
        if self.biased and not self.biased & seen.biased:
            return False
        if self.looped and not self.looped & seen.looped:
            return False
        if self.evaluates and not seen.evaluates:
            return False
        if (
            self.argued
            and not self.argued & seen.argued
            and not (
                self.plain_below is not None
                and target_torch is not None
                and target_torch < self.plain_below
                and self.argued & seen.names
            )
        ):
            return False
        if not all(names & seen.names for names in self.calls):
            return False
        if self.accumulates and not seen.accumulates:
            return False
        return not (self.accumulates_loss and not seen.accumulates_loss)


# trigger words several rules share (the loader rules share one word on purpose: a fix
# of one, such as `pin_memory=True`, can make another match in the same fix run)
LOADER = (b"DataLoader",)
CONV = (b"Conv1d", b"Conv2d", b"Conv3d", b"ConvTranspose")
DATA_PARALLEL = (b"DataParallel",)
DISTRIBUTED = (b"init_process_group", b"DistributedDataParallel", b"horovod")
COMPILE = (b"compile",)

# Requirements (each pattern starts with a literal, or a class of first characters:
# `re` then skips to where it can match; a pattern that starts with an alternation or a
# case-insensitive group tries every position of the file, 6-13x slower on the corpus).
# A backward pass (what `Training.trains` and the loop facts look for):
# `loss.backward()`, `accelerator.backward(loss)`, `self.manual_backward(loss)`,
# `torch.autograd.backward(...)` or that function imported; not `def backward(ctx, g)`
TRAINS: Need = (
    re.compile(
        rb"backward(?:(?<!def backward)(?<![A-Za-z0-9_]backward)(?:\s*\(|\s+as\b)"
        rb"|(?<=manual_backward))"
    ),
)
# what `FileFacts.touches_cuda` looks for: `.cuda()`, `torch.cuda.*`, a "cuda" device,
# `torch.accelerator.*`
CUDA: Need = (b"cuda", b"accelerator")
AUTOCAST: Need = (b"autocast",)
# a call of `torch.compile` (the name may be imported, or renamed on import); a file
# whose only `compile(` is `re.compile(` or `_compile(` does not match
COMPILE_CALL: Need = (
    re.compile(rb"compile(?<!re\.compile)(?<![A-Za-z0-9_]compile)(?:\s*\(|\s+as\b)"),
)
# and the way to reach it: `torch.compile`, torch renamed (`th.compile`), or imported
# from torch
TORCH_COMPILE: Need = (
    re.compile(rb"torch\s*\.\s*compile"),
    b"import torch as",
    re.compile(rb"from\s+torch\s+import"),
)
# a call's result moved: `torch.zeros(...).cuda()`, `torch.tensor(...)\n    .to(device)`
MOVED_RESULT: Need = (re.compile(rb"\)(?:[\s\\]|#[^\n]*\n)*\.\s*(?:cuda|to)\s*\("),)
# a call's result cast: `torch.zeros(3).half()`, `torch.arange(n)\n    .to(torch.float16)`
CAST_RESULT: Need = (
    re.compile(
        rb"\)(?:[\s\\]|#[^\n]*\n)*\.\s*(?:float|half|double|long|int|short|bool|bfloat16|to)\s*\("
    ),
)
# what an evaluation loop iterates (`facts.evaluation`'s data names, `DataLoader`)
DATA: Need = (
    # `loader`, `data_set`, `batches`, `data_iter`, `data_source`, in any case
    re.compile(rb"[lLdDbB](?i:oader|ata_?set|atches|ata_?iter|ata_source)"),
    # `ds`, `val_dl`, `dl_train`
    re.compile(rb"[dD][lsLS](?<![A-Za-z0-9][dD][lsLS])(?![A-Za-z0-9])"),
)
AUTOGRAD: Need = (b"autograd",)  # every debugging aid ACL303 knows is in torch.autograd

# Calls (the second prefilter): a backward pass, as `TRAINS` spells it
BACKWARD = frozenset({"backward", "manual_backward"})
# an optimizer step (`Loops.accumulations` starts from one): `opt.step()`, `scaler.step(opt)`
STEP = frozenset({"step"})


def last_names(*qualified: frozenset[str]) -> frozenset[str]:
    """The names `called` sees for torch's objects: `DataLoader` for
    `torch.utils.data.DataLoader` (the rules resolve the same sets)."""
    return frozenset(name.rsplit(".", 1)[-1] for names in qualified for name in names)


# what `FileFacts.is_distributed` looks for: a process group, a DDP wrapper, horovod
DISTRIBUTED_CALLS = last_names(INIT_PROCESS_GROUP, DDP) | {"init"}
LOADER_CALL = (last_names(DATALOADER),)
DATA_PARALLEL_CALL = (last_names(DATA_PARALLEL_CLASSES),)

RULES: tuple[RuleEntry, ...] = (
    # a noqa comment naming one of our codes (one naming only E501 costs no parse); off
    # by default, as ruff's RUF100: a later version's refinement of a rule must not fail
    # a user's CI through a suppression comment
    RuleEntry(
        "ACL001",
        "unused_noqa.UnusedNoqa",
        (b"noqa: ACL", b"noqa:ACL", b"NOQA: ACL", b"NOQA:ACL", b" ACL", b",ACL", b"noqa: acl"),
        default_enabled=False,
    ),
    RuleEntry("ACL101", "dataloader_sync_loading.DataloaderSyncLoading", LOADER, calls=LOADER_CALL),
    RuleEntry(
        "ACL102",
        "dataloader_unpinned_memory.DataloaderUnpinnedMemory",
        LOADER,
        requires=(CUDA,),
        calls=LOADER_CALL,
    ),
    RuleEntry(
        "ACL103", "blocking_host_to_device_copy.BlockingHostToDeviceCopy", LOADER, calls=LOADER_CALL
    ),
    RuleEntry(
        "ACL104",
        "workers_restarted_each_epoch.WorkersRestartedEachEpoch",
        LOADER,
        calls=LOADER_CALL,
    ),
    RuleEntry(
        "ACL105", "dataloader_argument_error.DataloaderArgumentError", LOADER, calls=LOADER_CALL
    ),
    RuleEntry(
        "ACL106",
        "workers_on_in_memory_data.WorkersOnInMemoryData",
        LOADER,
        requires=((b"num_workers",),),
        calls=LOADER_CALL,
    ),
    RuleEntry(
        "ACL201",
        "conv_bias_before_norm.ConvBiasBeforeNorm",
        CONV,
        # it needs a conv built with its bias on, and a norm, in the file
        calls=(
            frozenset(CONV_CLASSES),
            frozenset({*BATCH_NORM_CLASSES, *INSTANCE_NORM_CLASSES}),
        ),
        biased=frozenset(CONV_CLASSES),
    ),
    RuleEntry(
        "ACL202",
        "cudnn_autotuner_off.CudnnAutotunerOff",
        CONV,
        requires=(TRAINS, CUDA),
        calls=(BACKWARD,),
    ),
    RuleEntry(
        "ACL203",
        "tensor_created_then_moved.TensorCreatedThenMoved",
        (b".cuda", b".to"),
        requires=(MOVED_RESULT,),
        moves=frozenset(TENSOR_CREATOR_NAMES),
    ),
    RuleEntry(
        "ACL204",
        "jit_script_for_fusion.JitScriptForFusion",
        (b"jit",),
        requires=(TRAINS,),
        calls=(BACKWARD, frozenset({"script", "trace", "trace_module"})),
    ),
    RuleEntry(
        "ACL205",
        "compile_mode_positional.CompileModePositional",
        COMPILE,
        requires=(COMPILE_CALL, TORCH_COMPILE),
        calls=(frozenset({"compile"}),),
    ),
    RuleEntry(
        "ACL206",
        "compile_in_loop.CompileInLoop",
        COMPILE,
        requires=(COMPILE_CALL, TORCH_COMPILE),
        calls=(frozenset({"compile"}),),
    ),
    RuleEntry(
        "ACL207",
        "fp32_matmul_precision_default.Fp32MatmulPrecisionDefault",
        (b".step",),
        default_enabled=False,
        requires=(TRAINS, CUDA),
        calls=(BACKWARD, frozenset({"step"})),
    ),
    RuleEntry(
        "ACL208",
        "channels_last_convnet.ChannelsLastConvnet",
        (b"Conv2d", b"ConvTranspose2d"),
        default_enabled=False,
        requires=(TRAINS, CUDA, AUTOCAST),
        calls=(BACKWARD,),
    ),
    RuleEntry(
        "ACL209",
        "tensor_core_misaligned_dims.TensorCoreMisalignedDims",
        (b"Linear", b"Embedding"),
        default_enabled=False,
        requires=(CUDA, AUTOCAST),
    ),
    RuleEntry(
        "ACL210",
        "compiled_state_dict_saved.CompiledStateDictSaved",
        COMPILE,
        requires=(COMPILE_CALL, TORCH_COMPILE, (b"state_dict",)),
        calls=(frozenset({"compile"}), frozenset({"save"})),
    ),
    RuleEntry(
        "ACL212",
        "tensor_created_then_cast.TensorCreatedThenCast",
        (
            b".float",
            b".half",
            b".double",
            b".long",
            b".int",
            b".bool",
            b".bfloat16",
            b".short",
            b".to",
        ),
        requires=(CAST_RESULT,),
        casts=last_names(CAST_CREATORS),
    ),
    RuleEntry(
        "ACL301",
        "manual_zero_grad_loop.ManualZeroGradLoop",
        (b".grad",),
        # a loop over `.parameters()`, `.named_parameters()` or `.param_groups`
        requires=((b"parameters", b"param_groups"),),
        calls=(frozenset({"zero_", "fill_"}) | last_names(ZEROS_LIKE),),  # what zero-fills
        looped=frozenset({"parameters", "named_parameters", "param_groups"}),
    ),
    RuleEntry(
        "ACL302",
        "zero_grad_keeps_tensors.ZeroGradKeepsTensors",
        (b"zero_grad",),
        # `zero_grad(set_to_none=False)`; a plain `zero_grad()` only below torch 2.0
        argued=frozenset({"zero_grad"}),
        plain_below=SET_TO_NONE_DEFAULT_SINCE,
    ),
    RuleEntry(
        "ACL303",
        "debug_api_left_on.DebugApiLeftOn",
        (b"anomaly", b"profile", b"emit_nvtx", b"gradcheck"),
        requires=(AUTOGRAD,),
        calls=(last_names(SET_DETECT_ANOMALY, DETECT_ANOMALY, AUTOGRAD_PROFILER, GRADCHECK),),
        in_checking_files=False,
    ),
    RuleEntry(
        "ACL304",
        "deprecated_cuda_amp.DeprecatedCudaAmp",
        (b"cuda.amp", b"cpu.amp", b"import amp", b"custom_fwd", b"custom_bwd"),
    ),
    RuleEntry(
        "ACL305",
        "clip_scaled_gradients.ClipScaledGradients",
        (b"clip_grad",),
        # a clip between `scaler.scale(loss).backward()` and `scaler.step(optimizer)`
        calls=(last_names(CLIP_GRAD), frozenset({"scale"}), BACKWARD, STEP),
    ),
    RuleEntry("ACL306", "apex_amp.ApexAmp", (b"apex",)),
    RuleEntry(
        "ACL307",
        "loss_accumulated_with_graph.LossAccumulatedWithGraph",
        (b"backward",),
        requires=(TRAINS,),
        calls=(BACKWARD,),
        accumulates_loss=True,
    ),
    RuleEntry(
        "ACL308",
        "step_sync_every_iteration.StepSyncEveryIteration",
        (b"backward",),
        default_enabled=False,
        requires=(TRAINS, DEVICE_SPELLINGS),
        calls=(BACKWARD,),
    ),
    RuleEntry(
        "ACL309",
        "fused_optimizer_available.FusedOptimizerAvailable",
        (b"Adam", b"SGD"),
        default_enabled=False,
        requires=(CUDA,),
        calls=(last_names(FUSED_OPTIMIZERS),),  # built, or subclassed and built
    ),
    RuleEntry(
        "ACL310",
        "accumulated_loss_not_scaled.AccumulatedLossNotScaled",
        (b"backward",),
        requires=(TRAINS,),
        calls=(BACKWARD, STEP),
        accumulates=True,
    ),
    RuleEntry(
        "ACL311",
        "eval_without_no_grad.EvalWithoutNoGrad",
        (b"eval", b"valid", b"test", b"predict", b"infer", b"Eval", b"Valid", b"Test", b"(False)"),
        requires=(DATA,),
        evaluates=True,
    ),
    RuleEntry("ACL312", "grad_scaler_with_bf16.GradScalerWithBf16", (b"GradScaler",)),
    RuleEntry("ACL313", "tf32_legacy_api.Tf32LegacyApi", (b"allow_tf32",)),
    RuleEntry(
        "ACL314", "fp16_autocast_without_grad_scaler.Fp16AutocastWithoutGradScaler", (b"autocast",)
    ),
    RuleEntry("ACL315", "empty_cache_in_loop.EmptyCacheInLoop", (b"empty_cache",)),
    RuleEntry("ACL316", "foreach_disabled.ForeachDisabled", (b"foreach",), requires=(CUDA,)),
    RuleEntry(
        "ACL317",
        "determinism_left_on.DeterminismLeftOn",
        (b"deterministic",),
        default_enabled=False,
        requires=(TRAINS,),
        calls=(BACKWARD,),
    ),
    RuleEntry(
        "ACL318",
        "zero_grad_every_micro_batch.ZeroGradEveryMicroBatch",
        (b"zero_grad",),
        requires=(TRAINS,),
        calls=(BACKWARD, STEP),
        accumulates=True,
    ),
    RuleEntry(
        "ACL319",
        "grad_scaler_every_micro_batch.GradScalerEveryMicroBatch",
        (b"unscale_", b"update("),
        requires=(TRAINS,),
        calls=(BACKWARD,),
    ),
    RuleEntry(
        "ACL320",
        "clip_every_micro_batch.ClipEveryMicroBatch",
        (b"clip_grad",),
        requires=(TRAINS,),
        calls=(BACKWARD,),
    ),
    RuleEntry(
        "ACL321",
        "bce_under_autocast.BceUnderAutocast",
        (b"BCELoss", b"binary_cross_entropy"),
        requires=(AUTOCAST,),
    ),
    RuleEntry("ACL401", "data_parallel.DataParallel", DATA_PARALLEL, calls=DATA_PARALLEL_CALL),
    RuleEntry(
        "ACL402",
        "autocast_outside_data_parallel.AutocastOutsideDataParallel",
        DATA_PARALLEL,
        calls=DATA_PARALLEL_CALL,
    ),
    RuleEntry(
        "ACL403",
        "save_on_every_rank.SaveOnEveryRank",
        DISTRIBUTED,
        calls=(last_names(TORCH_SAVE), DISTRIBUTED_CALLS),
    ),
    RuleEntry(
        "ACL404", "sampler_missing_set_epoch.SamplerMissingSetEpoch", (b"DistributedSampler",)
    ),
    RuleEntry(
        "ACL406",
        "deprecated_distributed_launch.DeprecatedDistributedLaunch",
        (b"local_rank", b"local-rank", b"distributed.launch", b"import launch"),
    ),
    RuleEntry(
        "ACL407", "find_unused_parameters.FindUnusedParameters", (b"find_unused_parameters",)
    ),
    RuleEntry(
        "ACL408",
        "unsynced_batchnorm.UnsyncedBatchnorm",
        (b"DistributedDataParallel",),
        default_enabled=False,
    ),
    RuleEntry(
        "ACL409",
        "accumulation_without_no_sync.AccumulationWithoutNoSync",
        (b"DistributedDataParallel",),
        requires=(TRAINS,),
        calls=(BACKWARD,),
    ),
    RuleEntry("ACL410", "apex_ddp.ApexDdp", (b"apex",)),
    RuleEntry(
        "ACL411",
        "wrapped_state_dict_saved.WrappedStateDictSaved",
        DATA_PARALLEL,
        # a wrapper's `state_dict()` saved: the wrapper is built in the file
        calls=(last_names(TORCH_SAVE), frozenset({"state_dict"}), last_names(MODULE_WRAPPERS)),
    ),
    RuleEntry(
        "ACL412",
        "load_without_map_location.LoadWithoutMapLocation",
        DISTRIBUTED,
        calls=(last_names(TORCH_LOAD), DISTRIBUTED_CALLS),
    ),
    RuleEntry(
        "ACL413",
        "barrier_every_step.BarrierEveryStep",
        (b"barrier",),
        requires=(TRAINS,),
        calls=(BACKWARD, frozenset({"barrier"})),
    ),
    RuleEntry(
        "ACL414",
        "process_group_rank_is_local.ProcessGroupRankIsLocal",
        (b"init_process_group",),
        calls=(last_names(INIT_PROCESS_GROUP),),
    ),
)

BY_CODE: dict[str, RuleEntry] = {entry.code: entry for entry in RULES}
