"""ACL301 and ACL302 stay silent in a file that captures CUDA graphs: a graph replays
into the gradient tensors it captured, so they must stay allocated and be zeroed in
place. Every way of capturing one (resolved through imports), and look-alikes that
do not capture, on the same training step."""

from __future__ import annotations

import pytest

from tests.support import lint, settings_for

STEP = """\
import torch
{imports}
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
{capture}
optimizer.zero_grad(set_to_none=False)
for group in optimizer.param_groups:
    for p in group["params"]:
        p.grad.zero_()
"""

CAPTURES = {
    "CUDAGraph": ("", "graph = torch.cuda.CUDAGraph()"),
    "graph-context": ("", "def capture(g):\n    with torch.cuda.graph(g):\n        pass"),
    "graphs-module": ("from torch.cuda import graphs", "graphs.graph(None)"),
    "make-graphed-callables": (
        "from torch.cuda import make_graphed_callables as graphed",
        "model = graphed(model, (torch.randn(2, 4),))",
    ),
    "mark-step-begin": ("", "torch.compiler.cudagraph_mark_step_begin()"),
    "compile-reduce-overhead": ("", 'step = torch.compile(model, mode="reduce-overhead")'),
    "compile-max-autotune": ("", 'step = torch.compile(model, mode="max-autotune")'),
    "compile-imported-as": (
        "from torch import compile as jit",
        'step = jit(model, mode="reduce-overhead")',
    ),
    "compile-mode-constant": (
        "",
        'MODE = "reduce-overhead"\nstep = torch.compile(model, mode=MODE)',
    ),
    "compile-mode-option-default": (
        "import argparse",
        "parser = argparse.ArgumentParser()\n"
        'parser.add_argument("--mode", default="max-autotune")\n'
        "args = parser.parse_args()\n"
        "step = torch.compile(model, mode=args.mode)",
    ),
    "compile-kwargs-dict": (
        "",
        'opts = {"mode": "max-autotune"}\nstep = torch.compile(model, **opts)',
    ),
    "compile-options": ("", 'step = torch.compile(model, options={"triton.cudagraphs": True})'),
    "compile-options-name": (
        "",
        'opts = {"triton.cudagraphs": True}\nstep = torch.compile(model, options=opts)',
    ),
    "compile-decorator": (
        "",
        '@torch.compile(mode="reduce-overhead")\ndef forward(x):\n    return model(x)',
    ),
    "compile-partial": (
        "import functools",
        'compiler = functools.partial(torch.compile, mode="max-autotune")',
    ),
    "module-compile": ("", 'model.compile(mode="reduce-overhead")'),
}

NOT_CAPTURES = {
    "nothing": ("", ""),
    "compile-default": ("", "step = torch.compile(model)"),
    "compile-mode-default": ("", 'step = torch.compile(model, mode="default")'),
    "compile-mode-none": ("", "step = torch.compile(model, mode=None)"),
    "compile-no-cudagraphs": (
        "",
        'step = torch.compile(model, mode="max-autotune-no-cudagraphs")',
    ),
    # chosen at run time: the default run captures nothing, so the findings stand
    "compile-mode-option-none": (
        "import argparse",
        'parser = argparse.ArgumentParser()\nparser.add_argument("--mode", default=None)\n'
        "args = parser.parse_args()\nstep = torch.compile(model, mode=args.mode)",
    ),
    "compile-mode-unreadable": ("import sys", "step = torch.compile(model, mode=sys.argv[1])"),
    "compile-kwargs-unreadable": ("", "def build(**kw):\n    return torch.compile(model, **kw)"),
    "compile-options-unreadable": (
        "",
        "def build(opts):\n    return torch.compile(model, options=opts)",
    ),
    "compile-options-off": (
        "",
        'step = torch.compile(model, options={"triton.cudagraphs": False})',
    ),
    "compile-options-other": ("", 'step = torch.compile(model, options={"max_autotune": True})'),
    "re-compile": ("import re", 're.compile("reduce-overhead")'),
    "keras-compile": (
        "from tensorflow import keras",
        'net = keras.Sequential()\nnet.compile(optimizer="adam", loss="mse")',
    ),
    "graph-named-locally": ("", "def graph(x):\n    return x\n\n\ngraph(model)"),
    "class-referenced-only": ("", "is_graph = isinstance(model, torch.cuda.CUDAGraph)"),
}

SETTINGS = settings_for(("ACL301", "ACL302"))


@pytest.mark.parametrize("imports, capture", CAPTURES.values(), ids=CAPTURES.keys())
def test_capturing_file_is_not_flagged(imports: str, capture: str) -> None:
    assert lint(STEP.format(imports=imports, capture=capture), SETTINGS) == []


@pytest.mark.parametrize("imports, capture", NOT_CAPTURES.values(), ids=NOT_CAPTURES.keys())
def test_look_alike_is_flagged(imports: str, capture: str) -> None:
    found = lint(STEP.format(imports=imports, capture=capture), SETTINGS)
    assert [code for _, code in found] == ["ACL302", "ACL301"]
