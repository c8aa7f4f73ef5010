"""`accel-lint verify` end to end, through the command line, on CPU: the
fixtures' verdicts and speed, and a clear outcome for each way a script can
defeat a verification (needs CUDA, hangs, crashes, never steps, reads argv,
resumes from a relative checkpoint)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT, cli

FIXTURES = ROOT / "fixtures"


def _verify(
    script: Path, *args: str, scratch: Path, output: str = "json", script_args: tuple[str, ...] = ()
) -> tuple[int, Any, str]:
    """Run the CLI; `scratch` becomes TMPDIR so the test can see what is left behind."""
    scratch.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "accel_lint",
        "verify",
        str(script),
        "--output-format",
        output,
        *args,
    ]
    if script_args:
        cmd += ["--", *script_args]
    env = {**os.environ, "TMPDIR": str(scratch), "NO_COLOR": "1", "COLUMNS": "200"}
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, cwd=ROOT)
    data = (
        json.loads(result.stdout) if output == "json" and result.stdout.strip() else result.stdout
    )
    return result.returncode, data, result.stderr


def _tree(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def _processes_under(directory: Path) -> list[str]:
    """Processes still running with their working directory in `directory`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if cwd.startswith(str(directory)):
            found.append(f"{proc.name}: {cwd}")
    return found


def _fix(report: dict[str, Any], code: str) -> dict[str, Any]:
    matches: list[dict[str, Any]] = [f for f in report["fixes"] if f["code"] == code]
    assert len(matches) == 1, report["fixes"]
    return matches[0]


def _assert_clean(scratch: Path) -> None:
    # torch's compile cache included (it left an empty $TMPDIR/torchinductor_<user>)
    left = [p.name for p in scratch.iterdir()]
    assert left == [], "scratch directories were left behind"
    assert _processes_under(scratch) == [], "processes of a run are still alive"


def _project(tmp_path: Path, source: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    script = project / "train.py"
    script.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return script


# -- without runs -----------------------------------------------------------------------


def test_the_parent_never_imports_torch() -> None:
    code = (
        "import sys, accel_lint.cli, accel_lint.cli.verify, accel_lint.verify.session, "
        "accel_lint.verify.table, accel_lint.verify.html, accel_lint.verify.json_report, "
        "accel_lint.verify.warm; print('torch' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "False"


class _Planned(KeyboardInterrupt):
    """Raised by the stand-in session: the fixes are known, nothing is run."""


@pytest.mark.parametrize("fixture", sorted(p.parent.name for p in FIXTURES.glob("*/train.py")))
def test_every_fixture_with_no_option_judges_every_fix_that_check_offers(
    fixture: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`verify FIXTURE` with no option: one row per fix `check` offers, safe or
    unsafe, none left out. The session is a stand-in that records the rows it is
    given (no run is started); the warm interpreter is one that is ready at once."""
    from accel_lint.verify import session, warm

    given: list[Any] = []

    class Session:
        def __init__(self, target: Any, text: str, fixed_with: Any, fixes: Any, *a: Any, **k: Any):
            given.extend(fixes)

        def run(self) -> Any:
            raise _Planned

    class Warm:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def hello(self, timeout: float) -> dict[str, str]:
            return {"torch": "stand-in", "python": "3", "error": ""}

        def close(self) -> None:
            pass

    monkeypatch.setattr(session, "Session", Session)
    monkeypatch.setattr(warm, "WarmInterpreter", Warm)
    script = FIXTURES / fixture / "train.py"
    spec = json.loads((FIXTURES / fixture / "run.json").read_text(encoding="utf-8"))
    flags = ["--torchrun"] if spec.get("torchrun") else []
    checked = cli("check", str(script), "--output-format", "json", cwd=tmp_path)
    offered, fixes = [], []
    for d in json.loads(checked.stdout):
        # findings that share one fix (an import and its call sites) are one row
        if d["fix"] is not None and (d["code"], d["fix"]) not in fixes:
            fixes.append((d["code"], d["fix"]))
            offered.append((d["code"], d["location"]["row"], d["fix"]["applicability"]))
    offered.sort()
    assert offered, f"{fixture} has no fix to verify"
    # a fix that appears only once another is applied (ACL103 after ACL102 pins the
    # loader's memory) is judged too, as a row without a place in the original
    copy = tmp_path / "copy"
    shutil.copytree(FIXTURES / fixture, copy, ignore=shutil.ignore_patterns("expected"))
    codes = ",".join(sorted({code for code, _, _ in offered}))
    cli("fix", "--apply", "--unsafe-fixes", "--select", codes, "train.py", cwd=copy)
    after = cli("check", "train.py", "--output-format", "json", cwd=copy)
    later = sorted({d["code"] for d in json.loads(after.stdout) if d["fix"] is not None})
    ran = cli("verify", str(script), *flags, "--", *spec["args"], cwd=tmp_path)
    assert ran.returncode == 130 and "interrupted" in ran.stderr, ran.stderr
    placed = sorted((f.code, f.row, f.applicability) for f in given if f.row is not None)
    assert placed == offered
    assert sorted({f.code for f in given if f.row is None}) == later


def test_findings_that_share_one_fix_are_one_row_and_none_is_called_unfixed() -> None:
    from accel_lint.cli.verify import fix_items
    from accel_lint.config import load_settings
    from accel_lint.engine import analyze, diagnostics, rules_for
    from accel_lint.fixer import fix_source
    from accel_lint.source import decode

    script = FIXTURES / "cuda_amp_script" / "train.py"
    data = script.read_bytes()
    source = decode(data)
    settings = load_settings(search_from=script.parent, unsafe_fixes=True)
    rules = rules_for(settings.codes_for(str(script)), data)
    found = diagnostics(analyze(str(script), source, settings, rules))
    # the import and both call sites are rewritten by one fix the two findings share
    assert [(d.code, d.row) for d in found] == [("ACL304", 48), ("ACL304", 55)]
    codes = settings.codes_for(str(script))
    applied = fix_source(str(script), source, settings, codes, unsafe=True).applied
    items, unfixed = fix_items(applied, found, str(script), unsafe=True)
    assert [(i.code, i.row) for i in items] == [("ACL304", 48)]
    assert unfixed == []


def test_nothing_to_fix_is_nothing_to_verify(tmp_path: Path) -> None:
    script = _project(tmp_path, "import torch\nprint(torch.zeros(1))\n")
    code, report, _ = _verify(script, scratch=tmp_path / "tmp")
    assert code == 0
    assert report["fixes"] == [] and report["timing"] is None and report["error"] is None
    code, text, _ = _verify(script, scratch=tmp_path / "tmp", output="table")
    assert code == 0 and "nothing to verify" in text


def test_no_unsafe_fixes_narrows_and_names_the_findings_left_without_a_fix(
    tmp_path: Path,
) -> None:
    script = FIXTURES / "io_bound_loader" / "train.py"
    code, report, _ = _verify(script, "--no-unsafe-fixes", scratch=tmp_path / "tmp")
    assert code == 0 and report["fixes"] == []
    assert report["unfixed"] == [
        {
            "code": "ACL101",
            "row": 44,
            "message": report["unfixed"][0]["message"],
            "why": "its fix is unsafe, and --no-unsafe-fixes leaves it out",
        }
    ]
    code, text, _ = _verify(script, "--no-unsafe-fixes", scratch=tmp_path / "tmp", output="table")
    assert "No fix applies to this script: nothing to verify." in text
    assert "train.py:44 ACL101: its fix is unsafe, and --no-unsafe-fixes leaves it out" in text


def test_a_finding_whose_rule_gives_no_fix_here_is_named_with_the_reason(tmp_path: Path) -> None:
    # a subclass of DataParallel: its migration is beyond the codemod
    source = """
        import torch
        from torch import nn


        class Replicated(nn.DataParallel):
            pass


        model = Replicated(nn.Linear(4, 1))
    """
    script = _project(tmp_path, source)
    code, report, _ = _verify(script, scratch=tmp_path / "tmp")
    assert code == 0 and report["fixes"] == []
    (unfixed,) = report["unfixed"]
    assert (unfixed["code"], unfixed["row"]) == ("ACL401", 5)
    assert unfixed["why"] == (
        "no fix: a subclass of DataParallel must be ported to DistributedDataParallel by hand"
    )


def test_a_script_that_does_not_parse_is_acl000_and_exit_2(tmp_path: Path) -> None:
    script = _project(tmp_path, "import torch\nx = (\n")
    code, text, err = _verify(script, scratch=tmp_path / "tmp", output="table")
    assert code == 2 and "nothing to verify" not in text
    assert "train.py:2:5: ACL000 " in err


def test_an_interpreter_without_torch_stops_at_once(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = bare / "bin" / "python"
    script = FIXTURES / "io_bound_loader" / "train.py"
    code, _, err = _verify(script, "--python", str(python), scratch=tmp_path / "tmp")
    assert code == 2
    assert f"torch is not installed for {python}: {python} -m pip install torch" in err
    assert 'pip install "accel-lint[verify]"' in err


def test_a_script_outside_the_working_directory_is_a_usage_error(tmp_path: Path) -> None:
    script = _project(tmp_path, "import torch\n")
    other = tmp_path / "elsewhere"
    other.mkdir()
    code, _, err = _verify(
        script, "--workdir", str(other), scratch=tmp_path / "tmp", output="table"
    )
    assert code == 2 and "is not inside the working directory" in err


# -- the fixtures -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timing
def test_io_bound_loader_acl101_is_exact_and_measurably_faster(tmp_path: Path) -> None:
    fixture = FIXTURES / "io_bound_loader"
    before = _tree(fixture)
    scratch = tmp_path / "tmp"
    html = tmp_path / "report.html"
    code, report, err = _verify(  # no option: the unsafe fix is judged too
        fixture / "train.py",
        "--steps",
        "30",
        "--repeat",
        "2",
        "--report",
        str(html),
        scratch=scratch,
        script_args=("--epochs", "1"),
    )
    assert code == 0, err
    fix = _fix(report, "ACL101")
    assert (fix["class"], fix["verdict"], fix["reason"]) == ("exact", "holds", None)
    assert (fix["filename"], fix["row"], fix["applicability"]) == (
        str(fixture / "train.py"),
        44,
        "unsafe",
    )
    assert fix["max_loss_diff"] == 0.0 and fix["max_param_diff"] == 0.0
    assert report["noise_floor"]["deterministic"] is True
    assert report["noise_floor"]["loss"] > 0  # bitwise equality was not a foregone conclusion
    assert len(report["noise_floor"]["series"]) == 30
    timing = report["timing"]
    assert timing["label"] == "faster", timing
    assert fix["speed"]["label"] == "faster" and fix["speed"]["variant"] == "ACL101"
    assert timing["speedup"] > 1.3 and timing["ratio_interval"][0] > 1.0 + timing["noise"]
    assert fix["speed"]["samples_per_s"] == pytest.approx(
        16 * fix["speed"]["steps_per_s"]["median"]
    )
    # the per-step series: every run, enough to plot without running again
    runs = {r["name"]: r for r in report["runs"]}
    assert len(runs["original"]["losses"]) == 30 and len(runs["original"]["step_times"]) == 30
    assert runs["timing 1/2: original"]["role"] == "timing"
    # run k of N with the steps done
    assert "run 1 of " in err and ": original: ok, 30 steps" in err
    # the runtime second opinion saw the loader load every batch in the training process
    (finding,) = report["runtime"]["findings"]
    assert (finding["code"], finding["row"], finding["status"]) == ("ACL101", 44, "seen")
    page = html.read_text(encoding="utf-8")
    assert "<svg" in page and "http://" not in page and "https://" not in page
    original, fixed = timing["original"], timing["fixed"]
    assert fixed["steps_per_s"]["min"] > original["steps_per_s"]["max"]
    assert (
        original["peak_memory_bytes"] > 0
        and fixed["peak_memory_bytes"] > original["peak_memory_bytes"]
    )
    # DataLoader workers were started and are gone; the fixture is untouched
    _assert_clean(scratch)
    assert _tree(fixture) == before


@pytest.mark.slow
def test_partial_grads_acl301_fails_and_names_the_cause(tmp_path: Path) -> None:
    code, report, err = _verify(
        FIXTURES / "partial_grads" / "train.py",
        "--unsafe-fixes",
        "--steps",
        "12",
        "--repeat",
        "0",
        scratch=tmp_path / "tmp",
        script_args=("--epochs", "1"),
    )
    assert code == 1, err
    # the two fixes fail together; run alone, ACL101 holds and ACL301 is the culprit
    assert "fixed (ACL301 only)" in err and "fixed (ACL101 only)" in err
    assert _fix(report, "ACL101")["verdict"] == "holds"
    acl301 = _fix(report, "ACL301")
    assert (acl301["class"], acl301["verdict"]) == ("exact", "fails")
    reason = acl301["reason"]
    assert "losses differ from backward pass 4 on" in reason
    assert "TwoHeads.aux_head.bias, TwoHeads.aux_head.weight" in reason
    assert "all-zero gradient" in reason and "the optimizer skips them" in reason
    assert acl301["max_loss_diff"] > 0


@pytest.mark.slow
def test_amp_manual_zero_acl301_acl302_are_exact_when_every_parameter_gets_a_gradient(
    tmp_path: Path,
) -> None:
    code, report, err = _verify(
        FIXTURES / "amp_manual_zero" / "train.py",
        "--select",
        "ACL301,ACL302",
        "--unsafe-fixes",
        "--steps",
        "8",
        "--repeat",
        "0",
        scratch=tmp_path / "tmp",
        script_args=("--epochs", "1", "--steps-per-epoch", "16"),
    )
    assert code == 0, err
    assert [(f["code"], f["class"], f["verdict"]) for f in report["fixes"]] == [
        ("ACL301", "exact", "holds"),
        ("ACL302", "exact", "holds"),
    ]


@pytest.mark.slow
def test_ddp_torchrun_intended_changes_hold(tmp_path: Path) -> None:
    code, report, err = _verify(
        FIXTURES / "ddp_torchrun" / "train.py",
        "--torchrun",
        "--select",
        "ACL403,ACL404",
        "--unsafe-fixes",
        "--steps",
        "20",
        "--repeat",
        "0",
        scratch=tmp_path / "tmp",
        script_args=("--epochs", "2", "--workers", "0"),
    )
    assert code == 0, err
    acl404 = _fix(report, "ACL404")
    assert (acl404["class"], acl404["verdict"]) == ("intended-change", "holds")
    assert acl404["notes"] == [
        "epoch 0 bitwise equal (16 backward passes); 1 later epoch(s) reshuffled",
        "the original repeated epoch 0's order",
    ]
    assert acl404["max_loss_diff"] > 0  # epoch 1 trains on a new order
    acl403 = _fix(report, "ACL403")
    assert acl403["verdict"] == "holds"
    assert acl403["notes"] == [
        "1 save(s) written once by rank 0 with the original's content (the original wrote each 2x)"
    ]


@pytest.mark.slow
def test_ddp_accumulation_no_sync_is_close_and_the_bare_checkpoint_loads(tmp_path: Path) -> None:
    """ACL409 under torchrun: close, with the all-reduces per optimizer step dropping
    from the accumulation count to one; ACL411: the checkpoint (model and optimizer
    state in one dict) loads into the bare model with strict=True."""
    code, report, err = _verify(
        FIXTURES / "ddp_accumulation" / "train.py",
        "--torchrun",
        "--select",
        "ACL409,ACL411",
        "--steps",
        "20",
        "--repeat",
        "0",
        scratch=tmp_path / "tmp",
        script_args=("--epochs", "2", "--accum-steps", "4", "--checkpoint", "checkpoint.pt"),
    )
    assert code == 0, err
    acl409 = _fix(report, "ACL409")
    assert (acl409["class"], acl409["verdict"]) == ("close", "holds")
    # 20 steps of 4 micro-batches each: 80 all-reduces before, one per step after
    assert acl409["notes"][-1] == (
        "DDP gradient all-reduces per optimizer step: 4 -> 1 (80 -> 20 in 20 steps)"
    )
    acl411 = _fix(report, "ACL411")
    assert (acl411["class"], acl411["verdict"]) == ("intended-change", "holds")
    assert acl411["notes"] == [
        "1 saved state dict(s) load into MLP with strict=True and hold the original's "
        "tensors; the original's carried 6 keys with a wrapper prefix"
    ]


@pytest.mark.slow
def test_cnn_bn_acl201_is_close_after_aligning_the_initial_weights(tmp_path: Path) -> None:
    code, report, err = _verify(
        FIXTURES / "cnn_bn" / "train.py",
        "--select",
        "ACL102,ACL201",
        "--unsafe-fixes",
        "--steps",
        "10",
        "--repeat",
        "1",
        scratch=tmp_path / "tmp",
        script_args=("--epochs", "1"),
    )
    assert code == 0, err
    # ACL201's fixes make the combined run merely close: the exact fixes also run
    # without them, to be held to bitwise equality
    assert "fixed (exact fixes: ACL102)" in err
    assert {(f["code"], f["class"], f["verdict"]) for f in report["fixes"]} == {
        ("ACL102", "exact", "holds"),
        ("ACL201", "close", "holds"),
    }
    assert sorted(f["code"] for f in report["fixes"]) == ["ACL102", "ACL102", "ACL201", "ACL201"]
    acl201 = next(f for f in report["fixes"] if f["code"] == "ACL201")
    assert acl201["notes"][0].startswith(
        "the fix changed the parameters (4 removed (SmallCNN.features.0.conv.bias, "
    )
    assert "both runs started from the same initial weights" in acl201["notes"][0]
    assert acl201["notes"][-1] == "BatchNorm running means absorb the removed biases: not compared"
    assert 0 < acl201["max_loss_diff"] < 1e-4
    timing = report["timing"]
    assert timing["not_applicable"] == {
        "ACL102": "pinned memory only speeds up copies from the host to an accelerator"
    }
    for fix in report["fixes"]:
        if fix["code"] == "ACL102":
            assert fix["speed"]["label"] == "not applicable on this hardware"
        else:  # timed alone, with one run per script: the noise is assumed, not measured
            assert fix["speed"]["variant"] == fix["code"]
            assert fix["speed"]["noise_measured"] is False
    assert "one timing run per script cannot measure the run-to-run noise" in timing["notes"][-1]
    # the runtime second opinion confirms the static findings it can see on CPU
    seen = {(f["code"], f["row"]): f["status"] for f in report["runtime"]["findings"]}
    assert seen[("ACL201", 18)] == seen[("ACL201", 39)] == "seen"
    assert seen[("ACL102", 107)] == "seen"


@pytest.mark.slow
def test_data_parallel_acl401_runs_under_torchrun_and_holds(tmp_path: Path) -> None:
    code, report, err = _verify(
        FIXTURES / "data_parallel" / "train.py",
        "--select",
        "ACL401",
        "--unsafe-fixes",
        "--steps",
        "12",
        "--repeat",
        "1",
        scratch=tmp_path / "tmp",
        script_args=("--epochs", "1"),
    )
    assert code == 0, err
    acl401 = _fix(report, "ACL401")
    assert (acl401["class"], acl401["verdict"]) == ("close", "holds")
    # the two ranks' half-batch losses, averaged, match the full-batch loss
    assert 0 < acl401["max_loss_diff"] < 1e-5
    assert report["timing"] is None
    assert acl401["speed"]["label"] == "not applicable on this hardware"
    assert acl401["speed"]["reason"].startswith("DistributedDataParallel beats DataParallel")
    assert (
        "no timing runs: every fix's benefit needs hardware this machine lacks" in (report["notes"])
    )


@pytest.mark.slow
def test_random_augmentation_in_workers_is_judged_statistically(tmp_path: Path) -> None:
    # __getitem__ draws from torch's global generator: in workers the draws differ
    source = """
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, Dataset


        class Jittered(Dataset):
            def __init__(self):
                g = torch.Generator().manual_seed(1)
                self.x = torch.randn(256, 8, generator=g)
                self.y = (self.x.sum(dim=1, keepdim=True) > 0).float()

            def __len__(self):
                return len(self.x)

            def __getitem__(self, index):
                return self.x[index] + 0.1 * torch.randn(8), self.y[index]


        def main():
            torch.manual_seed(0)
            dataset = Jittered()
            loader = DataLoader(dataset, batch_size=16, shuffle=True)
            model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(3):
                for x, y in loader:
                    optimizer.zero_grad()
                    nn.functional.binary_cross_entropy_with_logits(model(x), y).backward()
                    optimizer.step()


        if __name__ == "__main__":
            main()
    """
    script = _project(tmp_path, source)
    code, report, err = _verify(
        script, "--unsafe-fixes", "--steps", "30", "--repeat", "0", scratch=tmp_path / "tmp"
    )
    assert code == 0, err
    # the original and the fixed script each ran with seed offsets +1 and +2
    assert "original (seed +2)" in err and "fixed (seed +2)" in err
    fix = _fix(report, "ACL101")
    assert (fix["class"], fix["verdict"]) == ("statistical", "holds")
    assert fix["max_loss_diff"] > 0  # not step by step: the augmentation draws differ
    assert fix["notes"][0].startswith("trailing mean loss ")
    assert "over 3 seeds (z = " in fix["notes"][0]


# -- scripts that defeat a verification ------------------------------------------------------

TRAIN = """
    import os
    import sys

    import torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset


    class Pairs(Dataset):
        def __init__(self, x, y):
            self.x, self.y = x, y

        def __len__(self):
            return len(self.x)

        def __getitem__(self, index):
            return self.x[index], self.y[index]


    def main():
        torch.manual_seed(0)
        data = Pairs(torch.randn(64, 4), torch.randn(64, 1))
        loader = DataLoader(data, batch_size=8, shuffle=True)
        model = nn.Linear(4, 1){model_suffix}
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        {before_training}
        for epoch in range({epochs}):
            for x, y in loader:
                optimizer.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()


    if __name__ == "__main__":
        main()
"""


def _train(model_suffix: str = "", before_training: str = "pass", epochs: str = "3") -> str:
    return TRAIN.format(model_suffix=model_suffix, before_training=before_training, epochs=epochs)


FAST = ("--unsafe-fixes", "--steps", "3", "--repeat", "0")


@pytest.mark.slow
def test_a_script_that_needs_cuda_is_not_verifiable_here(tmp_path: Path) -> None:
    script = _project(tmp_path, _train(model_suffix=".cuda()"))
    code, report, _ = _verify(script, *FAST, scratch=tmp_path / "tmp")
    assert code == 2
    assert report["error"]["status"] == "needs-cuda" and report["error"]["run"] == "original"
    assert {f["code"] for f in report["fixes"]} == {"ACL101", "ACL102"}
    for fix in report["fixes"]:
        assert fix["verdict"] == "not-verifiable"
        assert fix["reason"].startswith("not verifiable here: the script needs CUDA")


@pytest.mark.slow
def test_a_hanging_script_times_out_and_is_killed(tmp_path: Path) -> None:
    script = _project(tmp_path, _train(before_training="import time; time.sleep(3600)"))
    scratch = tmp_path / "tmp"
    code, report, _ = _verify(script, *FAST, "--timeout", "20", scratch=scratch)
    assert code == 2
    assert report["error"]["status"] == "timeout" and report["error"]["run"] == "original"
    assert "did not finish within 20 s" in report["error"]["message"]
    assert _fix(report, "ACL101")["verdict"] == "not-verifiable"
    _assert_clean(scratch)


@pytest.mark.slow
def test_verify_leaves_no_compile_cache_directory_in_tmpdir(tmp_path: Path) -> None:
    """torch makes $TMPDIR/torchinductor_<user> when inductor's config is imported;
    every verification left it there, empty."""
    script = _project(tmp_path, "import torch._inductor.config\n" + textwrap.dedent(_train()))
    scratch = tmp_path / "tmp"
    code, report, err = _verify(script, *FAST, scratch=scratch)
    assert code in (0, 1), err
    assert {f["code"] for f in report["fixes"]} >= {"ACL101"}
    _assert_clean(scratch)


@pytest.mark.slow
def test_a_crash_of_the_original_is_shown_and_attributed(tmp_path: Path) -> None:
    script = _project(tmp_path, _train(before_training='raise ValueError("broken config")'))
    code, report, _ = _verify(script, *FAST, scratch=tmp_path / "tmp")
    assert code == 2
    error = report["error"]
    assert (error["run"], error["status"], error["message"]) == (
        "original",
        "crashed",
        "ValueError: broken config",
    )
    assert 'raise ValueError("broken config")' in error["output"]
    assert (
        _fix(report, "ACL101")["reason"]
        == "not verifiable: the original script failed (ValueError: broken config)"
    )
    code, text, _ = _verify(script, *FAST, scratch=tmp_path / "tmp", output="table")
    assert code == 2
    assert "The run `original` did not complete: ValueError: broken config" in text


@pytest.mark.slow
def test_a_crash_of_the_fixed_script_only_fails_the_fix(tmp_path: Path) -> None:
    # workers started with spawn must pickle the dataset: its lambda cannot be
    source = """
        import torch
        import torch.multiprocessing as mp
        from torch import nn
        from torch.utils.data import DataLoader, Dataset


        class Scaled(Dataset):
            def __init__(self, transform):
                self.data = torch.randn(64, 4)
                self.transform = transform

            def __len__(self):
                return len(self.data)

            def __getitem__(self, index):
                return self.transform(self.data[index])


        def main():
            torch.manual_seed(0)
            loader = DataLoader(Scaled(lambda x: x * 2), batch_size=8)
            model = nn.Linear(4, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x in loader:
                optimizer.zero_grad()
                model(x).pow(2).mean().backward()
                optimizer.step()


        if __name__ == "__main__":
            mp.set_start_method("spawn")
            main()
    """
    script = _project(tmp_path, source)
    code, report, _ = _verify(script, *FAST, scratch=tmp_path / "tmp")
    assert code == 2
    assert (report["error"]["run"], report["error"]["status"]) == ("fixed", "crashed")
    fix = _fix(report, "ACL101")
    assert fix["verdict"] == "fails"
    assert fix["reason"].startswith("the fixed script failed where the original ran: ")
    assert "pickle" in fix["reason"]


@pytest.mark.slow
def test_a_script_that_never_steps_an_optimizer(tmp_path: Path) -> None:
    source = """
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Rows(Dataset):
            def __init__(self, x):
                self.x = x

            def __len__(self):
                return len(self.x)

            def __getitem__(self, index):
                return self.x[index]


        if __name__ == "__main__":
            model = torch.nn.Linear(4, 1)
            with torch.no_grad():
                for x in DataLoader(Rows(torch.randn(32, 4)), batch_size=8):
                    print(model(x).sum().item())
    """
    script = _project(tmp_path, source)
    code, report, _ = _verify(script, *FAST, scratch=tmp_path / "tmp")
    assert code == 2
    assert report["error"]["status"] == "no-steps"
    assert _fix(report, "ACL101")["reason"].startswith(
        "not verifiable: the original never stepped an optimizer"
    )


@pytest.mark.slow
def test_a_script_that_reads_argv_and_resumes_from_a_relative_checkpoint(tmp_path: Path) -> None:
    # The epochs come from sys.argv (given after `--`). Sharing a working directory,
    # the second run would resume from the first run's checkpoint and train nothing;
    # each run gets a fresh copy instead.
    resume = """os.makedirs("checkpoints", exist_ok=True)
        start = 0
        if os.path.exists("checkpoints/last.pt"):
            state = torch.load("checkpoints/last.pt")
            model.load_state_dict(state["model"])
            start = state["epoch"] + 1
            print("resumed from epoch", state["epoch"])"""
    save = (
        " " * 12
        + 'torch.save({"model": model.state_dict(), "epoch": epoch}, "checkpoints/last.pt")\n'
    )
    step = "                optimizer.step()\n"
    source = _train(before_training=resume, epochs="start, int(sys.argv[1])")
    source = source.replace(step, step + save)
    script = _project(tmp_path, source)
    before = _tree(script.parent)
    code, report, err = _verify(
        script,
        "--unsafe-fixes",
        "--steps",
        "12",
        "--repeat",
        "0",
        scratch=tmp_path / "tmp",
        script_args=("3",),
    )
    assert code == 0, err
    assert _fix(report, "ACL101")["verdict"] == "holds"
    assert _tree(script.parent) == before and not (script.parent / "checkpoints").exists()


# -- issue 25: the fifth wave's fixes ------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timing
def test_in_memory_workers_acl106_is_exact_and_faster_without_workers(tmp_path: Path) -> None:
    code, report, err = _verify(
        FIXTURES / "in_memory_workers" / "train.py",
        "--unsafe-fixes",
        "--steps",
        "30",
        "--repeat",
        "2",
        scratch=tmp_path / "tmp",
        script_args=("--epochs", "1"),
    )
    assert code == 0, err
    fix = _fix(report, "ACL106")
    assert (fix["class"], fix["verdict"], fix["reason"]) == ("exact", "holds", None)
    assert fix["max_loss_diff"] == 0.0 and fix["max_param_diff"] == 0.0
    # two workers only slice tensors the training process holds: measured 3.7x (2.5x-6.4x)
    # on a 2-core CPU; what the test asserts is the direction, beyond the noise
    timing = report["timing"]
    assert fix["speed"]["label"] == "faster", timing
    assert timing["ratio_interval"][0] > 1.0 + timing["noise"]


@pytest.mark.slow
def test_compiled_checkpoint_acl210_saves_keys_without_the_prefix(tmp_path: Path) -> None:
    code, report, err = _verify(
        FIXTURES / "compiled_checkpoint" / "train.py",
        "--unsafe-fixes",
        "--steps",
        "12",
        "--repeat",
        "0",
        scratch=tmp_path / "tmp",
        script_args=("--epochs", "2", "--compile-backend", "eager"),
    )
    assert code == 0, err
    fix = _fix(report, "ACL210")
    assert (fix["class"], fix["verdict"]) == ("intended-change", "holds")
    assert fix["notes"] == [
        "1 saved state dict(s) load into MLP with strict=True and hold the original's "
        "tensors; the original's carried 4 keys with a wrapper prefix"
    ]


@pytest.mark.slow
def test_cast_after_create_acl212_is_exact(tmp_path: Path) -> None:
    code, report, err = _verify(
        FIXTURES / "cast_after_create" / "train.py",
        "--steps",
        "10",
        "--repeat",
        "0",
        scratch=tmp_path / "tmp",
        script_args=("--epochs", "1"),
    )
    assert code == 0, err
    assert [(f["code"], f["class"], f["verdict"]) for f in report["fixes"]] == [
        ("ACL212", "exact", "holds"),
        ("ACL212", "exact", "holds"),
    ]
    assert all(f["max_loss_diff"] == 0.0 for f in report["fixes"])


@pytest.mark.slow
def test_ddp_barrier_acl413_is_exact_under_torchrun(tmp_path: Path) -> None:
    code, report, err = _verify(
        FIXTURES / "ddp_barrier" / "train.py",
        "--torchrun",
        "--unsafe-fixes",
        "--steps",
        "12",
        "--repeat",
        "0",
        scratch=tmp_path / "tmp",
        script_args=("--epochs", "2"),
    )
    assert code == 0, err
    fix = _fix(report, "ACL413")
    assert (fix["class"], fix["verdict"], fix["reason"]) == ("exact", "holds", None)
    assert fix["notes"] == ["bitwise equal: 12 losses, 4 parameters, 0 buffers"]
    assert fix["max_loss_diff"] == 0.0


@pytest.mark.slow
def test_grad_accumulation_acl318_acl320_hold_on_the_window_sum_and_one_clip_per_step(
    tmp_path: Path,
) -> None:
    # both fixes in one run: with the clip moved too, nothing touches the gradients
    # between a window's backward passes, so each step sees their sum
    code, report, err = _verify(
        FIXTURES / "grad_accumulation" / "train.py",
        "--unsafe-fixes",
        "--steps",
        "12",
        "--repeat",
        "0",
        scratch=tmp_path / "tmp",
        script_args=("--epochs", "1"),
    )
    assert code == 0, err
    assert report["error"] is None
    zero, clip = _fix(report, "ACL318"), _fix(report, "ACL320")
    assert (zero["class"], zero["verdict"], zero["reason"]) == ("intended-change", "holds", None)
    assert zero["notes"] == [
        "12 step(s): each sees the sum of its window's backward passes (12 window(s) of more "
        "than one, none zeroed inside)",
        "the original zeroed the gradients inside 12 of 12 window(s)",
    ]
    assert (clip["class"], clip["verdict"], clip["reason"]) == ("intended-change", "holds", None)
    assert clip["notes"] == [
        "one clipping call before each of 12 step(s)",
        "the original clipped up to 4 times per step",
    ]


@pytest.mark.slow
def test_accumulation_scaler_acl319_keeps_the_scale_of_each_window(tmp_path: Path) -> None:
    # CPU autocast in float16 with GradScaler("cpu"): the original's update() on the
    # first micro-batch that does not step raises; the fix is judged on the run the
    # fix repairs, whose scale is read at every scale()
    code, report, err = _verify(
        FIXTURES / "accumulation_scaler" / "train.py",
        "--unsafe-fixes",
        "--steps",
        "12",
        "--repeat",
        "0",
        scratch=tmp_path / "tmp",
        script_args=("--epochs", "2"),
    )
    assert code == 0, err
    assert report["error"] is None
    fix = _fix(report, "ACL319")
    assert (fix["class"], fix["verdict"], fix["reason"]) == ("intended-change", "holds", None)
    assert fix["notes"] == [
        "the scale is constant inside each of 12 window(s)",
        "the original raised AssertionError: No inf checks were recorded prior to update.",
    ]
    assert [(r["name"], r["status"]) for r in report["runs"]] == [
        ("original", "crashed"),
        ("original with the ACL319 fix", "ok"),
    ]


@pytest.mark.slow
def test_amp_clip_accumulation_acl319_repairs_and_acl320_clips_once_after_unscaling(
    tmp_path: Path,
) -> None:
    # `unscale_` on every micro-batch raises on the second: ACL319's fix repairs the
    # original, and ACL320's (moving the clip after the moved `unscale_`) is judged on top
    code, report, err = _verify(
        FIXTURES / "amp_clip_accumulation" / "train.py",
        "--unsafe-fixes",
        "--steps",
        "12",
        "--repeat",
        "0",
        scratch=tmp_path / "tmp",
        script_args=("--epochs", "2"),
    )
    assert code == 0, err
    assert report["error"] is None
    scale, clip = _fix(report, "ACL319"), _fix(report, "ACL320")
    assert (scale["verdict"], scale["reason"]) == ("holds", None)
    assert scale["notes"] == [
        "the scale is constant inside each of 12 window(s)",
        "the original raised RuntimeError: unscale_() has already been called on this "
        "optimizer since the last update().",
    ]
    assert (clip["verdict"], clip["reason"]) == ("holds", None)
    assert clip["notes"] == [
        "one clipping call before each of 12 step(s)",
        "the original clipped up to 4 times per step",
    ]
    assert report["notes"] == [
        "the original raises; the other fixes are judged on the original with the ACL319 "
        "fix applied"
    ]


@pytest.mark.slow
def test_bce_autocast_acl321_is_not_verifiable_on_cpu_and_says_why(tmp_path: Path) -> None:
    # autocast of the script's device: without CUDA it is CPU autocast, which runs the
    # original's BCELoss (on bfloat16 probabilities) where CUDA autocast raises
    code, report, err = _verify(
        FIXTURES / "bce_autocast" / "train.py",
        "--unsafe-fixes",
        "--steps",
        "12",
        "--repeat",
        "0",
        scratch=tmp_path / "tmp",
        script_args=("--epochs", "1"),
    )
    # every run completed; a fix not verified here is no pass (exit 2)
    assert code == 2 and report["error"] is None, err
    fix = _fix(report, "ACL321")
    assert (fix["class"], fix["verdict"], fix["reason"]) == (
        "intended-change",
        "not-verifiable",
        "the original did not raise here: CUDA autocast cannot run on this machine, and CPU "
        "autocast ran binary cross-entropy on bfloat16 probabilities (it refuses nothing), so "
        "the original's losses are not float32's",
    )
    # what can be checked here is: the fixed loss is float32's on the same logits
    assert fix["notes"][0] == (
        "12 loss(es) on logits within 0.0001 of binary cross-entropy on the sigmoid in float64"
    )
    assert fix["notes"][1].startswith(
        "the original's losses (binary cross-entropy on bfloat16 probabilities) differ from "
        "the fixed ones by up to "
    )


# -- help when a script will not run: one sentence per failure kind, said once ----------


@pytest.mark.slow
def test_a_missing_module_names_python_once(tmp_path: Path) -> None:
    script = _project(tmp_path, _train(before_training="import accel_lint_absent_module"))
    code, text, _ = _verify(script, *FAST, scratch=tmp_path / "tmp", output="table")
    assert code == 2
    assert text.count("`--python PATH`") == 1
    assert (
        "hint: the script imports `accel_lint_absent_module`, which the interpreter running it "
        "does not have: run the scripts with your project's interpreter, `--python PATH`"
    ) in text
    # the reason every fix shares is said once, and nothing is called verified
    assert text.count("the original script failed") == 1
    assert "Every fix: not verifiable: the original script failed" in text
    assert "Could not verify 1 fix (1 unsafe)." in text and "verified" not in text
    _, report, _ = _verify(script, *FAST, scratch=tmp_path / "tmp")
    assert report["error"]["hint"].startswith("the script imports `accel_lint_absent_module`")


# the script's own parser, before training: it needs `--data`
ARGPARSE = (
    "import argparse; parser = argparse.ArgumentParser(); "
    'parser.add_argument("--data", required=True); parser.parse_args()'
)


@pytest.mark.slow
def test_an_argparse_error_names_the_arguments_after_the_double_dash(tmp_path: Path) -> None:
    script = _project(tmp_path, _train(before_training=ARGPARSE))
    code, text, _ = _verify(script, *FAST, scratch=tmp_path / "tmp", output="table")
    assert code == 2
    assert "error: the following arguments are required: --data" in text  # the script's own
    hint = (
        "hint: the script's argument parser stopped it (the following arguments are required: "
        "--data): pass the script's arguments after `--`, as in "
        "`accel-lint verify train.py -- ARGS`"
    )
    assert hint in text and text.count("-- ARGS") == 1


@pytest.mark.slow
def test_a_script_that_ends_before_steps_says_how_many_it_ran(tmp_path: Path) -> None:
    # 48 samples in batches of 8, one epoch: the script ends itself after 6 steps
    short = "loader = DataLoader(Pairs(torch.randn(48, 4), torch.randn(48, 1)), batch_size=8)"
    script = _project(tmp_path, _train(before_training=short, epochs="1"))
    args = ("--steps", "20", "--repeat", "1", "--select", "ACL101")
    _, text, _ = _verify(script, *args, scratch=tmp_path / "tmp", output="table")
    header = text.splitlines()[0]
    assert "6 steps (the script ended before --steps 20)" in header
    assert "20 steps" not in header
    note = (
        "note: timing skipped: the script ended by itself after 6 optimizer steps (before "
        "--steps 20), too few for a steady rate after 5 warm-up steps; let it train longer "
        "through its arguments after `--`, or lower --warmup"
    )
    flowing = " ".join(text.split())  # a note longer than the terminal wraps
    assert note in flowing and "raise --steps" not in flowing
    _, report, _ = _verify(script, *args, scratch=tmp_path / "tmp")
    assert report["steps"] == 20 and report["steps_run"] == 6


LOGGED = """
    def log_start():
        try:
            with open("logs/train.log", "a") as log:
                log.write("training starts\\n")
        except PermissionError as exc:
            print("no log file:", exc.filename)
"""


@pytest.mark.slow
def test_a_write_outside_the_folder_is_reported_though_the_script_caught_it(
    tmp_path: Path,
) -> None:
    """The runner refuses a write through a link out of the run's copy; a script that
    catches the PermissionError (a try/except around its log) ran on, and the report
    said nothing of it."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    source = textwrap.dedent(LOGGED) + textwrap.dedent(_train(before_training="log_start()"))
    script = _project(tmp_path, source)
    (script.parent / "logs").symlink_to(elsewhere)  # an output folder linked elsewhere
    html = tmp_path / "report.html"
    scratch = tmp_path / "tmp"
    code, report, err = _verify(script, *FAST, "--report", str(html), scratch=scratch)
    assert code in (0, 1), err
    assert report["error"] is None and {f["code"] for f in report["fixes"]} >= {"ACL101"}
    target = str(elsewhere.resolve() / "train.log")
    # every run tried it; said once, with the first run that did
    assert report["refused_writes"] == [
        {"run": "original", "path": "logs/train.log", "resolves_to": target}
    ]
    assert list(elsewhere.iterdir()) == []  # the user's folder got nothing
    sentence = "the script tried to write outside its folder: <code>logs/train.log</code>"
    assert sentence in html.read_text(encoding="utf-8")
    code, text, _ = _verify(script, *FAST, scratch=scratch, output="table")
    flowing = " ".join(text.split())  # a line longer than the terminal wraps
    assert (
        "warning: the script tried to write outside its folder: `logs/train.log` resolves to "
        f"`{target}`, outside the run's copy; the write was refused (run `original`"
    ) in flowing
    _assert_clean(scratch)
