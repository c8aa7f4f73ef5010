"""The rule table's prefilter: trigger words and requirements are necessary
conditions. A file that misses one is never parsed for the rule, so each spelling a
rule's definition accepts must pass, and library code that only mentions the words
(torch's own sources: `def backward(ctx, grad)`, `re.compile(`) must not."""

from __future__ import annotations

import ast

import pytest

from accel_lint.called import Called, called
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
    ("ACL301", "for p in model.parameters():\n    p.grad.zero_()\n"),
    ("ACL301", "for g in opt.param_groups:\n    for p in g['params']:\n        p.grad.zero_()\n"),
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
    # a model's weight init zeroes biases and reads `.grad` in a hook: no parameter loop
    ("ACL301", "m.bias.data.zero_()\nhook = lambda t: t.grad\n"),
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


# -- the second prefilter: calls, read from CPython's tree --------------------------


def _called(source: str) -> Called:
    return called(ast.parse(source))


def test_called_names_decorators_and_renamed_imports() -> None:
    seen = _called(
        "from torch import compile as tc\n"
        "import torch\n"
        "@torch.jit.script\n"
        "def f(x):\n"
        "    return x\n"
        "loss.backward()\n"
        "fast = tc(model)\n"
        "x = torch.zeros(3).cuda()\n"
        "y = (torch.tensor([1])\n"
        "     .to('cuda'))\n"
    )
    assert {"script", "backward", "tc", "compile", "zeros", "cuda", "to"} <= seen.names
    assert seen.moved == {"zeros", "tensor"}


@pytest.mark.parametrize(
    ("code", "source", "runs"),
    [
        # torch's own sources: the words, in docstrings, definitions and messages
        ("ACL307", "def backward(ctx, g):\n    '''call loss.backward()'''\n", False),
        # ACL307: a loss accumulated in a loop, read by a backward or returned by a
        # function of the file
        ("ACL307", "loss.backward()\n", False),
        (
            "ACL307",
            "for b in loader:\n    loss = f(b)\n    loss.backward()\n    total += loss\n",
            True,
        ),
        (
            "ACL307",
            "for b in loader:\n    loss = f(b)\n    loss.backward()\n    total += loss.item()\n",
            False,
        ),
        ("ACL307", "loss.backward()\ntotal = total + loss\n", False),  # in no loop
        (
            "ACL307",
            "for b in loader:\n    scaler.scale(loss).backward()\n    losses.append(loss / n)\n",
            True,
        ),
        (
            "ACL307",
            "def train_step(b):\n    loss = f(b)\n    loss.backward()\n    return loss\n"
            "for b in loader:\n    loss = train_step(b)\n    total = total + loss\n",
            True,
        ),
        ("ACL206", "msg = 'use torch.compile(model)'\nself.compile(graph)\n", True),
        ("ACL206", "msg = 'use torch.compile(model)'\nre.compile('x')\n", True),
        ("ACL206", "msg = 'use torch.compile(model)'\nfx.compile_fx(graph)\n", False),
        ("ACL203", "y = x.view(3).to('cuda')\n", False),
        ("ACL203", "y = torch.ones(3).to('cuda')\n", True),
        ("ACL203", "from torch import ones as o\ny = o(3).cuda()\n", True),
        ("ACL204", "scripted = torch.jit.script(m)\n", False),  # no training here
        ("ACL204", "@torch.jit.script\ndef f(x): return x\nloss.backward()\n", True),
        ("ACL207", "loss.backward()\n", False),
        ("ACL207", "loss.backward()\noptimizer.step()\n", True),
        # a model file spells a conv and builds no norm: nothing can follow the conv
        ("ACL201", "self.conv = nn.Conv2d(3, 8, 3)\nself.fc = nn.Linear(8, 2)\n", False),
        ("ACL201", "c = nn.Conv2d(3, 8, 3)\nb = nn.BatchNorm2d(8)\n", True),
        # every conv is built with its bias off: nothing is wasted
        ("ACL201", "c = nn.Conv2d(3, 8, 3, bias=False)\nb = nn.BatchNorm2d(8)\n", False),
        ("ACL201", "c = nn.Conv2d(3, 8, 3, bias=True)\nb = nn.BatchNorm2d(8)\n", True),
        ("ACL201", "c = nn.Conv2d(3, 8, 3, bias=b)\nb = nn.BatchNorm2d(8, affine=False)\n", True),
        (
            "ACL201",
            "from torch.nn import Conv2d as C\nc = C(3, 8, 3)\nb = nn.BatchNorm2d(8)\n",
            True,
        ),
        # FullyShardedDataParallel spells the word; only a DataParallel built or
        # subclassed can match
        ("ACL401", "model = FullyShardedDataParallel(model)\n", False),
        ("ACL401", "model = nn.DataParallel(model)\n", True),
        ("ACL401", "class Wrapped(nn.DataParallel):\n    pass\n", True),
        ("ACL401", "DP = nn.DataParallel\nmodel = DP(model)\n", True),
        ("ACL101", "def make(DataLoader):\n    return 1\n", False),
        ("ACL101", "Loader = torch.utils.data.DataLoader\nL2 = Loader\nl = L2(ds)\n", True),
        ("ACL212", "y = torch.zeros(3).cuda()\n", False),
        ("ACL212", "y = torch.zeros(3).half()\n", True),
        ("ACL212", "from torch import arange as ar\ny = ar(3).to(torch.float16)\n", True),
        ("ACL301", "for p in model.parameters():\n    p.grad = None\n", False),
        ("ACL301", "for p in model.parameters():\n    p.grad.zero_()\n", True),
        (
            "ACL301",
            "for g in opt.param_groups:\n    for p in g['params']:\n        p.grad.zero_()\n",
            True,
        ),
        # the parameters are listed, and a bias is zeroed outside any loop over them
        ("ACL301", "n = sum(p.numel() for p in m.parameters())\nm.bias.data.zero_()\n", False),
        ("ACL309", "opt = torch.optim.Adam(model.parameters())\n", True),
        ("ACL309", "class Mine(torch.optim.SGD):\n    pass\nopt = Mine(ps)\n", True),
        ("ACL309", "from torch.optim import Adagrad\nopt = Adagrad(ps)\n", False),
        ("ACL403", "torch.save(model.state_dict(), 'm.pt')\n", False),  # not distributed
        ("ACL403", "dist.init_process_group('nccl')\ntorch.save(sd, 'm.pt')\n", True),
        ("ACL403", "import horovod.torch as hvd\nhvd.init()\ntorch.save(sd, 'm.pt')\n", True),
        ("ACL412", "dist.init_process_group('nccl')\nsd = torch.load('m.pt')\n", True),
        ("ACL412", "dist.init_process_group('nccl')\n", False),
        ("ACL303", "'''see torch.autograd.profile'''\n", False),
        # ACL411: a wrapper built, and its `state_dict()` saved
        ("ACL411", "model = FSDP(model)\ntorch.save(model.state_dict(), 'm.pt')\n", False),
        (
            "ACL411",
            "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\n"
            "torch.save(model.module.state_dict(), 'm.pt')\n",
            True,
        ),
        ("ACL411", "model = nn.DataParallel(model)\ntorch.save(sd, 'm.pt')\n", False),
        # ACL305: a clip between a scaled backward and the scaler's step
        ("ACL305", "loss.backward()\nclip_grad_norm_(ps, 1.0)\nopt.step()\n", False),
        (
            "ACL305",
            "scaler.scale(loss).backward()\ntorch.nn.utils.clip_grad_norm_(ps, 1.0)\n"
            "scaler.step(opt)\n",
            True,
        ),
        # ACL310, ACL318: an accumulation steps an optimizer
        ("ACL310", "loss.backward()\nfor p in m.parameters(): p.data -= lr * p.grad\n", False),
        (
            "ACL318",
            "for i, b in enumerate(loader):\n    loss.backward()\n    if (i + 1) % k == 0:\n"
            "        scaler.step(opt)\n",
            True,
        ),
        (  # the counter test in the function the loop calls
            "ACL310",
            "def train_step(i, b):\n    loss.backward()\n    if (i + 1) % k == 0:\n"
            "        opt.step()\n",
            True,
        ),
        (  # the main guard is no counter test
            "ACL310",
            "if __name__ == '__main__':\n    for b in loader:\n        loss.backward()\n"
            "        opt.step()\n",
            False,
        ),
        # ... under an `if`, or after a counted micro-batch loop in the loop around it
        ("ACL310", "for b in loader:\n    loss.backward()\n    opt.step()\n", False),
        (
            "ACL310",
            "for batch in loader:\n    for part in batch.chunk(4):\n        loss.backward()\n"
            "    opt.step()\n",
            True,
        ),
        (
            "ACL318",
            "r = range\nfor b in loader:\n    for i in tqdm(r(4)):\n        loss.backward()\n"
            "    opt.step()\n",
            True,
        ),
        (
            "ACL318",
            "for epoch in range(n):\n    for i in range(k):\n        loss.backward()\n"
            "        opt.step()\n",
            False,
        ),
        (  # reinforcement learning: the environment steps in the episode's loop
            "ACL310",
            "def finish_episode():\n    loss.backward()\n    opt.step()\n"
            "for episode in count(1):\n    for t in range(100):\n        s, r, d, _ = env.step(a)\n"
            "    finish_episode()\n",
            False,
        ),
        ("ACL303", "torch.autograd.set_detect_anomaly(True)\n", True),
        # ACL311: a function with a loop, named for evaluation or calling `.eval()`
        ("ACL311", "def forward(self, x):\n    for b in self.blocks:\n        x = b(x)\n", False),
        ("ACL311", "def validate(m, loader):\n    for x in loader:\n        m(x)\n", True),
        ("ACL311", "def run(m, loader):\n    m.eval()\n    for x in loader:\n        m(x)\n", True),
        (
            "ACL311",
            "def run(m, loader):\n    m.eval()\n\ndef other(loader):\n    for x in loader:\n"
            "        m(x)\n",
            False,
        ),
        (
            "ACL311",
            "def validate(m, loader):\n    def inner():\n        for x in loader:\n"
            "            m(x)\n",
            False,
        ),
    ],
)
def test_rules_needing_a_call_run_only_where_the_file_makes_it(
    code: str, source: str, runs: bool
) -> None:
    assert BY_CODE[code].may_call(_called(source)) is runs


@pytest.mark.parametrize(
    ("source", "target", "runs"),
    [
        ("optimizer.zero_grad()\n", None, False),  # the latest torch: None by default
        ("optimizer.zero_grad()\n", (2, 1), False),
        ("optimizer.zero_grad()\n", (1, 13), True),  # the default was False then
        ("optimizer.zero_grad(set_to_none=False)\n", None, True),
        ("optimizer.zero_grad(False)\n", None, True),
        ("zg = opt.zero_grad\nzg(False)\n", None, True),
        ("optimizer.zero_grad(*flags)\n", None, False),  # what it passes is unknown
        ("model.train(False)\n", (1, 13), False),
    ],
)
def test_acl302_needs_an_argument_unless_the_target_torch_defaulted_to_zeros(
    source: str, target: tuple[int, int] | None, runs: bool
) -> None:
    assert BY_CODE["ACL302"].may_call(_called(source), target) is runs


@pytest.mark.parametrize(
    ("path", "runs"),
    [
        ("train.py", True),
        ("", True),  # standard input: the rule decides
        ("tests/test_train.py", False),
        ("fx/profiling_tracer.py", False),
        ("tools/benchmark.py", False),
        ("src/conftest.py", False),
    ],
)
def test_acl303_is_never_parsed_for_in_tests_and_checking_files(path: str, runs: bool) -> None:
    data = b"import torch\ntorch.autograd.set_detect_anomaly(True)\n"
    assert BY_CODE["ACL303"].may_match(data, path) is runs


def test_a_file_no_rule_can_match_is_not_parsed_by_libcst(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import libcst as cst

    import accel_lint.parse as parse_module
    from accel_lint.engine import analyze, rules_for
    from accel_lint.source import Source

    parses: list[str] = []
    real = cst.parse_module

    def counting(text: str) -> cst.Module:
        parses.append(text)
        return real(text)

    monkeypatch.setattr(parse_module.cst, "parse_module", counting)
    settings = settings_for(("ACL206", "ACL307"))
    library = (
        "class Fn(Function):\n"
        "    def backward(ctx, grad):\n"
        "        '''Unlike torch.compile(model), this runs eagerly; see loss.backward().'''\n"
        "        return fx.compile_fx(grad)\n"
    )
    rules = rules_for(settings.enabled, library.encode())
    assert {r.code for r in rules} == {"ACL206", "ACL307"}  # the words are there
    analysis = analyze("lib.py", Source(library, "utf-8"), settings, rules)
    assert (analysis.module, analysis.error, analysis.findings, parses) == (None, None, [], [])
    # the fixer does not narrow: what it fixed must parse again
    analyze("lib.py", Source(library, "utf-8"), settings, rules, by_calls=False)
    assert len(parses) == 1
