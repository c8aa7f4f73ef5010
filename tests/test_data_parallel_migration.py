"""ACL401's migration from DataParallel to DistributedDataParallel.

The migrated `fixtures/data_parallel` script is run for real: as `python
train.py` (a group of one) and under `torchrun --nproc_per_node=2` on CPU
(gloo). A `sitecustomize` hook records every `torch.save` with the rank that
made it, so "rank 0 writes the checkpoint exactly once" is observed, not
inferred. The fixture has no shuffling, BatchNorm or dropout, so the two-process
run must also train the same model as the original (ACL401's "close" class).

The rest checks, in process, the shapes the codemod refuses (and the reason it
gives), its equivalence verdicts, its spelling of imports, and the plan
composer that turns nested edits into one fix.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
import pytest

from accel_lint.engine import analyze
from accel_lint.rule import Equivalence, FixSafety
from accel_lint.rules.data_parallel import DataParallel
from accel_lint.rules.data_parallel.plan import GuardRun, Plan, merge, to_fix
from accel_lint.rules.data_parallel.tree import Tree
from accel_lint.source import Source
from tests.support import ROOT, fix, lint, lint_messages, settings_for, strip_markers

FIXTURE = ROOT / "fixtures" / "data_parallel" / "train.py"
ARGS = ["--epochs", "2", "--save", "checkpoint.pt"]

_HOOK = """\
import os

if os.environ.get("ACCEL_LINT_SAVE_LOG"):
    import torch
    import torch.distributed as dist

    _save = torch.save

    def _logged_save(obj, f, *args, **kwargs):
        rank = dist.get_rank() if dist.is_initialized() else "none"
        with open(os.environ["ACCEL_LINT_SAVE_LOG"], "a") as log:
            log.write(f"{rank} {f}\\n")
        return _save(obj, f, *args, **kwargs)

    torch.save = _logged_save
"""


def migrate(text: str) -> str:
    return fix(text, settings_for(("ACL401",), unsafe=True))


@dataclass
class Run:
    result: subprocess.CompletedProcess[str]
    saves: list[str]  # "<rank> <path>" per torch.save call
    checkpoint: Path


def _run(script: str, tmp: Path, name: str, torchrun: bool, args: list[str] = ARGS) -> Run:
    work = tmp / name
    work.mkdir()
    (work / "train.py").write_text(script, encoding="utf-8")
    hook = tmp / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(_HOOK, encoding="utf-8")
    log = work / "saves.log"
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]),
        "ACCEL_LINT_SAVE_LOG": str(log),
    }
    launcher = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    cmd = [sys.executable, *(launcher if torchrun else []), "train.py", *args]
    result = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=240)
    saves = log.read_text().splitlines() if log.exists() else []
    return Run(result, saves, work / "checkpoint.pt")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("data_parallel")
    original = FIXTURE.read_text(encoding="utf-8")
    migrated = migrate(original)
    assert migrated != original
    return {
        "original": _run(original, tmp, "original", torchrun=False),
        "python": _run(migrated, tmp, "python", torchrun=False),
        "torchrun": _run(migrated, tmp, "torchrun", torchrun=True),
    }


def _succeeded(run: Run) -> None:
    assert run.result.returncode == 0, run.result.stdout[-2000:] + run.result.stderr[-4000:]


@pytest.mark.slow
def test_migrated_script_runs_under_torchrun_and_rank_zero_saves_once(runs: dict[str, Run]) -> None:
    run = runs["torchrun"]
    _succeeded(run)
    assert run.saves == ["0 checkpoint.pt"]
    assert run.checkpoint.exists()
    # rank 0 alone prints: one line per epoch, then the save
    assert run.result.stdout.count("epoch ") == 2
    assert run.result.stdout.count("saved checkpoint.pt") == 1


@pytest.mark.slow
def test_migrated_script_runs_without_torchrun(runs: dict[str, Run]) -> None:
    run = runs["python"]
    _succeeded(run)
    assert run.saves == ["0 checkpoint.pt"]
    assert run.result.stdout.count("epoch ") == 2


@pytest.mark.slow
def test_two_processes_train_the_model_the_original_trains(runs: dict[str, Run]) -> None:
    import torch

    _succeeded(runs["original"])
    _succeeded(runs["torchrun"])
    before = torch.load(runs["original"].checkpoint)
    after = torch.load(runs["torchrun"].checkpoint)
    # DistributedDataParallel always wraps; the original wraps only on several GPUs
    after = {k.removeprefix("module."): v for k, v in after.items()}
    assert set(after) == set(before)
    # Only the summation order differs (two half-batch mean gradients, all-reduced):
    # measured 1.3e-5 at most after 64 SGD-momentum steps (rel-norm 4.5e-6). A wrong
    # batch split, shard or missing all-reduce moves the weights by 1e-2 and more.
    for name, value in before.items():
        torch.testing.assert_close(after[name], value, rtol=1e-4, atol=1e-4, msg=name)


# -- real scripts' shapes, migrated and run -------------------------------------------

CASES = ROOT / "tests" / "cases"
# the case files run on CPU as they are; one epoch, so rank 0 saves exactly once
SHAPES = {
    # kuangliu/pytorch-cifar main.py: module level, the wrap in `if device == "cuda":`
    "wrap_in_if": (["--epochs", "1", "--out", "ckpt"], "ckpt/ckpt.pth"),
    # clovaai/CutMix-PyTorch train.py: `main()`, the dataset built in the loader call
    "dataset_in_call": (["--epochs", "1"], "runs/run/checkpoint.pth.tar"),
    # one model wrapped in both branches of an `if`; epochs counted by a `while` loop
    "branches": (["--epochs", "1"], "runs/model.pt"),
    # the BERT-era fine-tuning shape: its own DDP path, DataParallel as the fallback
    "own_ddp": (["--num_train_epochs", "1"], "output/model.bin"),
    # WongKinYiu/yolov7 train.py: its own DDP path; `train()` unpacks its rank from `opt`
    "rank_unpacked": (["--epochs", "1"], "runs/train/last.pt"),
    # ultralytics/yolov3 train.py: its own DDP path, wrapped by `model = smart_DDP(model)`
    "ddp_helper": (["--epochs", "1"], "runs/train/last.pt"),
    # Tianxiaomo/pytorch-YOLOv4 train.py: loader and epoch loop in the `train()` it calls
    "train_function": (["--epochs", "1"], "checkpoints/model1.pth"),
    # meetps/pytorch-semseg train.py: `while i <= train_iters` passes over the loader, and
    # counts no epochs: the migration counts its passes for `set_epoch`
    "while_iterations": (["--iters", "12"], "runs/best_model.pkl"),
    # clovaai/CutMix-PyTorch train.py: one training loader per dataset branch; run both the
    # CIFAR branch (dataset built in the call) and the ImageNet one (`train_sampler = None`)
    "loaders_in_branches": (["--epochs", "1"], "runs/run/checkpoint.pth.tar"),
    "loaders_in_branches+imagenet": (
        ["--epochs", "1", "--dataset", "imagenet"],
        "runs/run/checkpoint.pth.tar",
    ),
    # a trainer class: `__init__` builds the loaders and wraps `self.model`, `train()` loops
    "trainer_class": (["--epochs", "1"], "runs/model.pt"),
    # pytorch/examples imagenet/main.py (MoCo, SimSiam): its own DDP path in `main_worker`
    "imagenet": (["--epochs", "1", "-j", "0", "--dist-backend", "gloo"], "runs/checkpoint.pth.tar"),
}
# migrated scripts that, run with plain `python`, take their own single-process path
SINGLE_PROCESS_WITHOUT_TORCHRUN = {"own_ddp", "rank_unpacked", "ddp_helper", "imagenet"}
# what the scripts write besides the checkpoint (the best one's copy, by rank 0)
ALSO_WRITTEN = {
    "dataset_in_call": "runs/run/model_best.pth.tar",
    "loaders_in_branches": "runs/run/model_best.pth.tar",
    "loaders_in_branches+imagenet": "runs/run/model_best.pth.tar",
    "imagenet": "runs/model_best.pth.tar",
}


@pytest.fixture(scope="module")
def shape_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Run]:
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("shapes")
    out: dict[tuple[str, str], Run] = {}
    for shape, (args, _) in SHAPES.items():
        case = shape.split("+")[0]  # `case+variant`: the same case file, other arguments
        original = (CASES / f"ACL401_{case}.py").read_text(encoding="utf-8")
        # the reviewed snapshot of the migration (tests/test_cases.py keeps it current)
        migrated = (CASES / f"ACL401_{case}.fixed.py").read_text(encoding="utf-8")
        for kind, script, torchrun in [
            ("original", original, False),
            ("python", migrated, False),
            ("torchrun", migrated, True),
        ]:
            out[shape, kind] = _run(script, tmp, f"{shape}-{kind}", torchrun, args)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("shape", list(SHAPES))
def test_real_shapes_run_migrated_under_torchrun_and_python(
    shape: str, shape_runs: dict[tuple[str, str], Run]
) -> None:
    checkpoint = SHAPES[shape][1]
    original = shape_runs[shape, "original"]
    _succeeded(original)
    assert original.saves == [f"none {checkpoint}"]
    for kind in ("python", "torchrun"):
        run = shape_runs[shape, kind]
        _succeeded(run)
        # every process trained, one saved
        rank = "none" if kind == "python" and shape in SINGLE_PROCESS_WITHOUT_TORCHRUN else "0"
        assert run.saves == [f"{rank} {checkpoint}"], kind
        work = run.checkpoint.parent
        assert (work / checkpoint).exists()
        if shape in ALSO_WRITTEN:
            assert (work / ALSO_WRITTEN[shape]).read_bytes() == (work / checkpoint).read_bytes()


# -- the shapes the codemod refuses -------------------------------------------------

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(dataset, batch_size=16, num_workers=2, pin_memory=True)
model = nn.DataParallel(nn.Linear(4, 1).cuda())
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def _acl401(text: str) -> list[str]:
    return [m for _, code, m in lint_messages(text) if code == "ACL401"]


def test_the_base_script_is_migrated() -> None:
    (message,) = _acl401(SCRIPT)
    assert "no fix" not in message
    migrated = migrate(SCRIPT)
    assert "nn.parallel.DistributedDataParallel(" in migrated
    # nothing new: only what the original had besides DataParallel (ACL103/ACL104)
    assert {code for _, code in lint(migrated)} <= {code for _, code in lint(SCRIPT)} - {"ACL401"}


def _variant(old: str, new: str) -> str:
    assert old in SCRIPT
    return SCRIPT.replace(old, new)


IMPORTS = SCRIPT[: SCRIPT.index("\ndataset")]
WRAP = "model = nn.DataParallel(nn.Linear(4, 1).cuda())\n"
EPOCHS = "for epoch in range(2):\n"
LOADER = "loader = DataLoader(dataset, batch_size=16, num_workers=2, pin_memory=True)\n"
# pytorch/examples' ImageNet loader without its distributed branch
NONE_SAMPLER = (
    "sampler = None\n"
    "loader = DataLoader(dataset, batch_size=16, shuffle=(sampler is None), sampler=sampler)\n"
)
TRAIN_FUNCTION = (CASES / "ACL401_train_function.py").read_text(encoding="utf-8")
TRAINER = (CASES / "ACL401_trainer_class.py").read_text(encoding="utf-8")


def _trainer(old: str, new: str) -> str:
    assert old in TRAINER
    return TRAINER.replace(old, new)


NO_FIX = [
    pytest.param(
        _variant(WRAP, WRAP + "spare = nn.DataParallel(nn.Linear(4, 1))\n"),
        "the script wraps 2 models in DataParallel (`nn.Linear(4, 1)`, `nn.Linear(4, 1).cuda()`)",
        id="two-models",
    ),
    pytest.param(
        _variant(WRAP, "models = [nn.DataParallel(nn.Linear(4, 1).cuda())]\nmodel = models[0]\n"),
        "the wrapped model is not assigned: the DataParallel call is used directly",
        id="not-assigned",
    ),
    pytest.param(
        _variant(
            WRAP,
            "class Holder:\n    pass\n\n\nholder = Holder()\n"
            "holder.model = nn.DataParallel(nn.Linear(4, 1).cuda())\nmodel = holder.model\n",
        ),
        "the wrapped model is assigned to an attribute (`holder.model = ...`); the migration "
        "follows a model held in a plain name only",
        id="assigned-to-an-attribute",
    ),
    pytest.param(
        # yassouali/pytorch-segmentation's base trainer: loaders come in, the loop is a subclass's
        IMPORTS + "\n\n\nclass BaseTrainer:\n"
        "    def __init__(self, model, train_loader):\n"
        "        self.train_loader = train_loader\n"
        "        self.model = nn.DataParallel(model)\n\n"
        "    def _train_epoch(self, epoch):\n"
        "        raise NotImplementedError\n",
        "the model is wrapped in `BaseTrainer.__init__()`, but the class builds no DataLoader "
        "and this file runs no `.backward()`: its loaders and training loop are in other files",
        id="base-trainer",
    ),
    pytest.param(
        _trainer(
            "    trainer.train()\n", "    trainer.train()\n    Trainer(parser.parse_args())\n"
        ),
        "`Trainer` is not built exactly once (outside loops) in this file; the migration of "
        "a trainer class sets the process group up in its `__init__`",
        id="trainer-built-twice",
    ),
    pytest.param(
        _trainer("    trainer.train()\n", "    trainer.train()\n    print(trainer.validate())\n"),
        "`trainer.train()` is not the last statement of the script; the process group ends "
        "with `Trainer.train()`",
        id="trainer-used-after-its-epoch-method",
    ),
    pytest.param(
        _trainer(
            "        self.criterion = nn.CrossEntropyLoss()\n",
            "        self.criterion = nn.CrossEntropyLoss()\n"
            "        self.train_loader = list(self.train_loader)\n",
        ),
        "the training loader `self.train_loader` is assigned more than once",
        id="trainer-loader-rebound",
    ),
    pytest.param(
        _trainer("    def validate(self):\n", "    def validate(self):\n        DataLoader([])\n"),
        "`DataLoader([])` builds a DataLoader elsewhere than in `Trainer.__init__()`",
        id="trainer-loader-elsewhere",
    ),
    pytest.param(
        _trainer("    trainer = Trainer(", "    os.makedirs('logs')\n    trainer = Trainer("),
        "`os.makedirs('logs')` runs outside the trainer class `Trainer` (or before its "
        "process group), on every process",
        id="trainer-directory-outside",
    ),
    pytest.param(
        _trainer(
            "    def train(self):\n        for epoch",
            "    def train(self):\n        self.fit()\n\n    def fit(self):\n        for epoch",
        ),
        "`Trainer.fit()`, which holds the epoch loop, is not called exactly once (outside "
        "loops) in this file",
        id="trainer-epoch-method-called-by-the-class",
    ),
    pytest.param(
        _trainer("    trainer = Trainer(", "    Trainer.save(None, 'x')\n    trainer = Trainer("),
        "`Trainer.save(None, 'x')` calls `Trainer` itself, maybe before its `__init__` sets "
        "the process group up",
        id="trainer-class-called-itself",
    ),
    pytest.param(
        _variant(
            WRAP,
            "model = nn.Linear(4, 1).cuda()\n"
            "if torch.cuda.device_count() > 2:\n"
            "    model = nn.DataParallel(model, device_ids=[0, 1, 2])\n"
            "else:\n"
            "    net = nn.DataParallel(model)\n",
        ),
        "the branches of the `if` wrap different models (`model = model`, `net = model`)",
        id="branches-bind-different-names",
    ),
    pytest.param(
        _variant(
            WRAP,
            "model = nn.Linear(4, 1).cuda()\n"
            "\n\ndef evaluate(x):\n    return nn.DataParallel(model)(x)\n\n\n"
            "model = nn.DataParallel(model)\n",
        ),
        "the model `model` is wrapped in DataParallel in each of 2 functions "
        "(`evaluate()`, the module level); the migration rewrites a single wrap",
        id="one-model-wrapped-in-two-functions",
    ),
    pytest.param(
        strip_markers((CASES / "ACL401_runner.py").read_text(encoding="utf-8"))[0],
        "the model `self.model` is wrapped in DataParallel in each of 2 functions "
        "(`train()`, `sample()`); the migration rewrites a single wrap",
        id="runner-train-and-sample",
    ),
    pytest.param(
        strip_markers((CASES / "ACL401_attribute_branches.py").read_text(encoding="utf-8"))[0],
        "the model is wrapped once in each branch of an `if`, but the wrapped model is "
        "assigned to an attribute (`self.model = ...`)",
        id="attribute-in-exclusive-branches",
    ),
    pytest.param(
        _variant(WRAP, "model = nn.DataParallel(nn.Linear(4, 1).cuda(), range(ngpu))\n")
        .replace("dataset = ", "ngpu = 2\ndataset = ")
        .replace("batch_size=16", "batch_size=16 * ngpu"),
        "`ngpu` picks the devices and is also used elsewhere (`loader = DataLoader(",
        id="device-count-scales-batch",
    ),
    pytest.param(
        _variant(WRAP, "model = nn.DataParallel(nn.Linear(4, 1).cuda(), dim=1)\n"),
        "DataParallel splits batches along `dim=1`",
        id="dim",
    ),
    pytest.param(
        _variant(WRAP, "model = nn.DataParallel(nn.Linear(4, 1).cuda(), list(range(2, 4)))\n"),
        "`device_ids=list(range(2, 4))` picks devices in a way the migration cannot follow",
        id="device-ids",
    ),
    pytest.param(
        _variant(
            WRAP,
            "model = nn.Linear(4, 1).cuda()\n"
            "if torch.cuda.device_count() > 1:\n"
            "    model = nn.DataParallel(model)\n"
            "else:\n"
            "    print('one device')\n",
        ),
        "the `if` around the wrap has an `else` branch",
        id="if-else",
    ),
    pytest.param(
        _variant(
            WRAP,
            "model = nn.Linear(4, 1)\n"
            "if torch.cuda.device_count() > 1:\n"
            "    model.cuda()\n"
            "    model = nn.DataParallel(model)\n"
            "    print(model)\n",
        ),
        "statements inside the `if` around the wrap must run before it, and others after "
        "it (`print(model)`)",
        id="around-wrap-in-if",
    ),
    pytest.param(
        _variant(
            WRAP,
            "model = nn.Linear(4, 1).cuda()\n"
            "if isinstance(model, nn.Linear):\n"
            "    model = nn.DataParallel(model)\n"
            "    print(model)\n",
        ),
        "the test of the `if` around the wrap reads the model (`model`)",
        id="test-reads-model",
    ),
    pytest.param(
        _variant(
            WRAP, "with torch.no_grad():\n    model = nn.DataParallel(nn.Linear(4, 1).cuda())\n"
        ),
        "the model is wrapped inside a nested block",
        id="nested-block",
    ),
    pytest.param(
        IMPORTS
        + "\nnet = nn.Linear(4, 1).cuda()\n\n\ndef main():\n"
        + textwrap.indent(_variant(WRAP, "model = nn.DataParallel(net)\n")[len(IMPORTS) :], "    "),
        "the model `net` is built outside the code that wraps it",
        id="model-built-elsewhere",
    ),
    pytest.param(
        _variant(WRAP, "model = nn.DataParallel(nn.Linear(4, 1).cuda(0))\n"),
        "`nn.Linear(4, 1).cuda(0)` pins a CUDA device",
        id="cuda-index",
    ),
    pytest.param(
        _variant("y.cuda()", 'y.to("cuda:1")'),
        'the script names the device `"cuda:1"`',
        id="cuda-string",
    ),
    pytest.param(
        _variant(WRAP, "torch.cuda.set_device(1)\n" + WRAP),
        "the script already picks its CUDA device",
        id="set-device",
    ),
    pytest.param(
        _variant(WRAP, WRAP + "torch.distributed.init_process_group('gloo')\n"),
        "the script already uses torch.distributed",
        id="already-distributed",
    ),
    pytest.param(
        _variant(WRAP, WRAP + "rank = 0\n"),
        "the script already uses the name `rank`",
        id="rank-taken",
    ),
    pytest.param(
        _variant(WRAP, WRAP + "print(nn.DataParallel.__doc__)\n"),
        "DataParallel is also used elsewhere (`print(nn.DataParallel.__doc__)`)",
        id="other-reference",
    ),
    pytest.param(
        _variant(
            WRAP,
            "def set_model():\n"
            "    model = nn.Linear(4, 1).cuda()\n"
            "    if torch.cuda.device_count() > 1:\n"
            "        model = nn.DataParallel(model)\n"
            "    return model\n\n\n"
            "model = set_model()\n",
        ),
        "the model is wrapped in `set_model()`, and no training loop over a DataLoader runs "
        "there (nor in a function it calls once to train): the migration needs the wrap and "
        "the training loop in one function",
        id="wrapped-in-a-helper",
    ),
    pytest.param(
        _variant("        loss.backward()\n", ""),
        "no training loop over a DataLoader was found",
        id="no-backward",
    ),
    pytest.param(
        _variant(EPOCHS, "if True:\n"),
        "the training loop over `loader` is not inside an epoch loop",
        id="no-epoch-loop",
    ),
    pytest.param(
        _variant(EPOCHS, "epoch = 0\nwhile epoch < 2:\n"),
        "the epoch loop around `loader` is a `while` loop that counts no epochs (`epoch += 1` "
        "in its body, before the loader is read), and the name `epoch` a count of its passes "
        "needs is taken",
        id="while-epochs",
    ),
    pytest.param(
        _variant(EPOCHS, "epoch = 0\nwhile epoch < 2:\n") + "    epoch += 1\n",
        "the epoch loop around `loader` is a `while` loop that counts its epochs after the "
        "loader is read",
        id="while-counted-after",
    ),
    pytest.param(
        _variant(EPOCHS, "for step, epoch in enumerate(range(2)):\n"),
        "the epoch loop's target `step, epoch` is not a single name",
        id="tuple-target",
    ),
    pytest.param(
        _variant(EPOCHS, "for _ in range(2):\n    print(_)\n"),
        "the epoch loop has no epoch variable",
        id="underscore-used",
    ),
    pytest.param(
        _variant(LOADER, "loader = DataLoader(dataset, batch_size=16, sampler=range(64))\n"),
        "`loader` already has its own sampler",
        id="own-sampler",
    ),
    pytest.param(
        _variant(LOADER, NONE_SAMPLER + "print(sampler)\n"),
        "`sampler`, the sampler of `loader`, is also read elsewhere",
        id="none-sampler-read-elsewhere",
    ),
    pytest.param(
        _variant(LOADER, NONE_SAMPLER) + "\n\ndef report():\n    return sampler\n",
        "`sampler`, the sampler of `loader`, is also read elsewhere",
        id="none-sampler-read-in-a-function",
    ),
    pytest.param(
        _variant(LOADER, NONE_SAMPLER.replace("(sampler is None)", "True")),
        "`loader` has `sampler=sampler` and a `shuffle=` of its own",
        id="none-sampler-own-shuffle",
    ),
    pytest.param(
        _variant(LOADER, NONE_SAMPLER.replace("sampler = None\n", "")).replace(
            "dataset = TensorDataset", "sampler = None\ndataset = TensorDataset"
        ),
        "`sampler = None` does not follow the dataset of `loader`",
        id="none-sampler-before-the-dataset",
    ),
    pytest.param(
        _variant(
            LOADER,
            "if len(dataset) > 32:\n"
            "    loader = DataLoader(dataset, batch_size=16)\n"
            "else:\n"
            "    loader = DataLoader(dataset, batch_size=8)\n"
            "loader = DataLoader(dataset, batch_size=4)\n",
        ),
        "the training loader `loader` is assigned more than once",
        id="loader-in-branches-and-after",
    ),
    pytest.param(
        _variant(
            LOADER,
            "loader_dataset = None\n"
            "loader = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=16)\n",
        ),
        "the dataset of `loader` is built in the call, and the names `dataset` and "
        "`loader_dataset` are taken",
        id="inline-dataset-name-taken",
    ),
    pytest.param(
        _variant(LOADER, "loader = DataLoader(dataset)\n"),
        "`loader` has no batch size to divide among the processes",
        id="no-batch-size",
    ),
    pytest.param(
        _variant(LOADER, "options = {}\nloader = DataLoader(dataset, batch_size=16, **options)\n"),
        "`loader` gets its arguments from `**options`",
        id="kwargs",
    ),
    pytest.param(
        _variant(LOADER, LOADER + "loader = DataLoader(dataset, batch_size=8)\n"),
        "the training loader `loader` is assigned more than once",
        id="loader-rebound",
    ),
    pytest.param(
        _variant(LOADER, "").replace(EPOCHS, EPOCHS + "    " + LOADER),
        "the training loader `loader` is built inside its epoch loop",
        id="loader-in-epoch-loop",
    ),
    pytest.param(
        SCRIPT + 'torch.save(model.state_dict(), "model.pt"); print("saved")\n',
        '`torch.save(model.state_dict(), "model.pt"); print("saved")` cannot be limited to '
        "rank 0 automatically",
        id="save-on-a-shared-line",
    ),
    pytest.param(
        _variant("import torch\n", "import torch\nsampler = loader_sampler = None\n"),
        "the script already uses the names `sampler` and `loader_sampler`",
        id="sampler-name-taken",
    ),
    pytest.param(
        _variant("batch_size=16", "batch_size=BATCH").replace(
            "\ndataset", "\nBATCH = 16\nbuffers = Buffers(batch=BATCH)\ndataset"
        ),
        "`buffers = Buffers(batch=BATCH)` is built for the batch of `loader` (`BATCH`), which "
        "each process now divides",
        id="something-else-built-for-the-batch",
    ),
    pytest.param(
        TRAIN_FUNCTION.replace("    train(model=", "    for _ in range(2):\n        train(model="),
        "no training loop over a DataLoader was found",
        id="train-function-called-in-a-loop",
    ),
]


@pytest.mark.parametrize(("text", "reason"), NO_FIX)
def test_shapes_beyond_the_codemod_say_why(text: str, reason: str) -> None:
    messages = _acl401(text)
    assert messages, "not flagged"
    assert all(m.split(" (no fix: ")[-1].startswith(reason) for m in messages), messages
    assert migrate(text) == text


def test_a_subclass_is_reported_at_its_base() -> None:
    text = "import torch\n\n\nclass Replicas(torch.nn.DataParallel):\n    pass\n"
    assert lint(text) == [(4, "ACL401")]
    (message,) = _acl401(text)
    assert message.endswith(
        "(no fix: a subclass of DataParallel must be ported to DistributedDataParallel by hand)"
    )


def test_lookalikes_and_unused_imports_are_not_flagged() -> None:
    text = textwrap.dedent(
        """\
        import torch
        from torch.nn import DataParallel
        from mylib import parallel

        model = parallel.DataParallel(torch.nn.Linear(2, 2))
        wrapped = isinstance(model, DataParallel)
        """
    )
    assert lint(text) == []


# -- what the migration writes ---------------------------------------------------------


def _equivalence(text: str) -> Equivalence | None:
    settings = settings_for(("ACL401",), unsafe=True)
    analysis = analyze("train.py", Source(text, "utf-8"), settings, [DataParallel])
    (finding,) = analysis.findings
    assert finding.fix is not None and finding.fix.safety is FixSafety.UNSAFE
    return finding.equivalence


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param("", "", Equivalence.CLOSE, id="no-randomness"),
        pytest.param(
            "batch_size=16,", "batch_size=16, shuffle=True,", Equivalence.STATISTICAL, id="shuffle"
        ),
        pytest.param(
            "batch_size=16,", "batch_size=16, shuffle=False,", Equivalence.CLOSE, id="shuffle-off"
        ),
        pytest.param(
            "nn.Linear(4, 1).cuda()",
            "nn.Sequential(nn.Dropout(0.1), nn.Linear(4, 1)).cuda()",
            Equivalence.STATISTICAL,
            id="dropout",
        ),
        pytest.param(
            "nn.Linear(4, 1).cuda()",
            "nn.Sequential(nn.BatchNorm1d(4), nn.Linear(4, 1)).cuda()",
            Equivalence.STATISTICAL,
            id="batchnorm",
        ),
    ],
)
def test_equivalence_follows_what_the_script_randomizes(
    old: str, new: str, expected: Equivalence
) -> None:
    assert _equivalence(SCRIPT.replace(old, new)) is expected


def test_the_fixture_is_judged_close() -> None:
    assert _equivalence(FIXTURE.read_text(encoding="utf-8")) is Equivalence.CLOSE


def test_existing_imports_are_reused_and_from_imports_follow_the_file() -> None:
    text = textwrap.dedent(
        """\
        import os

        import torch
        import torch.distributed as tdist
        from torch.nn import DataParallel, Linear
        from torch.utils.data import DataLoader
        from torch.utils.data.distributed import DistributedSampler as DS

        dataset = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        loader = DataLoader(dataset, batch_size=16, num_workers=2, pin_memory=True)
        model = DataParallel(Linear(4, 1).cuda())
        for epoch in range(2):
            for x, y in loader:
                model(x.cuda()).sum().backward()
        """
    )
    migrated = migrate(text)
    head = migrated.split("\n\n# set by torchrun")[0]
    assert head == textwrap.dedent(
        """\
        import os

        import torch
        import torch.distributed as tdist
        from torch.nn import Linear
        from torch.nn.parallel import DistributedDataParallel
        from torch.utils.data import DataLoader
        from torch.utils.data.distributed import DistributedSampler as DS"""
    )
    assert "tdist.init_process_group(" in migrated
    assert "sampler = DS(dataset, shuffle=False)" in migrated
    assert "model = DistributedDataParallel(" in migrated
    assert "tdist.destroy_process_group()" in migrated


def test_a_taken_dist_name_spells_torch_distributed() -> None:
    text = SCRIPT.replace(
        "import torch.nn as nn\n", "import torch.nn as nn\nfrom scipy.stats import norm as dist\n"
    )
    migrated = migrate(text)
    assert "torch.distributed.init_process_group(" in migrated
    assert "import torch.distributed as dist" not in migrated


def test_a_helper_that_reads_the_loader_as_a_global_is_followed() -> None:
    text = textwrap.dedent(
        """\
        import torch
        from torch.utils.data import DataLoader

        dataset = torch.utils.data.TensorDataset(torch.randn(64, 4))
        loader = DataLoader(dataset, batch_size=16, num_workers=2)
        model = torch.nn.DataParallel(torch.nn.Linear(4, 1))


        def train_one_epoch():
            for (x,) in loader:
                model(x).sum().backward()
            print("epoch done")


        for epoch in range(2):
            train_one_epoch()
        """
    )
    migrated = migrate(text)
    assert "    sampler.set_epoch(epoch)\n    train_one_epoch()\n" in migrated
    assert '    if dist.get_rank() == 0:\n        print("epoch done")\n' in migrated
    assert "batch_size=16 // world_size" in migrated


def test_a_print_that_runs_the_model_stays_on_every_process() -> None:
    text = SCRIPT + "    print(model(torch.ones(1, 4).cuda()).item())\n    print(epoch)\n"
    migrated = migrate(text)
    runs_model = "    print(model(torch.ones(1, 4).cuda()).item())\n"
    assert runs_model + "    if rank == 0:\n        print(epoch)\n" in migrated


# -- the plan composer ---------------------------------------------------------------


def test_nested_edits_compose_into_outermost_replacements() -> None:
    module = cst.parse_module("for i in range(3):\n    print(i)\n    total = i\nprint('done')\n")
    loop = module.body[0]
    assert isinstance(loop, cst.For) and isinstance(loop.body, cst.IndentedBlock)
    first, _ = loop.body.body
    last = module.body[1]
    assert isinstance(first, cst.SimpleStatementLine) and isinstance(last, cst.SimpleStatementLine)
    inner, outer = Plan(), Plan()
    inner.insert_before(first, [cst.parse_statement("start(i)\n")])
    inner.guards.append(GuardRun("rank == 0", (first,)))
    outer.rewrite(loop, lambda node: node.with_changes(target=cst.Name("j")))
    outer.insert_after(last, [cst.parse_statement("finish()\n")])
    outer.need("import os")
    fixed = to_fix(Tree(module), merge([inner, outer]), "m")
    # only the loop and the last line are replaced: the edits inside the loop are in it
    assert set(fixed.replacements) == {loop, last}
    assert fixed.imports == ("import os",)
    new = module.visit(_Apply(fixed.replacements))
    assert new.code == (
        "for j in range(3):\n"
        "    start(i)\n"
        "    if rank == 0:\n"
        "        print(i)\n"
        "    total = i\n"
        "print('done')\n"
        "finish()\n"
    )


class _Apply(cst.CSTTransformer):
    def __init__(self, replacements: object) -> None:
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> object:  # type: ignore[override]
        return self.replacements.get(original_node, updated_node)  # type: ignore[attr-defined]


def test_consecutive_rank_zero_lines_share_one_guard() -> None:
    text = SCRIPT + 'torch.save(model.state_dict(), "model.pt")\n\n# report\nprint("saved")\n'
    migrated = migrate(text)
    assert migrated.endswith(
        'if rank == 0:\n    torch.save(model.state_dict(), "model.pt")\n\n    # report\n'
        '    print("saved")\ndist.destroy_process_group()\n'
    )


def test_migration_keeps_a_return_last() -> None:
    body = textwrap.indent(SCRIPT.split("\n", 3)[3], "    ")
    text = SCRIPT.split("\n", 3)[0:3]
    script = "\n".join(text) + "\n\n\ndef main():\n" + body + "    return model\n"
    migrated = migrate(script)
    assert migrated.endswith("    dist.destroy_process_group()\n    return model\n")


def test_a_model_moved_after_the_wrap_is_moved_before_it() -> None:
    # the DataParallel tutorial's order: wrap, then `model.to(device)`; DDP needs the
    # model on its device when it is built
    text = SCRIPT.replace(WRAP, "model = nn.DataParallel(nn.Linear(4, 1))\nmodel.to('cuda')\n")
    migrated = migrate(text)
    assert (
        "model = nn.parallel.DistributedDataParallel(\n"
        '    nn.Linear(4, 1).to(local_rank if torch.cuda.is_available() else "cpu"),\n'
        "    device_ids=[local_rank] if torch.cuda.is_available() else None,\n"
        ")\nmodel.to('cuda')\n"
    ) in migrated
    # moved first: wrapped as it is
    assert "DistributedDataParallel(\n    nn.Linear(4, 1).cuda(),\n" in migrate(SCRIPT)


def test_a_device_count_that_only_picks_devices_is_dropped() -> None:
    text = SCRIPT.replace("dataset = ", "ngpu = 2\ndataset = ").replace(
        WRAP,
        "model = nn.Linear(4, 1).cuda()\n"
        "if ngpu > 1:\n"
        "    model = nn.DataParallel(model, device_ids=list(range(ngpu)))\n",
    )
    migrated = migrate(text)
    assert (
        "model = nn.Linear(4, 1).cuda()\n"
        "model = nn.parallel.DistributedDataParallel(\n"
        "    model, device_ids=[local_rank] if torch.cuda.is_available() else None\n"
        ")\noptimizer"
    ) in migrated
    assert "if ngpu > 1:" not in migrated


def test_a_while_loop_that_counts_no_epochs_gets_a_count_of_its_passes() -> None:
    text = _variant(EPOCHS, "step = 0\nwhile step < 8:\n").replace(
        "        loss.backward()\n", "        loss.backward()\n        step += 1\n"
    )
    migrated = migrate(text)
    assert (
        "epoch = 0\n"
        "while step < 8:\n"
        "    sampler.set_epoch(epoch)\n"
        "    epoch += 1\n"
        "    for x, y in loader:\n"
    ) in migrated
    # the counter is the script's only `epoch`: a taken name is a refusal (`while-epochs`)
    assert migrated.count("epoch = 0") == 1


def test_a_none_sampler_becomes_the_distributed_sampler() -> None:
    migrated = migrate(_variant(LOADER, NONE_SAMPLER))
    assert (
        "sampler = DistributedSampler(dataset, shuffle=True)\n"
        "loader = DataLoader(\n"
        "    dataset, batch_size=16 // world_size, shuffle=(sampler is None), sampler=sampler\n"
        ")\n"
    ) in migrated
    assert "    sampler.set_epoch(epoch)\n" in migrated


def test_a_loader_built_in_each_branch_sets_its_epoch_through_the_loader() -> None:
    text = _variant(
        LOADER,
        "if len(dataset) > 32:\n"
        "    loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=16)\n"
        "else:\n"
        "    loader = DataLoader(dataset, batch_size=8, shuffle=True)\n",
    )
    migrated = migrate(text)
    assert (
        "if len(dataset) > 32:\n"
        "    loader_dataset = TensorDataset(torch.randn(64, 4))\n"
        "    sampler = DistributedSampler(loader_dataset, shuffle=False)\n"
        "    loader = DataLoader(loader_dataset, batch_size=16 // world_size, sampler=sampler)\n"
        "else:\n"
        "    sampler = DistributedSampler(dataset, shuffle=True)\n"
        "    loader = DataLoader(dataset, batch_size=8 // world_size, sampler=sampler)\n"
    ) in migrated
    assert "    loader.sampler.set_epoch(epoch)\n" in migrated


def test_a_trainer_destroys_its_group_before_the_epoch_method_returns() -> None:
    text = _trainer(
        '        self.save("model.pt")\n', '        self.save("model.pt")\n        return acc\n'
    )
    migrated = migrate(text)
    assert "        dist.destroy_process_group()\n        return acc\n" in migrated


def test_the_wrap_leaves_its_if_and_the_rest_stays() -> None:
    text = SCRIPT.replace(
        WRAP,
        "model = nn.Linear(4, 1).cuda()\n"
        "# several devices\n"
        "if torch.cuda.device_count() > 1:\n"
        "    model = nn.DataParallel(model)\n"
        "    torch.backends.cudnn.benchmark = True\n",
    )
    assert (
        "model = nn.Linear(4, 1).cuda()\n"
        "# several devices\n"
        "model = nn.parallel.DistributedDataParallel(\n"
        "    model, device_ids=[local_rank] if torch.cuda.is_available() else None\n"
        ")\n"
        "if torch.cuda.device_count() > 1:\n"
        "    torch.backends.cudnn.benchmark = True\n"
        "optimizer"
    ) in migrate(text)


def test_a_chain_after_the_wrap_runs_on_the_model() -> None:
    text = SCRIPT.replace(WRAP, 'model = nn.DataParallel(nn.Linear(4, 1)).train().to("cuda")\n')
    assert (
        "model = nn.parallel.DistributedDataParallel(\n"
        '    nn.Linear(4, 1).train().to("cuda"),\n'
        "    device_ids=[local_rank] if torch.cuda.is_available() else None,\n"
        ")\n"
    ) in migrate(text)


def test_a_dataset_built_in_the_call_is_bound_first_keeping_its_layout() -> None:
    text = SCRIPT.replace("dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))\n", "")
    text = text.replace(
        LOADER,
        "# the training data\n"
        "train_loader = DataLoader(\n"
        "    TensorDataset(\n"
        "        torch.randn(64, 4),  # inputs\n"
        "        torch.randn(64, 1),\n"
        "    ),\n"
        "    batch_size=16, shuffle=True)\n",
    ).replace("in loader:", "in train_loader:")
    assert (
        "# the training data\n"
        "train_dataset = TensorDataset(\n"
        "    torch.randn(64, 4),  # inputs\n"
        "    torch.randn(64, 1),\n"
        ")\n"
        "train_sampler = DistributedSampler(train_dataset, shuffle=True)\n"
        "train_loader = DataLoader(\n"
        "    train_dataset,\n"
        "    batch_size=16 // world_size, sampler=train_sampler)\n"
    ) in migrate(text)


def test_directories_every_process_makes_tolerate_each_other() -> None:
    text = SCRIPT + (
        "if not os.path.isdir('out'):\n"
        "    os.mkdir('out')\n"
        "os.makedirs('out/a', 0o755)\n"
        "os.makedirs('out/b', exist_ok=False)\n"
        "torch.save(model.state_dict(), 'out/model.pt')\n"
    )
    migrated = migrate("import os\n" + text)
    assert (
        "if not os.path.isdir('out'):\n"
        "    os.makedirs('out', exist_ok=True)\n"
        "os.makedirs('out/a', 0o755, exist_ok=True)\n"
        "os.makedirs('out/b', exist_ok=False)\n"
        "if rank == 0:\n"
        "    torch.save(model.state_dict(), 'out/model.pt')\n"
    ) in migrated


def test_a_project_helper_that_wraps_in_ddp_is_the_distributed_path() -> None:
    text = (CASES / "ACL401_ddp_helper.py").read_text(encoding="utf-8")
    # as in the real scripts: the helper comes from the project's utils
    start = text.index("# the project's helper")
    end = text.index("def train(")
    imported = text[:start] + "from utils.torch_utils import smart_DDP\n\n\n" + text[end:]
    migrated = migrate(imported)
    assert "DataParallel(model)" not in migrated
    assert "model = smart_DDP(model)" in migrated
    # a helper that is not rebound to the model is no DDP wrap
    unbound = imported.replace("model = smart_DDP(model)", "smart_DDP(model)")
    (message,) = _acl401(unbound)
    assert "no fix: the script sets up torch.distributed but never wraps in DDP" in message


# -- the ImageNet template ----------------------------------------------------------

IMAGENET = (CASES / "ACL401_imagenet.py").read_text(encoding="utf-8")
IMAGENET_FALLBACK = """\
        if args.arch.startswith("vgg"):
            model.features = torch.nn.DataParallel(model.features)  # ACL401
            model.cuda()
        else:
            model = torch.nn.DataParallel(model).cuda()  # ACL401
"""


def _imagenet(old: str, new: str) -> str:
    assert old in IMAGENET
    return IMAGENET.replace(old, new)


def test_the_imagenet_template_takes_torchrun_from_its_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import runpy

    import torch

    script = CASES / "ACL401_imagenet.fixed.py"

    def parsed() -> object:
        return runpy.run_path(str(script), run_name="imagenet")["parser"].parse_args([])

    for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(key, raising=False)
    alone = parsed()
    assert (alone.gpu, alone.dist_url) == (None, "tcp://127.0.0.1:23456")  # type: ignore[attr-defined]
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    on_cpu = parsed()
    # no GPU to pin: `--gpu` stays unset, as the script's CPU path wants it
    assert (on_cpu.gpu, on_cpu.dist_url) == (None, "env://")  # type: ignore[attr-defined]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    on_gpus = parsed()
    assert (on_gpus.gpu, on_gpus.dist_url) == (1, "env://")  # type: ignore[attr-defined]


def test_the_imagenet_template_keeps_a_warning_that_is_not_about_the_fallback() -> None:
    warned = 'warnings.warn("You have chosen a specific GPU: data parallelism is disabled.")'
    kept = 'warnings.warn("You have chosen GPU {}.".format(args.gpu))'
    migrated = migrate(_imagenet(warned, kept))
    assert kept in migrated
    assert "torch.nn.DataParallel(" not in migrated
    assert warned not in migrate(IMAGENET)


IMAGENET_NO_FIX = [
    pytest.param(
        _imagenet('"--world-size", default=-1', '"--world-size", default=1'),
        "`--world-size` does not default to -1, which torchrun's value replaces",
        id="world-size-default",
    ),
    pytest.param(
        _imagenet(
            "args.distributed = args.world_size > 1 or args.multiprocessing_distributed",
            "args.distributed = args.world_size > 1",
        ),
        "`args.distributed` is not `args.world_size > 1 or args.multiprocessing_distributed`",
        id="distributed-flag",
    ),
    pytest.param(
        _imagenet('args.rank = int(os.environ["RANK"])', "args.rank = 0"),
        "`args.rank` is not read from `RANK` under `--dist-url env://`",
        id="rank-not-from-environment",
    ),
    pytest.param(
        _imagenet("model, device_ids=[args.gpu])", "model)"),
        "the `args.distributed` branch does not wrap in DistributedDataParallel with "
        "`device_ids=[args.gpu]`",
        id="ddp-without-device",
    ),
    pytest.param(
        _imagenet(
            "torch.utils.data.distributed.DistributedSampler(train_dataset)",
            "torch.utils.data.RandomSampler(train_dataset)",
        ),
        "no DistributedSampler is built when `args.distributed`",
        id="no-distributed-sampler",
    ),
    pytest.param(
        _imagenet(IMAGENET_FALLBACK, "        model = torch.nn.DataParallel(model)  # ACL401\n"),
        "the DataParallel fallback does not move the model to the GPU on every path",
        id="fallback-does-not-move",
    ),
    pytest.param(
        _imagenet(
            IMAGENET_FALLBACK,
            "        model = torch.nn.DataParallel(model).cuda()  # ACL401\n        print(model)\n",
        ),
        "the DataParallel fallback also runs `print(model)`",
        id="fallback-does-more",
    ),
]


@pytest.mark.parametrize(("text", "reason"), IMAGENET_NO_FIX)
def test_imagenet_templates_beyond_the_migration_say_why(text: str, reason: str) -> None:
    test_shapes_beyond_the_codemod_say_why(text, reason)
