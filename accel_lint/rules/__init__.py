"""The rule table: one line per rule, sorted by code. Codes are a public contract."""

from __future__ import annotations

from accel_lint.rule import Rule
from accel_lint.rules.dataloader_sync_loading import DataloaderSyncLoading
from accel_lint.rules.dataloader_unpinned_memory import DataloaderUnpinnedMemory

ALL_RULES: tuple[type[Rule], ...] = (
    DataloaderSyncLoading,  # ACL101
    DataloaderUnpinnedMemory,  # ACL102
)
