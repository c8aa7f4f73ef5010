"""`facts.precision`: the autocast regions of a file and the signs that it does not
train in float32 alone (ACL207, ACL208, ACL209)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from accel_lint.facts import FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.facts.precision import Precision
from accel_lint.walk import walk


def _precision(source: str) -> Precision:
    module = cst.parse_module(textwrap.dedent(source))
    facts = FileFacts(module)
    walk(module, [FactsCollector(facts), ScopeCloser(facts)])
    facts.finish()
    return Precision.of(facts)


def test_autocast_arguments_are_read_per_api() -> None:
    precision = _precision(
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
        ("cuda", frozenset({"torch.bfloat16"}), True),
        ("cpu", None, False),
        ("cuda", frozenset({"torch.float16"}), None),
        (None, frozenset(), True),
    ]


def test_cuda_autocasts_need_cuda_for_a_computed_device() -> None:
    without_cuda = _precision(
        """
        import torch
        with torch.autocast(device.type):
            pass
        """
    )
    assert without_cuda.cuda_autocasts() == []
    with_cuda = _precision(
        """
        import torch
        x = torch.zeros(1).cuda()
        with torch.autocast(device.type):
            pass
        """
    )
    assert len(with_cuda.cuda_autocasts()) == 1


def test_half_autocasts_leave_out_float32() -> None:
    precision = _precision(
        """
        import torch
        with torch.autocast("cuda", dtype=torch.float32):
            pass
        with torch.autocast("cuda"):
            pass
        """
    )
    (half,) = precision.half_cuda_autocasts()
    assert half.dtype is None


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
    assert _precision(source).other_than_float32()


def test_a_plain_float32_script() -> None:
    precision = _precision(
        """
        import torch
        model = torch.nn.Linear(4, 4).cuda().float()
        example = torch.zeros(1, dtype=torch.float32)
        clamp = args.example
        """
    )
    assert not precision.other_than_float32()
