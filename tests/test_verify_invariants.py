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


# -- gradient accumulation (ACL318-ACL320) and binary cross-entropy (ACL321) ------------
# The fixed scripts are the rules' own fixes of the originals.


def _fixed_by(code: str, original: str) -> str:
    from tests.support import fix, settings_for

    fixed = fix(textwrap.dedent(original), settings_for((code,), unsafe=True))
    assert fixed != textwrap.dedent(original), f"{code} did not fix the fixture"
    return fixed


ZERO_EVERY_MICRO_BATCH = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum = 3
for i in range(30):
    opt.zero_grad()
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    loss = nn.functional.mse_loss(model(x), y) / accum
    loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
"""


@pytest.mark.slow
def test_window_gradients_hold_when_each_step_sums_its_micro_batches(tmp_path: Path) -> None:
    fixed_text = _fixed_by("ACL318", ZERO_EVERY_MICRO_BATCH)
    original, fixed = _runs(tmp_path, ZERO_EVERY_MICRO_BATCH, fixed_text)
    assert original.ok and fixed.ok, (original.message, fixed.message)
    assert [len(w["micro"]) for w in fixed.first["grad_windows"]] == [3, 3, 3]
    verdict = JUDGES[Invariant.WINDOW_GRADIENTS].judge(original, fixed)
    assert verdict.holds, verdict.reason
    assert verdict.notes == [
        "3 step(s): each sees the sum of its window's backward passes (3 window(s) of more "
        "than one, none zeroed inside)",
        "the original zeroed the gradients inside 3 of 3 window(s)",
    ]
    # the step sees what the window's passes added up to (nothing else touched them)
    for window in fixed.first["grad_windows"]:
        added = [
            sum(m["after"][j] - m["before"][j] for m in window["micro"])
            for j in range(len(window["at_step"]))
        ]
        assert added == pytest.approx(window["at_step"], rel=1e-6)
    unchanged = JUDGES[Invariant.WINDOW_GRADIENTS].judge(original, original)
    assert (unchanged.verdict, unchanged.reason) == (
        cmp.FAILS,
        "the gradients are zeroed inside the window of step 1: the step sees the last "
        "micro-batches' gradients only",
    )


SCALER_EVERY_MICRO_BATCH = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
accum = 3
for i in range(30):
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    loss = nn.functional.mse_loss(model(x), y) / accum
    scaler.scale(loss).backward()
    {every}
    if (i + 1) % accum == 0:
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        opt.zero_grad()
    {after}
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("every", "after", "raised"),
    [
        ("pass", "scaler.update()", "AssertionError: No inf checks were recorded prior to update."),
        (
            "scaler.unscale_(opt)",
            "pass",
            "RuntimeError: unscale_() has already been called on this optimizer since the "
            "last update().",
        ),
    ],
    ids=["update", "unscale"],
)
def test_constant_scale_holds_when_the_scaler_is_driven_once_per_window(
    tmp_path: Path, every: str, after: str, raised: str
) -> None:
    if every == "pass":
        text = SCALER_EVERY_MICRO_BATCH.format(every="", after=after)
    else:
        text = SCALER_EVERY_MICRO_BATCH.format(every=every, after="scaler.update()")
        # the update in the step branch: only unscale_ runs on every micro-batch
        text = text.replace(
            "        opt.zero_grad()\n    scaler.update()",
            "        scaler.update()\n        opt.zero_grad()",
        )
    fixed_text = _fixed_by("ACL319", text)
    original, fixed = _runs(tmp_path, text, fixed_text)
    assert original.status == "crashed" and fixed.ok, (original.message, fixed.message)
    verdict = JUDGES[Invariant.CONSTANT_SCALE].judge(original, fixed)
    assert verdict.holds, verdict.reason
    assert verdict.notes == [
        "the scale is constant inside each of 3 window(s)",
        f"the original raised {raised}",
    ]
    assert JUDGES[Invariant.CONSTANT_SCALE].judge(fixed, original).verdict == cmp.FAILS


CLIP_EVERY_MICRO_BATCH = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum = 4
for i in range(40):
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    loss = nn.functional.mse_loss(model(x), y) / accum
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 0.1)
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
"""


@pytest.mark.slow
def test_one_clip_per_step_holds_when_the_clip_moves_into_the_step_branch(
    tmp_path: Path,
) -> None:
    fixed_text = _fixed_by("ACL320", CLIP_EVERY_MICRO_BATCH)
    original, fixed = _runs(tmp_path, CLIP_EVERY_MICRO_BATCH, fixed_text)
    assert original.ok and fixed.ok, (original.message, fixed.message)
    verdict = JUDGES[Invariant.ONE_CLIP_PER_STEP].judge(original, fixed)
    assert verdict.holds, verdict.reason
    assert verdict.notes == [
        "one clipping call before each of 3 step(s)",
        "the original clipped up to 4 times per step",
    ]
    unchanged = JUDGES[Invariant.ONE_CLIP_PER_STEP].judge(original, original)
    assert (unchanged.verdict, unchanged.reason) == (
        cmp.FAILS,
        "4 clipping call(s) before step 1, not one",
    )


BCE_UNDER_AUTOCAST = """
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(10):
    x, y = torch.randn(8, 4), torch.rand(8, 1)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.binary_cross_entropy(torch.sigmoid(model(x)), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.mark.slow
def test_bce_under_autocast_is_not_verifiable_without_cuda(tmp_path: Path) -> None:
    # without CUDA, torch disables a CUDA autocast: the original runs, in float32
    fixed_text = _fixed_by("ACL321", BCE_UNDER_AUTOCAST)
    assert "F.binary_cross_entropy_with_logits(model(x), y)" in fixed_text
    original, fixed = _runs(tmp_path, BCE_UNDER_AUTOCAST, fixed_text)
    assert original.ok and fixed.ok, (original.message, fixed.message)
    assert len(fixed.first["logits_losses"]) == 3
    verdict = JUDGES[Invariant.RAISES_THEN_CLOSE].judge(original, fixed)
    assert verdict.verdict == cmp.NOT_VERIFIABLE
    assert (verdict.reason or "").startswith(
        "the original did not raise here: CUDA autocast cannot run on this machine"
    )
    assert verdict.notes[0] == (
        "3 loss(es) on logits within 0.0001 of binary cross-entropy on the sigmoid in float64"
    )
    assert verdict.notes[1].startswith("the fixed losses are within ")


@pytest.mark.slow
def test_bce_under_autocast_holds_where_the_original_raises(tmp_path: Path) -> None:
    # CUDA autocast's refusal, raised by hand: this machine cannot run CUDA autocast
    refused = BCE_UNDER_AUTOCAST.replace(
        "        loss = F.binary_cross_entropy(",
        '        raise RuntimeError("torch.nn.functional.binary_cross_entropy and '
        'torch.nn.BCELoss are unsafe to autocast.")\n'
        "        loss = F.binary_cross_entropy(",
    )
    fixed_text = _fixed_by("ACL321", BCE_UNDER_AUTOCAST)
    original, fixed = _runs(tmp_path, refused, fixed_text)
    assert original.status == "crashed" and fixed.ok, (original.message, fixed.message)
    verdict = JUDGES[Invariant.RAISES_THEN_CLOSE].judge(original, fixed)
    assert verdict.holds, verdict.reason
    assert verdict.notes[0] == (
        "the original raised RuntimeError: torch.nn.functional.binary_cross_entropy and "
        "torch.nn.BCELoss are unsafe to autocast.; the fixed script ran 3 steps"
    )


# a script that runs anywhere: on a CPU, its autocast is CPU autocast, which runs the
# original (its sigmoid in bfloat16)
BCE_UNDER_DEVICE_AUTOCAST = BCE_UNDER_AUTOCAST.replace(
    "torch.manual_seed(0)",
    'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\ntorch.manual_seed(0)',
).replace('torch.autocast("cuda", ', "torch.autocast(device.type, ")


@pytest.mark.slow
def test_bce_under_cpu_autocast_is_not_verifiable_and_not_held_to_float32(
    tmp_path: Path,
) -> None:
    fixed_text = _fixed_by("ACL321", BCE_UNDER_DEVICE_AUTOCAST)
    assert "F.binary_cross_entropy_with_logits(model(x), y)" in fixed_text
    original, fixed = _runs(tmp_path, BCE_UNDER_DEVICE_AUTOCAST, fixed_text)
    assert original.ok and fixed.ok, (original.message, fixed.message)
    # the original's BCE saw bfloat16 probabilities; the fixed reference's is not counted
    assert original.first["probability_losses"] == {"bfloat16": 3}
    assert fixed.first["probability_losses"] == {}
    verdict = JUDGES[Invariant.RAISES_THEN_CLOSE].judge(original, fixed)
    # not "fails: the original ran here in float32": its losses are bfloat16's
    assert (verdict.verdict, verdict.reason) == (
        cmp.NOT_VERIFIABLE,
        "the original did not raise here: CUDA autocast cannot run on this machine, and CPU "
        "autocast ran binary cross-entropy on bfloat16 probabilities (it refuses nothing), so "
        "the original's losses are not float32's",
    )
    assert verdict.notes[0] == (
        "3 loss(es) on logits within 0.0001 of binary cross-entropy on the sigmoid in float64"
    )
    assert verdict.notes[1].startswith(
        "the original's losses (binary cross-entropy on bfloat16 probabilities) differ from "
        "the fixed ones by up to "
    )


BCE_ON_SIGMOID_MODEL = """
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1), nn.Sigmoid())

    def forward(self, x):
        return self.body(x)


torch.manual_seed(0)
model = Classifier()
criterion = nn.BCELoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(10):
    x, y = torch.randn(8, 4), torch.rand(8, 1)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = criterion(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.mark.slow
def test_bce_on_a_sigmoid_model_is_judged_as_the_rule_says(tmp_path: Path) -> None:
    # the fix drops the model's nn.Sigmoid: its losses on logits are checked the same way
    fixed_text = _fixed_by("ACL321", BCE_ON_SIGMOID_MODEL)
    assert "nn.Linear(8, 1))" in fixed_text
    assert "nn.functional.binary_cross_entropy_with_logits(model(x), y)" in fixed_text
    original, fixed = _runs(tmp_path, BCE_ON_SIGMOID_MODEL, fixed_text)
    assert original.ok and fixed.ok, (original.message, fixed.message)
    verdict = JUDGES[Invariant.RAISES_THEN_CLOSE].judge(original, fixed)
    assert verdict.verdict == cmp.NOT_VERIFIABLE
    assert verdict.notes[0] == (
        "3 loss(es) on logits within 0.0001 of binary cross-entropy on the sigmoid in float64"
    )
    assert verdict.notes[1].startswith("the fixed losses are within ")
    # where CUDA autocast refuses the original (raised by hand here), the fix holds
    refused = BCE_ON_SIGMOID_MODEL.replace(
        "        loss = criterion(",
        '        raise RuntimeError("torch.nn.functional.binary_cross_entropy and '
        'torch.nn.BCELoss are unsafe to autocast.")\n'
        "        loss = criterion(",
    )
    (tmp_path / "refused").mkdir()
    original, fixed = _runs(tmp_path / "refused", refused, fixed_text)
    assert original.status == "crashed" and fixed.ok, (original.message, fixed.message)
    verdict = JUDGES[Invariant.RAISES_THEN_CLOSE].judge(original, fixed)
    assert verdict.holds, verdict.reason
