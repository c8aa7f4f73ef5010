"""The instrumenting runner inside real training processes: what it records,
when it stops, and which processes it reaches. Each test starts one run of a
small script through `accel_lint.verify.launch` (no CLI, no comparison); most
run both ways a run can start: a fresh interpreter, and a process forked by the
warm interpreter (which must behave as `python script.py` would)."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from accel_lint.verify.launch import Launch, RunResult, RunSpec, Target, environment, run
from accel_lint.verify.warm import WarmInterpreter

pytestmark = pytest.mark.slow
pytest.importorskip("torch")


@pytest.fixture(scope="module")
def warm() -> Iterator[WarmInterpreter]:
    server = WarmInterpreter(sys.executable, environment(None, 1, "test-server"))
    hello = server.hello(120)
    assert hello is not None and hello["torch"] is not None, hello
    yield server
    server.close()


@pytest.fixture(params=["fresh", "warm"])
def server(request: pytest.FixtureRequest) -> WarmInterpreter | None:
    if request.param == "fresh":
        return None
    interpreter: WarmInterpreter = request.getfixturevalue("warm")
    return interpreter


def _run(
    tmp_path: Path,
    source: str,
    steps: int = 4,
    server: WarmInterpreter | None = None,
    args: tuple[str, ...] = (),
    **spec: Any,
) -> RunResult:
    work = tmp_path / "project"
    work.mkdir(exist_ok=True)
    text = textwrap.dedent(source)
    (work / "train.py").write_text(text, encoding="utf-8")
    target = Target(work, Path("train.py"), args, steps, 1, 120.0)
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    return run(target, RunSpec(spec.pop("name", "run"), text, **spec), scratch, server)


MLP = """
import torch
from torch import nn

def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(50):
        x = torch.randn(16, 8)
        {body}

main()
print("after main")
"""


def test_stop_after_n_steps_cannot_be_swallowed(
    tmp_path: Path, server: WarmInterpreter | None
) -> None:
    body = """try:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), torch.zeros(16, 2)).backward()
            optimizer.step()
        except:  # noqa: E722  (a bare except: the stop must get through it)
            print("swallowed")
        finally:
            print("finally ran")"""
    result = _run(tmp_path, MLP.replace("{body}", body), steps=4, server=server)
    assert result.ok, result.message
    record = result.first
    assert record["stop_reason"] == "steps"
    assert record["steps"] == 4 and len(record["losses"]) == 4
    # the process ended at the stop: no except, no finally after it, nothing after main()
    assert result.output.count("finally ran") == 3
    assert "swallowed" not in result.output and "after main" not in result.output
    # the model was built inside main(): its parameters are still named at the stop
    assert record["tensor_count"] == {"param": 4, "buffer": 0}


def test_unscaled_loss_recorded_under_grad_scaler(
    tmp_path: Path, server: WarmInterpreter | None
) -> None:
    body = """optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = torch.nn.functional.mse_loss(model(x).float(), torch.ones(16, 2))
        print("loss", repr(loss.item()))
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()"""
    source = MLP.replace("{body}", body).replace(
        "    for step in range(50):",
        '    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)\n    for step in range(50):',
    )
    result = _run(tmp_path, source, steps=3, server=server)
    assert result.ok, result.message
    printed = [
        float(line.split()[1]) for line in result.output.splitlines() if line.startswith("loss ")
    ]
    assert result.first["losses"] == printed  # not 1024x the loss


def test_two_optimizers_and_two_roots_of_one_class(
    tmp_path: Path, server: WarmInterpreter | None
) -> None:
    source = """
    import torch
    from torch import nn

    torch.manual_seed(0)
    generator = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
    discriminator = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt_d = torch.optim.Adam(discriminator.parameters(), lr=1e-3)
    opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3)
    for step in range(100):
        real, noise = torch.randn(8, 4), torch.randn(8, 4)
        opt_d.zero_grad()
        d_loss = discriminator(real).mean() - discriminator(generator(noise).detach()).mean()
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        g_loss = -discriminator(generator(noise)).mean()
        g_loss.backward()
        opt_g.step()
    """
    result = _run(tmp_path, source, steps=5, server=server, save_state=True)
    assert result.ok, result.message
    record = result.first
    # stopped before the discriminator's 6th step, once the generator made its 5th
    assert record["optimizer_steps"] == [5, 5]
    assert len(record["losses"]) == 11
    import torch

    assert result.state_file is not None
    state = torch.load(result.state_file, weights_only=False)
    assert sorted(state["tensors"]) == [
        f"Sequential#{i}.{layer}.{kind}"
        for i in (0, 1)
        for layer in (0, 2)
        for kind in ("bias", "weight")
    ]


def test_mp_spawn_children_are_reached(tmp_path: Path, server: WarmInterpreter | None) -> None:
    source = """
    import os
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    def worker(rank, world, port):
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
        torch.manual_seed(0)
        model = DDP(nn.Linear(4, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(30):
            optimizer.zero_grad()
            model(torch.randn(8, 4)).pow(2).mean().backward()
            optimizer.step()
        print("child finished all 30 steps")
        dist.destroy_process_group()

    if __name__ == "__main__":
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        mp.spawn(worker, args=(2, port), nprocs=2)
        print("parent done")
    """
    result = _run(tmp_path, source, steps=3, server=server)
    assert result.ok, f"{result.message}\n{result.output}"
    assert [(r["rank"], r["world_size"], r["steps"]) for r in result.records] == [
        (0, 2, 3),
        (1, 2, 3),
    ]
    assert "child finished" not in result.output and "parent done" in result.output
    # DDP keeps the ranks' parameters identical, names unwrapped from `module.`
    assert result.records[0]["hashes"] == result.records[1]["hashes"]


def test_torchrun_ranks_are_reached(tmp_path: Path) -> None:
    source = """
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(30):
        optimizer.zero_grad()
        model(torch.randn(8, 4)).pow(2).mean().backward()
        optimizer.step()
    """
    result = _run(tmp_path, source, steps=2, launch=Launch(torchrun=True, nproc=2))
    assert result.ok, f"{result.message}\n{result.output}"
    assert [(r["rank"], r["steps"]) for r in result.records] == [(0, 2), (1, 2)]
    assert len(result.losses) == 2  # the ranks' losses, averaged per pass


def test_init_alignment_when_the_parameter_set_changes(tmp_path: Path) -> None:
    model = """
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3, bias={bias}), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(4 * 6 * 6, 2)
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    print("draw", torch.rand(1).item())
    for step in range(10):
        optimizer.zero_grad()
        model(torch.randn(4, 3, 8, 8)).sum().backward()
        optimizer.step()
    """
    original = _run(
        tmp_path,
        model.replace("{bias}", "True"),
        steps=2,
        save_state=True,
        dump_init=True,
        name="a",
    )
    assert original.ok and original.init_dir is not None
    fixed = _run(
        tmp_path,
        model.replace("{bias}", "False"),
        steps=2,
        reference=original.state_file,
        align_init=original.init_dir,
        name="b",
    )
    assert fixed.ok, fixed.message
    event = fixed.first["init"][0]
    assert event["aligned"] and event["removed"] == ["Sequential.0.bias"] and event["added"] == []
    # the same weights and the same random stream after the optimizer was built
    draws = [
        line
        for run in (original, fixed)
        for line in run.output.splitlines()
        if line.startswith("draw")
    ]
    assert len(draws) == 2 and draws[0] == draws[1]
    assert fixed.first["diff"]["missing"] == [["Sequential.0.bias", "param"]]


def test_a_script_that_never_imports_torch_writes_nothing(
    tmp_path: Path, server: WarmInterpreter | None
) -> None:
    result = _run(tmp_path, "print('no torch here')\n", server=server)
    assert result.status == "no-steps" and result.records == []
    assert result.out_dir is not None and not list(result.out_dir.glob("*.json"))


def test_an_existing_sitecustomize_still_runs(tmp_path: Path) -> None:
    own = tmp_path / "own_site"
    own.mkdir()
    (own / "sitecustomize.py").write_text(
        "import builtins\nbuiltins.SITE_RAN = True\n", encoding="utf-8"
    )
    source = "import builtins\nprint('site ran:', getattr(builtins, 'SITE_RAN', False))\n"
    import os

    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(own)
    try:
        result = _run(tmp_path, source)
    finally:
        if previous is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = previous
    assert "site ran: True" in result.output


SELF = """
import os, sys
import torch
print("argv", sys.argv)
print("file", os.path.relpath(__file__), os.path.isabs(__file__))
print("path0", os.path.relpath(sys.path[0]), "cwd", os.path.basename(os.getcwd()))
print("name", __name__, "hashseed", os.environ.get("PYTHONHASHSEED"), hash("accel-lint"))
print("threads", torch.get_num_threads())
sys.exit(3)
"""


def test_a_forked_run_sees_what_python_script_py_would(
    tmp_path: Path, warm: WarmInterpreter
) -> None:
    fresh = _run(tmp_path, SELF, args=("--epochs", "1"), name="fresh")
    forked = _run(tmp_path, SELF, args=("--epochs", "1"), name="forked", server=warm)
    assert fresh.returncode == forked.returncode == 3
    assert forked.output == fresh.output
    assert "argv ['train.py', '--epochs', '1']" in forked.output
    assert "file train.py True" in forked.output and "path0 . cwd work" in forked.output
    assert "name __main__ hashseed 0" in forked.output


def test_every_forked_run_the_first_included_starts_with_dynamo_imported(
    tmp_path: Path,
) -> None:
    """Building an optimizer imports torch._dynamo (about as long as torch): the
    server imports it before its first fork, so no run pays for it, not even the
    reference run that every other run waits for."""
    server = WarmInterpreter(sys.executable, environment(None, 1, "test-server"))
    try:
        hello = server.hello(120)
        assert hello is not None and hello["torch"] is not None, hello
        script = "import sys\nprint('dynamo', 'torch._dynamo' in sys.modules)\n"
        first = _run(tmp_path, script, name="first", server=server)
        second = _run(tmp_path, script, name="second", server=server)
    finally:
        server.close()
    assert first.output.strip() == second.output.strip() == "dynamo True"


def test_an_error_in_a_forked_run_is_recorded(tmp_path: Path, warm: WarmInterpreter) -> None:
    body = """optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), torch.zeros(16, 2)).backward()
        optimizer.step()
        if step == 1:
            raise ValueError("broken after two steps")"""
    result = _run(tmp_path, MLP.replace("{body}", body), steps=10, server=warm)
    assert (result.status, result.message) == ("crashed", "ValueError: broken after two steps")
    assert result.returncode == 1 and result.first["steps"] == 2


def test_dataloader_workers_run_under_a_temporary_directory_too_long_for_sockets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: WarmInterpreter | None
) -> None:
    # pytest's tmp_path under xdist, or a user's TMPDIR, can be long enough that
    # multiprocessing's socket path passes 107 bytes; workers then hang (CI saw it).
    long_tmp = tmp_path / ("t" * 40) / ("u" * 40)
    long_tmp.mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(long_tmp))
    result = _run(
        tmp_path,
        """
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, Dataset

        class Noise(Dataset):
            def __len__(self):
                return 64

            def __getitem__(self, index):
                return torch.full((8,), float(index))

        def main():
            import os, tempfile
            print("tmpdir", len(os.fsencode(tempfile.gettempdir())), os.environ["TMPDIR"])
            model = nn.Linear(8, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
            for x in DataLoader(Noise(), batch_size=8, num_workers=2):
                optimizer.zero_grad()
                model(x).sum().backward()
                optimizer.step()

        if __name__ == "__main__":
            main()
        """,
        steps=4,
        server=server,
    )
    assert result.ok, (result.status, result.message, result.output)
    assert result.first["stop_reason"] == "steps" and result.first["steps"] == 4
    # fresh or forked by the warm interpreter, the run's temporary directory is short
    length = int(result.output.split("tmpdir ", 1)[1].split()[0])
    assert length + 32 <= 107 and str(long_tmp) not in result.output
