"""A file twice as long costs twice as much (issue 9, item 5): a script
concatenated N times binds each name N times and uses it N times, so anything
that walks every binding at every use is quadratic. The work is counted, not
timed, so the test is exact on a loaded machine."""

from __future__ import annotations

import pytest

import accel_lint.facts.calls as calls
import accel_lint.facts.devices as devices
import accel_lint.facts.loader_flow as loader_flow
import accel_lint.facts.ranks as ranks
import accel_lint.facts.wrappers as wrappers
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


# A training script whose loaders, model and checkpoint travel through the file's
# functions: pasted N times, every function name is bound N times, and every call of
# it may run any of the N definitions. A walk up the calls that asks again at each
# step (issue 24: ACL104's, the wrapper and sampler analyses) costs N per step, and
# the script 64 times over never finished.
TRAIN_SCRIPT = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def build_loaders(data, workers):
    sampler = DistributedSampler(data)
    train = DataLoader(data, batch_size=8, sampler=sampler, num_workers=workers)
    val = DataLoader(data, batch_size=8, num_workers=workers)
    return train, val, sampler


def train_one_epoch(model, loader, optimizer, accumulate, state):
    for i, (x, y) in enumerate(loader):
        loss = (model(x.cuda()) - y.cuda()).pow(2).mean()
        loss.backward()
        if i - state["last"] >= accumulate:
            optimizer.step()
            optimizer.zero_grad()
            state["last"] = i


def run_epochs(model, optimizer, loaders, sampler, epochs):
    train, val = loaders
    state = {"last": -1}
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        train_one_epoch(model, train, optimizer, 4, state)
        checkpoint = {"model": model.state_dict(), "epoch": epoch}
        torch.save(checkpoint, "last.pt")
    return len(val)


def main(data):
    dist.init_process_group("nccl")
    rank = int(os.environ["LOCAL_RANK"])
    model = DDP(torch.nn.Linear(4, 4).cuda(rank), device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train, val, sampler = build_loaders(data, 4)
    run_epochs(model, optimizer, [train, val], sampler, 10)


if __name__ == "__main__":
    main(torch.load("data.pt"))
"""


def _follow_work(copies: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """Questions the shared flow analyses answered (each counted when it is worked
    out, not when a memo answers it), and the findings."""
    counted = [0]
    targets = [
        (loader_flow.LoaderFlow, "_origins"),
        (loader_flow.LoaderFlow, "_find_part"),
        (wrappers.Wrappers, "_wrap_state"),
        (devices.Devices, "_kind"),
        (calls.CallGraph, "invocations"),
    ]
    for owner, name in targets:
        original = getattr(owner, name)

        def counting(*args, _original=original, **kwargs):  # type: ignore[no-untyped-def]
            counted[0] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(owner, name, counting)
    settings = load_settings(isolated=True, cli=Selection(select=("ALL",)))
    report = lint_bytes("train.py", ("\n".join([TRAIN_SCRIPT] * copies)).encode(), settings)
    assert report.internal_error is None
    monkeypatch.undo()
    return counted[0], len(report.diagnostics)


def test_following_values_through_calls_is_linear_in_a_pasted_script(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one, found_one = _follow_work(1, monkeypatch)
    small, _ = _follow_work(8, monkeypatch)
    large, found_large = _follow_work(64, monkeypatch)
    assert found_one > 0 and found_large > 0
    # 8 times the file, 8 times the work with room for constant terms (a walk that
    # branched on every definition did 64 times or more)
    assert large <= 12 * small, (one, small, large)
