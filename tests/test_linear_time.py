"""A file twice as long costs twice as much (issue 9, item 5): a script
concatenated N times binds each name N times and uses it N times, so anything
that walks every binding at every use is quadratic. The work is counted, not
timed, so the test is exact on a loaded machine."""

from __future__ import annotations

import pytest

import accel_lint.facts.ranks as ranks
import accel_lint.names as names
from accel_lint.config import Selection, load_settings
from accel_lint.lint import lint_bytes

SCRIPT = """\
import os
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

dist.init_process_group("nccl")
ddp_rank = int(os.environ.get("RANK", 0))
writer = ddp_rank == 0
model = torch.nn.Linear(4, 4)
loader = DataLoader(range(8), batch_size=2)
for step, batch in enumerate(loader):
    loss = model(batch).sum()
    loss.backward()
    if writer:
        torch.save(model.state_dict(), "last.pt")
"""


def _work(copies: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """Bindings looked at while resolving names, and rank questions asked."""
    seen = [0, 0]
    placeholder, rank_kind = names._is_none_placeholder, ranks.RankAnalysis.rank_kind

    def counting_placeholder(binding):  # type: ignore[no-untyped-def]
        seen[0] += 1  # once per binding looked at
        return placeholder(binding)

    def counting_rank_kind(self, expr, scope, depth=0):  # type: ignore[no-untyped-def]
        seen[1] += 1
        return rank_kind(self, expr, scope, depth)

    monkeypatch.setattr(names, "_is_none_placeholder", counting_placeholder)
    monkeypatch.setattr(ranks.RankAnalysis, "rank_kind", counting_rank_kind)
    settings = load_settings(isolated=True, cli=Selection(select=("ALL",)))
    report = lint_bytes("train.py", ("\n".join([SCRIPT] * copies)).encode(), settings)
    assert report.internal_error is None
    monkeypatch.undo()
    return seen[0], seen[1]


def test_name_resolution_and_rank_analysis_are_linear_in_the_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    small = _work(4, monkeypatch)
    large = _work(32, monkeypatch)
    for before, after in zip(small, large):
        assert before > 0, (small, large)
        # 8 times the file: 8 times the work, with room for constant terms; the
        # quadratic walks this replaced did about 64 times
        assert after <= 12 * before, (small, large)
