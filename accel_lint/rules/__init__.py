"""The rule table: one line per rule, sorted by code. Codes are a public contract.

Each line names the rule's class (imported only when a file needs it), whether it
is on by default, and its trigger words: a file that contains none of them cannot
match, so it is never parsed for that rule (a name can only be resolved through an
import if it is spelled somewhere). The table itself imports nothing heavy, so
`check` on files that mention no trigger never loads libcst.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from accel_lint.rule import Rule


@dataclass(frozen=True)
class RuleEntry:
    code: str
    target: str  # "module.Class" inside this package
    triggers: tuple[bytes, ...]
    default_enabled: bool = True

    @cached_property
    def rule(self) -> type[Rule]:
        module, _, name = self.target.rpartition(".")
        cls: type[Rule] = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        if cls.code != self.code:
            raise TypeError(f"the table's {self.code} line names {cls.__name__} ({cls.code})")
        return cls

    def may_match(self, data: bytes) -> bool:
        return not self.triggers or any(t in data for t in self.triggers)


# trigger words several rules share (the loader rules share one word on purpose: a fix
# of one, such as `pin_memory=True`, can make another match in the same fix run)
LOADER = (b"DataLoader",)
CONV = (b"Conv1d", b"Conv2d", b"Conv3d", b"ConvTranspose")
DATA_PARALLEL = (b"DataParallel",)
DISTRIBUTED = (b"init_process_group", b"DistributedDataParallel", b"horovod")
COMPILE = (b"compile",)

RULES: tuple[RuleEntry, ...] = (
    # a noqa comment naming one of our codes (one naming only E501 costs no parse)
    RuleEntry(
        "ACL001",
        "unused_noqa.UnusedNoqa",
        (b"noqa: ACL", b"noqa:ACL", b"NOQA: ACL", b"NOQA:ACL", b" ACL", b",ACL", b"noqa: acl"),
    ),
    RuleEntry("ACL101", "dataloader_sync_loading.DataloaderSyncLoading", LOADER),
    RuleEntry("ACL102", "dataloader_unpinned_memory.DataloaderUnpinnedMemory", LOADER),
    RuleEntry("ACL103", "blocking_host_to_device_copy.BlockingHostToDeviceCopy", LOADER),
    RuleEntry("ACL104", "workers_restarted_each_epoch.WorkersRestartedEachEpoch", LOADER),
    RuleEntry("ACL105", "dataloader_argument_error.DataloaderArgumentError", LOADER),
    RuleEntry("ACL201", "conv_bias_before_norm.ConvBiasBeforeNorm", CONV),
    RuleEntry("ACL202", "cudnn_autotuner_off.CudnnAutotunerOff", CONV),
    RuleEntry("ACL203", "tensor_created_then_moved.TensorCreatedThenMoved", (b".cuda(", b".to(")),
    RuleEntry("ACL204", "jit_script_for_fusion.JitScriptForFusion", (b"jit",)),
    RuleEntry("ACL205", "compile_mode_positional.CompileModePositional", COMPILE),
    RuleEntry("ACL206", "compile_in_loop.CompileInLoop", COMPILE),
    RuleEntry(
        "ACL207",
        "fp32_matmul_precision_default.Fp32MatmulPrecisionDefault",
        (b".step",),
        default_enabled=False,
    ),
    RuleEntry(
        "ACL208",
        "channels_last_convnet.ChannelsLastConvnet",
        (b"Conv2d", b"ConvTranspose2d"),
        default_enabled=False,
    ),
    RuleEntry(
        "ACL209",
        "tensor_core_misaligned_dims.TensorCoreMisalignedDims",
        (b"Linear", b"Embedding"),
        default_enabled=False,
    ),
    RuleEntry("ACL301", "manual_zero_grad_loop.ManualZeroGradLoop", (b".grad",)),
    RuleEntry("ACL302", "zero_grad_keeps_tensors.ZeroGradKeepsTensors", (b"zero_grad",)),
    RuleEntry(
        "ACL303",
        "debug_api_left_on.DebugApiLeftOn",
        (b"anomaly", b"profile", b"emit_nvtx", b"gradcheck"),
    ),
    RuleEntry(
        "ACL304",
        "deprecated_cuda_amp.DeprecatedCudaAmp",
        (b"cuda.amp", b"cpu.amp", b"import amp", b"custom_fwd", b"custom_bwd"),
    ),
    RuleEntry("ACL305", "clip_scaled_gradients.ClipScaledGradients", (b"clip_grad",)),
    RuleEntry("ACL306", "apex_amp.ApexAmp", (b"apex",)),
    RuleEntry("ACL307", "loss_accumulated_with_graph.LossAccumulatedWithGraph", (b"backward",)),
    RuleEntry(
        "ACL308",
        "step_sync_every_iteration.StepSyncEveryIteration",
        (b"backward",),
        default_enabled=False,
    ),
    RuleEntry(
        "ACL309",
        "fused_optimizer_available.FusedOptimizerAvailable",
        (b"Adam", b"SGD"),
        default_enabled=False,
    ),
    RuleEntry("ACL310", "accumulated_loss_not_scaled.AccumulatedLossNotScaled", (b"backward",)),
    RuleEntry(
        "ACL311",
        "eval_without_no_grad.EvalWithoutNoGrad",
        (b"eval", b"valid", b"test", b"predict", b"infer", b"Eval", b"Valid", b"Test", b"(False)"),
    ),
    RuleEntry("ACL312", "grad_scaler_with_bf16.GradScalerWithBf16", (b"GradScaler",)),
    RuleEntry("ACL313", "tf32_legacy_api.Tf32LegacyApi", (b"allow_tf32",)),
    RuleEntry(
        "ACL314", "fp16_autocast_without_grad_scaler.Fp16AutocastWithoutGradScaler", (b"autocast",)
    ),
    RuleEntry("ACL315", "empty_cache_in_loop.EmptyCacheInLoop", (b"empty_cache",)),
    RuleEntry("ACL316", "foreach_disabled.ForeachDisabled", (b"foreach",)),
    RuleEntry(
        "ACL317",
        "determinism_left_on.DeterminismLeftOn",
        (b"deterministic",),
        default_enabled=False,
    ),
    RuleEntry("ACL401", "data_parallel.DataParallel", DATA_PARALLEL),
    RuleEntry(
        "ACL402", "autocast_outside_data_parallel.AutocastOutsideDataParallel", DATA_PARALLEL
    ),
    RuleEntry("ACL403", "save_on_every_rank.SaveOnEveryRank", DISTRIBUTED),
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
    ),
    RuleEntry("ACL410", "apex_ddp.ApexDdp", (b"apex",)),
    RuleEntry("ACL411", "wrapped_state_dict_saved.WrappedStateDictSaved", DATA_PARALLEL),
    RuleEntry("ACL412", "load_without_map_location.LoadWithoutMapLocation", DISTRIBUTED),
)

BY_CODE: dict[str, RuleEntry] = {entry.code: entry for entry in RULES}
