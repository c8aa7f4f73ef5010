"""Unit tests of the shared mixed-precision facts: `facts.tree.Tree`,
`facts.precision.Precision` (autocasts and GradScalers with their uses, and the signs
that a file does not train in float32 alone) and `facts.optimizers.Optimizers`."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from accel_lint.edits import code_for
from accel_lint.facts import FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.facts.optimizers import Optimizers
from accel_lint.facts.precision import Precision
from accel_lint.facts.tree import Tree
from accel_lint.torch_api import FOREACH_OPTIMIZERS
from accel_lint.walk import walk


def _facts(source: str) -> FileFacts:
    module = cst.parse_module(textwrap.dedent(source))
    facts = FileFacts(module)
    walk(module, [FactsCollector(facts), ScopeCloser(facts)])
    facts.finish()
    return facts


def test_tree_parents_and_references() -> None:
    facts = _facts(
        """
        x = 1
        def f(x):
            return x + 1
        y = x
        """
    )
    tree = Tree.of(facts)
    assert Tree.of(facts) is tree  # built once per file
    module_x = facts.module_scope.bindings["x"][0]
    reads = tree.references(module_x)
    assert [code_for(tree.statement_of(n) or n) for n, _ in reads] == ["x = 1\n", "y = x\n"]
    assert {"f", "x", "y"} <= tree.spelled()


def test_autocast_forms_devices_and_default_dtypes() -> None:
    facts = _facts(
        """
        import torch
        from torch.cuda.amp import autocast
        BF16 = torch.bfloat16
        with torch.autocast("cuda"):
            pass
        with torch.autocast("cpu"):
            pass
        with autocast(False, torch.float16):
            pass
        with torch.amp.autocast(device_type="cuda", dtype=BF16):
            pass
        @torch.autocast("cuda", enabled=False)
        def forward(x):
            return x
        ctx = torch.cpu.amp.autocast
        with torch.autocast(device.type):
            pass
        """
    )
    found = [
        (a.form, a.device, a.dtype, a.dtype_given, a.enabled) for a in Precision.of(facts).autocasts
    ]
    assert found == [
        ("with", "cuda", "float16", False, True),
        ("with", "cpu", "bfloat16", False, True),
        ("with", "cuda", "float16", True, False),
        ("with", "cuda", "bfloat16", True, True),
        ("decorator", "cuda", "float16", False, False),
        ("with", None, None, False, True),
        ("reference", None, None, False, None),
    ]


def test_autocast_from_another_library_is_not_torchs() -> None:
    facts = _facts(
        """
        from apex.amp import autocast
        with autocast():
            pass
        """
    )
    assert Precision.of(facts).autocasts == []


def test_scaler_uses_followed_into_the_files_functions() -> None:
    facts = _facts(
        """
        import torch
        def train(model, opt, loss, scaler):
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        def main(model, opt, loss):
            scaler = torch.amp.GradScaler("cuda", enabled=False)
            train(model, opt, loss, scaler)
            print(scaler.get_scale())
        """
    )
    (scaler,) = Precision.of(facts).scalers
    assert scaler.device == "cuda" and scaler.disabled() and scaler.followed
    assert [u.method for u in scaler.uses] == [None, "get_scale"]
    assert sorted(u.method or "" for _, _, u in scaler.passed) == ["scale", "step", "update"]
    step = next(u for _, _, u in scaler.passed if u.method == "step")
    assert Precision.of(facts).scaler_of(step.reference) is scaler


def test_scaler_kept_in_an_attribute_and_one_that_may_be_none() -> None:
    facts = _facts(
        """
        import torch
        from torch.cuda.amp import GradScaler
        class Trainer:
            def __init__(self, amp):
                self.scaler = GradScaler()
                self.other = GradScaler() if amp else None
            def step(self, loss):
                self.scaler.scale(loss).backward()
                trainer.scaler.update()
        """
    )
    first, second = Precision.of(facts).scalers
    assert first.handle is not None and first.handle[0] == "attr"
    assert first.legacy_device == "cuda"
    assert [u.method for u in first.uses] == ["scale"]
    assert not first.followed  # `trainer.scaler` is read through another object
    assert second.maybe_none


def test_scaler_rebound_is_not_followed() -> None:
    facts = _facts(
        """
        import torch
        scaler = torch.amp.GradScaler()
        scaler = make_scaler()
        """
    )
    (scaler,) = Precision.of(facts).scalers
    assert not scaler.followed


def test_optimizers_and_the_files_subclasses() -> None:
    facts = _facts(
        """
        import torch
        from torch import optim
        class Warm(optim.SGD):
            pass
        class Warmer(Warm):
            pass
        a = optim.Adam([])
        b = Warmer([])
        c = Lion([])
        """
    )
    built = [
        (code_for(s.node.func), name) for s, name in Optimizers.of(facts).built(FOREACH_OPTIMIZERS)
    ]
    assert built == [("optim.Adam", "torch.optim.Adam"), ("Warmer", "torch.optim.SGD")]


def _precision_of(source: str) -> Precision:
    return Precision.of(_facts(source))


def test_autocast_arguments_are_read_per_api() -> None:
    precision = _precision_of(
        """
        import torch
        from torch.cuda.amp import autocast

        DEVICE = "cuda"
        with torch.autocast(DEVICE, torch.bfloat16):
            pass
        with torch.amp.autocast(device_type="cpu", enabled=False):
            pass
        with autocast(enabled=args.amp, dtype=torch.float16):
            pass
        with torch.autocast(device.type, dtype=ptdtype):
            pass
        """
    )
    read = [(a.device, a.dtype, a.enabled) for a in precision.autocasts]
    assert read == [
        ("cuda", "bfloat16", True),
        ("cpu", "bfloat16", False),
        ("cuda", "float16", None),
        (None, None, True),
    ]


def test_cuda_autocasts_need_cuda_for_a_computed_device() -> None:
    without_cuda = _precision_of(
        """
        import torch
        with torch.autocast(device.type):
            pass
        """
    )
    assert without_cuda.cuda_autocasts() == []
    with_cuda = _precision_of(
        """
        import torch
        x = torch.zeros(1).cuda()
        with torch.autocast(device.type):
            pass
        """
    )
    assert len(with_cuda.cuda_autocasts()) == 1


def test_half_autocasts_leave_out_float32() -> None:
    precision = _precision_of(
        """
        import torch
        with torch.autocast("cuda", dtype=torch.float32):
            pass
        with torch.autocast("cuda"):
            pass
        """
    )
    (half,) = precision.half_cuda_autocasts()
    assert half.dtype == "float16" and not half.dtype_given


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nwith torch.autocast('cuda', enabled=False):\n    pass\n",
        "import torch\nscaler = torch.cuda.amp.GradScaler()\n",
        "import torch\nmodel = model.half()\n",
        "import torch\nx = torch.zeros(1, dtype=torch.bfloat16)\n",
        "import torch\ntorch.set_default_dtype(torch.float64)\n",
        "import torch\ndef f():\n    from apex import amp\n",
        "import torch\nif hparams.fp16_run:\n    pass\n",
        "import torch\nuse_amp = True\n",
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--bf16')\n",
        "from accelerate import Accelerator\n",
    ],
)
def test_signs_of_a_precision_other_than_float32(source: str) -> None:
    assert _precision_of(source).other_than_float32()


def test_a_plain_float32_script() -> None:
    precision = _precision_of(
        """
        import torch
        model = torch.nn.Linear(4, 4).cuda().float()
        example = torch.zeros(1, dtype=torch.float32)
        clamp = args.example
        """
    )
    assert not precision.other_than_float32()
