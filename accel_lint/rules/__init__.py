"""The rule table: one line per rule, sorted by code. Codes are a public contract."""

from __future__ import annotations

from accel_lint.rule import Rule
from accel_lint.rules.autocast_outside_data_parallel import AutocastOutsideDataParallel
from accel_lint.rules.conv_bias_before_norm import ConvBiasBeforeNorm
from accel_lint.rules.data_parallel import DataParallel
from accel_lint.rules.dataloader_sync_loading import DataloaderSyncLoading
from accel_lint.rules.dataloader_unpinned_memory import DataloaderUnpinnedMemory
from accel_lint.rules.manual_zero_grad_loop import ManualZeroGradLoop
from accel_lint.rules.sampler_missing_set_epoch import SamplerMissingSetEpoch
from accel_lint.rules.save_on_every_rank import SaveOnEveryRank
from accel_lint.rules.zero_grad_keeps_tensors import ZeroGradKeepsTensors

ALL_RULES: tuple[type[Rule], ...] = (
    DataloaderSyncLoading,  # ACL101
    DataloaderUnpinnedMemory,  # ACL102
    ConvBiasBeforeNorm,  # ACL201
    ManualZeroGradLoop,  # ACL301
    ZeroGradKeepsTensors,  # ACL302
    DataParallel,  # ACL401
    AutocastOutsideDataParallel,  # ACL402
    SaveOnEveryRank,  # ACL403
    SamplerMissingSetEpoch,  # ACL404
)
