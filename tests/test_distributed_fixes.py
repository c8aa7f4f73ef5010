"""The distributed fixes (ACL406, ACL409, ACL410, ACL411) run for real: original and
fixed scripts under `torchrun --standalone --nproc_per_node=2` (gloo on CPU), on
fixtures shaped like the public scripts the rules were measured on.

- ACL406 (fixtures/distributed_launch, transformers' legacy examples): the fixed
  script forms one process group under torchrun and under the old launcher (its
  `--local-rank`, the fallback), runs alone, and trains what the original trains when
  it gets its `--local_rank` (torchrun's `${local_rank}` macro).
- ACL409 and ACL411 (fixtures/ddp_accumulation, one fixed run for both): the fixed
  script all-reduces once per optimizer step instead of once per micro-batch, trains
  the same model, and its checkpoint holds the same tensors under keys without
  `module.` and loads into the bare model with `strict=True`.

Seven runs in all, each a few CPU seconds (mostly importing torch).
- ACL410 (fixtures/apex_ddp, apex's examples): the fixed script trains without apex,
  as the original does with apex's DDP (stood in for by torch's on CPU).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import ROOT, fix, settings_for

FIXTURES = ROOT / "fixtures"
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
LAUNCH = [sys.executable, "-m", "torch.distributed.launch", "--nproc_per_node=2"]

# Counts the all-reduces DDP launches, per process: a communication hook that counts
# and then does what DDP does without one.
_HOOK = """\
import os

if os.environ.get("ACCEL_LINT_ALLREDUCE_LOG"):
    import torch
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel

    _init = DistributedDataParallel.__init__

    def _counting_init(self, *args, **kwargs):
        _init(self, *args, **kwargs)
        counts = {"allreduce": 0}

        def hook(state, bucket):
            counts["allreduce"] += 1
            with open(os.environ["ACCEL_LINT_ALLREDUCE_LOG"], "a") as log:
                log.write(f"{torch.distributed.get_rank()}\\n")
            return default_hooks.allreduce_hook(None, bucket)

        self.register_comm_hook(None, hook)

    DistributedDataParallel.__init__ = _counting_init
"""


@dataclass
class Run:
    result: subprocess.CompletedProcess[str]
    workdir: Path

    @property
    def output(self) -> str:
        return self.result.stdout + self.result.stderr

    def succeeded(self) -> None:
        assert self.result.returncode == 0, self.output[-4000:]

    def allreduces(self, rank: int = 0) -> int:
        log = self.workdir / "allreduce.log"
        lines = log.read_text().split() if log.exists() else []
        return sum(1 for line in lines if line == str(rank))


def _unsafe(code: str, text: str) -> str:
    return fix(text, settings_for((code,), unsafe=True))


def _run(
    tmp: Path,
    name: str,
    fixture: str,
    script: str,
    launcher: list[str],
    args: list[str],
    *,
    keep: tuple[str, ...] = (),
) -> Run:
    work = tmp / name
    work.mkdir()
    for extra in keep:  # what the script needs beside it (a stand-in package)
        shutil.copytree(FIXTURES / fixture / extra, work / extra)
    (work / "train.py").write_text(script, encoding="utf-8")
    hook = tmp / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(_HOOK, encoding="utf-8")
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]),
        "ACCEL_LINT_ALLREDUCE_LOG": str(work / "allreduce.log"),
    }
    cmd = [*launcher, "train.py", *args]
    result = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=300)
    return Run(result, work)


def _load(path: Path) -> dict[str, object]:
    import torch

    loaded = torch.load(path, map_location="cpu")
    assert isinstance(loaded, dict)
    return loaded


def _same_tensors(a: dict[str, object], b: dict[str, object]) -> None:
    import torch

    assert set(a) == set(b)
    for key, value in a.items():
        assert isinstance(value, torch.Tensor)
        torch.testing.assert_close(b[key], value, rtol=0, atol=0, msg=key)


# -- ACL406: --local_rank to LOCAL_RANK ------------------------------------------------


@pytest.fixture(scope="module")
def launch_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("acl406")
    original = (FIXTURES / "distributed_launch" / "train.py").read_text(encoding="utf-8")
    fixed = _unsafe("ACL406", original)
    assert fixed != original
    args = ["--epochs", "1", "--output", "model.pt"]
    as_designed = [*args, "--local_rank=${local_rank}"]  # what the old launcher passed
    cases = {
        "original, torchrun with its --local_rank": (original, TORCHRUN, as_designed),
        "fixed, torchrun": (fixed, TORCHRUN, args),
        # torch 2.x's old launcher passes `--local-rank`: the fallback option
        "fixed, torch.distributed.launch": (fixed, LAUNCH, args),
        "fixed, python": (fixed, [sys.executable], args),
    }
    return {
        name: _run(tmp, f"run{i}", "distributed_launch", script, launcher, argv)
        for i, (name, (script, launcher, argv)) in enumerate(cases.items())
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["fixed, torchrun", "fixed, torch.distributed.launch", "fixed, python"]
)
def test_the_fixed_script_runs_under_every_launcher(launch_runs: dict[str, Run], name: str) -> None:
    run = launch_runs[name]
    run.succeeded()
    processes = 1 if name.endswith("python") else 2
    assert run.result.stdout.count(f"processes: {processes}") == 1
    assert run.result.stdout.count("saved model.pt") == 1


@pytest.mark.slow
def test_under_torchrun_the_fix_trains_what_the_original_trains_with_its_local_rank(
    launch_runs: dict[str, Run],
) -> None:
    reference = launch_runs["original, torchrun with its --local_rank"]
    reference.succeeded()
    assert reference.result.stdout.count("processes: 2") == 1
    expected = _load(reference.workdir / "model.pt")
    for name in ("fixed, torchrun", "fixed, torch.distributed.launch"):
        _same_tensors(expected, _load(launch_runs[name].workdir / "model.pt"))


# -- ACL409 and ACL411: accumulation under DDP, the wrapped model's checkpoint ---------


@pytest.fixture(scope="module")
def accumulation_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("acl409")
    original = (FIXTURES / "ddp_accumulation" / "train.py").read_text(encoding="utf-8")
    args = ["--epochs", "1", "--accum-steps", "4", "--checkpoint", "checkpoint.pt"]
    # one fixed run judges both fixes: no_sync on the micro-batches, the bare checkpoint
    fixed = fix(original, settings_for(("ACL409", "ACL411"), unsafe=True))
    assert "no_sync" in fixed and "model.module.state_dict()" in fixed
    return {
        name: _run(tmp, name, "ddp_accumulation", script, TORCHRUN, args)
        for name, script in {"original": original, "fixed": fixed}.items()
    }


@pytest.mark.slow
def test_no_sync_all_reduces_once_per_optimizer_step(accumulation_runs: dict[str, Run]) -> None:
    original = accumulation_runs["original"]
    fixed = accumulation_runs["fixed"]
    original.succeeded()
    fixed.succeeded()
    # 1024 samples, 2 ranks, micro-batches of 8: 64 backward passes per rank, and
    # one optimizer step (and one all-reduce of the one bucket) every 4 of them
    assert original.allreduces(0) == 64
    assert fixed.allreduces(0) == 16
    assert fixed.allreduces(1) == 16


@pytest.mark.slow
def test_the_fix_trains_the_same_model_and_saves_it_bare(
    accumulation_runs: dict[str, Run],
) -> None:
    import torch

    accumulation_runs["fixed"].succeeded()
    before = _load(accumulation_runs["original"].workdir / "checkpoint.pt")["model"]
    after = _load(accumulation_runs["fixed"].workdir / "checkpoint.pt")["model"]
    assert isinstance(before, dict) and isinstance(after, dict)
    assert all(key.startswith("module.") for key in before)
    assert not any(key.startswith("module.") for key in after)
    assert {key.removeprefix("module.") for key in before} == set(after)
    # one all-reduce of the sum instead of four of its parts: only the order of the
    # additions differs
    for key, value in before.items():
        bare_key = key.removeprefix("module.")
        torch.testing.assert_close(after[bare_key], value, rtol=1e-5, atol=1e-6, msg=key)
    namespace: dict[str, object] = {"__name__": "fixture"}
    source = (FIXTURES / "ddp_accumulation" / "train.py").read_text(encoding="utf-8")
    exec(compile(source, "train.py", "exec"), namespace)  # defines MLP, runs nothing
    bare = namespace["MLP"]()
    assert isinstance(bare, torch.nn.Module)
    bare.load_state_dict(after, strict=True)


# -- ACL410: apex's DDP to torch's ----------------------------------------------------


@pytest.fixture(scope="module")
def apex_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("acl410")
    original = (FIXTURES / "apex_ddp" / "train.py").read_text(encoding="utf-8")
    fixed = _unsafe("ACL410", original)
    assert "apex" not in fixed.replace("apex's", "").split('"""', 2)[2]
    args = ["--epochs", "1"]
    return {
        # the original needs apex: the fixture's stand-in for it
        "original": _run(tmp, "original", "apex_ddp", original, TORCHRUN, args, keep=("apex",)),
        # the fixed script runs without any apex at all
        "fixed": _run(tmp, "fixed", "apex_ddp", fixed, TORCHRUN, args),
    }


@pytest.mark.slow
def test_torch_ddp_trains_what_apex_ddp_trained(apex_runs: dict[str, Run]) -> None:
    apex_runs["original"].succeeded()
    apex_runs["fixed"].succeeded()
    assert apex_runs["fixed"].result.stdout.count("saved model.pt") == 1
    _same_tensors(
        _load(apex_runs["original"].workdir / "model.pt"),
        _load(apex_runs["fixed"].workdir / "model.pt"),
    )
