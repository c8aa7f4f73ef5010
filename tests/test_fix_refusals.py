"""Fixes withheld where they would change what the script does (issue 22's shapes):

- ACL104 adds no `persistent_workers=True` to a loader iterated twice at once: a
  persistent loader hands out a single iterator, and here is what that does to a
  real DataLoader;
- ACL410 rewrites every use of apex's wrapper in a file, or none: the issue's GAN,
  whose discriminator kept calling the import the fix had removed.

The findings' exact reasons are checked on the case files (tests/cases/), whose
fixed snapshots `test_cases.py` checks.
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

from tests.support import ROOT, lint_messages, settings_for, strip_markers

CASES = ROOT / "tests" / "cases"


def _reasons(case: str, code: str) -> list[tuple[int, str | None]]:
    text, _ = strip_markers((CASES / f"{case}.py").read_text(encoding="utf-8"))
    out = []
    for row, got, message in lint_messages(text, settings_for((code,))):
        assert got == code
        _, _, reason = message.partition(" (no fix: ")
        out.append((row, reason[:-1] if reason else None))
    return out


def test_acl104_no_fix_for_a_loader_iterated_twice_at_once() -> None:
    shared = (
        "this loader is read inside a loop over itself: a persistent loader hands out a "
        "single iterator, so the inner read would use up the outer loop's batches"
    )
    assert _reasons("ACL104_iterated_twice", "ACL104") == [
        (13, None),  # the labelled loader, read once at a time: fixed
        (
            14,
            "the loop reads this loader twice at once (`zip(labelled, unlabelled, "
            "unlabelled)`): a persistent loader hands out a single iterator, so the two "
            "would share it and each epoch would run half the steps",
        ),
        (24, shared),
        (39, shared),
    ]


def _steps(persistent: bool) -> tuple[int, int, int]:
    """Steps of one epoch over `zip(loader, loader)`, and of a loop over the loader
    with a loop over it inside (outer steps, inner steps)."""
    loader = DataLoader(
        TensorDataset(torch.arange(16)), batch_size=4, num_workers=1, persistent_workers=persistent
    )
    zipped = sum(1 for _ in zip(loader, loader))
    outer = inner = 0
    for _ in loader:
        outer += 1
        for _ in loader:
            inner += 1
    return zipped, outer, inner


def test_a_persistent_loader_shares_one_iterator_between_two_iterations() -> None:
    """Why ACL104 withholds its fix: the same shapes, run for real on a loader of 4
    batches."""
    assert _steps(persistent=False) == (4, 4, 16)
    assert _steps(persistent=True) == (2, 1, 4)


def test_acl410_rewrites_every_wrap_or_none() -> None:
    assert _reasons("ACL410_gan", "ACL410") == [(18, None), (19, None)]
    apex_option = "`shared_param` has no counterpart in torch's DistributedDataParallel"
    assert _reasons("ACL410_gan_no_fix", "ACL410") == [
        (14, apex_option),
        (
            23,
            f"another wrap with apex's DistributedDataParallel cannot be rewritten "
            f"({apex_option}), and the file's wraps are rewritten all together or not at all",
        ),
    ]
    assert _reasons("ACL410_isinstance", "ACL410") == [
        (
            13,
            "`ApexDDP` is also used other than to wrap a model, and the file's uses of "
            "apex's wrapper are rewritten all together or not at all",
        )
    ]
