"""The rule table's prefilter: trigger words and requirements are necessary
conditions. A file that misses one is never parsed for the rule, so each spelling a
rule's definition accepts must pass, and library code that only mentions the words
(torch's own sources: `def backward(ctx, grad)`, `re.compile(`) must not."""

from __future__ import annotations

import pytest

from accel_lint.rules import BY_CODE
from tests.support import lint, settings_for

# (code, source): spellings the rule's definition accepts
PASSES = [
    ("ACL307", "for x in loader:\n    accelerator.backward(loss)\n"),
    ("ACL307", "for x in loader:\n    self.manual_backward(loss)\n"),
    ("ACL307", "from torch.autograd import backward as bw\nbw(loss)\n"),
    ("ACL307", "for x in loader:\n    loss .backward ()\n"),
    ("ACL206", "import torch as th\nfor x in loader:\n    m = th.compile(model)\n"),
    ("ACL206", "from torch import compile as c\nfor x in loader:\n    m = c(model)\n"),
    ("ACL206", "import torch\nfor x in loader:\n    m = torch.compile (model)\n"),
    ("ACL203", "import torch\nx = (torch.zeros(3)  # staging\n     .to('cuda'))\n"),
    ("ACL203", "import torch\nx = torch.zeros(3) \\\n    .cuda()\n"),
    ("ACL311", "def evaluate(model, val_dl):\n    model.eval()\n    for x in val_dl: model(x)\n"),
    ("ACL311", "def validate(model, ds):\n    for x in ds: model(x)\n"),
    ("ACL303", "from torch import autograd\nautograd.set_detect_anomaly(True)\n"),
    ("ACL209", "import torch\nwith torch.autocast('cuda'):\n    torch.nn.Linear(10, 3)\n"),
]

# (code, source): library code that mentions the words but cannot match
FILTERED = [
    (
        "ACL307",
        "class F(torch.autograd.Function):\n    def backward(ctx, grad):\n        return grad\n",
    ),
    ("ACL307", "# call .backward on the loss\n"),
    ("ACL206", "import re\nPATTERN = re.compile('x')\n"),
    ("ACL206", "def _compile(graph):\n    return graph\n"),
    ("ACL206", "import re\nfrom other import compile_fx\ncompile_fx(gm)\n"),
    ("ACL203", "y = x.to(torch.float16)\n"),
    ("ACL311", "def test_add():\n    assert add(1, 2) == 3\n"),
    ("ACL303", "import cProfile\ncProfile.run('main()')  # profile it\n"),
    ("ACL209", "layer = torch.nn.Linear(10, 3)  # no autocast here\n"),
]


@pytest.mark.parametrize(("code", "source"), PASSES)
def test_accepted_spellings_pass_the_prefilter(code: str, source: str) -> None:
    assert BY_CODE[code].may_match(source.encode())


@pytest.mark.parametrize(("code", "source"), FILTERED)
def test_library_mentions_are_not_parsed(code: str, source: str) -> None:
    assert not BY_CODE[code].may_match(source.encode())


def test_a_rule_reached_only_through_a_renamed_import_still_reports() -> None:
    # the prefilter lets it through, and the rule resolves `th.compile` to torch.compile
    text = (
        "import torch as th\n"
        "\n"
        "\n"
        "def train(model, loader, optimizer):\n"
        "    for x, y in loader:\n"
        "        fast = th.compile(model)\n"
        "        th.nn.functional.cross_entropy(fast(x), y).backward()\n"
        "        optimizer.step()\n"
    )
    assert lint(text, settings_for(("ACL206",))) == [(6, "ACL206")]
