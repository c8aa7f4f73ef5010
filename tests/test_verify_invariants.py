"""The judges of intended changes, each on a small constructed pair of scripts run
for real under the runner (an original and its fix), with the judge registered
for the invariant; and the registry covers every invariant a rule can declare."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from accel_lint.rule import Invariant
from accel_lint.verify import compare as cmp
from accel_lint.verify.invariants import JUDGES
from accel_lint.verify.launch import RunResult, RunSpec, Target, run


def test_every_invariant_has_a_judge() -> None:
    assert set(JUDGES) == set(Invariant)


def _runs(tmp_path: Path, original: str, fixed: str, steps: int = 3) -> tuple[RunResult, RunResult]:
    work = tmp_path / "project"
    work.mkdir(exist_ok=True)
    (work / "train.py").write_text("", encoding="utf-8")
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    target = Target(work, Path("train.py"), (), steps, 1, 120.0)
    a = run(target, RunSpec("original", textwrap.dedent(original), save_state=True), scratch)
    b = run(target, RunSpec("fixed", textwrap.dedent(fixed), reference=a.state_file), scratch)
    return a, b


RAISES = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
loader = DataLoader(data, batch_size=4{extra})
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    optimizer.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
"""


@pytest.mark.slow
def test_original_raises_holds_when_only_the_fixed_script_runs(tmp_path: Path) -> None:
    # persistent workers without workers: DataLoader raises ValueError
    original, fixed = _runs(
        tmp_path, RAISES.format(extra=", persistent_workers=True"), RAISES.format(extra="")
    )
    assert original.status == "crashed" and fixed.ok
    verdict = JUDGES[Invariant.ORIGINAL_RAISES].judge(original, fixed)
    assert verdict.holds, verdict.reason
    assert verdict.notes[0].startswith("the original raised ValueError: persistent_workers")
    assert verdict.notes[0].endswith("the fixed script ran 3 steps")
    # a fix that leaves the error in place fails; an original that runs proves nothing
    assert JUDGES[Invariant.ORIGINAL_RAISES].judge(original, original).verdict == cmp.FAILS
    assert JUDGES[Invariant.ORIGINAL_RAISES].judge(fixed, fixed).verdict == cmp.NOT_VERIFIABLE


CHECKPOINT = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.DataParallel(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for step in range(10):
    optimizer.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    optimizer.step()
    # the optimizer's state holds {{"momentum_buffer": tensor}} per parameter: a dict of
    # tensors that is no model's state dict
    checkpoint = {{"model": {state}, "optimizer": optimizer.state_dict(), "step": step}}
    torch.save(checkpoint, "checkpoint.pt")
"""


@pytest.mark.slow
def test_bare_checkpoint_holds_when_saved_state_dicts_load_into_the_bare_model(
    tmp_path: Path,
) -> None:
    original, fixed = _runs(
        tmp_path,
        CHECKPOINT.format(state="model.state_dict()"),
        CHECKPOINT.format(state="model.module.state_dict()"),
    )
    assert original.ok and fixed.ok, (original.message, fixed.message)
    saves = original.first["saves"]
    # one model state dict per save: the optimizer's momentum buffers are not one
    assert [[d["loads_into"] for d in s["state_dicts"]] for s in saves] == [[None], [None]]
    assert saves[0]["state_dicts"][0]["prefixed"] == 4
    verdict = JUDGES[Invariant.BARE_CHECKPOINT].judge(original, fixed)
    assert verdict.holds, verdict.reason
    assert verdict.notes == [
        "2 saved state dict(s) load into Sequential with strict=True and hold the original's "
        "tensors; the original's carried 8 keys with a wrapper prefix"
    ]
    unchanged = JUDGES[Invariant.BARE_CHECKPOINT].judge(original, original)
    assert unchanged.verdict == cmp.FAILS
    assert "does not load into the bare model with strict=True (4 of 4 keys" in (
        unchanged.reason or ""
    )


CLIP = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
for step in range(10):
    optimizer.zero_grad()
    loss = model(torch.randn(8, 4)).pow(2).mean()
    scaler.scale(loss).backward(){unscale}
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
    scaler.step(optimizer)
    scaler.update()
"""


@pytest.mark.slow
def test_unscaled_clip_holds_when_clipping_sees_the_true_gradients(tmp_path: Path) -> None:
    original, fixed = _runs(
        tmp_path,
        CLIP.format(unscale=""),
        CLIP.format(unscale="\n    scaler.unscale_(optimizer)"),
    )
    assert original.ok and fixed.ok, (original.message, fixed.message)
    first = original.first["clips"][0]
    assert (first["scale"], first["unscaled"]) == (1024.0, False)
    verdict = JUDGES[Invariant.UNSCALED_CLIP].judge(original, fixed)
    assert verdict.holds, verdict.reason
    assert verdict.notes[0] == "3 clipping call(s) saw unscaled gradients"
    assert verdict.notes[1].startswith("the original clipped gradients scaled by 1024 (norm ")
    unchanged = JUDGES[Invariant.UNSCALED_CLIP].judge(original, original)
    assert unchanged.verdict == cmp.FAILS
    assert unchanged.reason == "clipping at step 1 still sees gradients scaled by 1024"
