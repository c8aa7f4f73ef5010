"""`facts.datasets.in_memory`: datasets a DataLoader reads from memory, followed through
names, `Subset` and the file's own functions; anything else is not known to be."""

from __future__ import annotations

import textwrap

import libcst as cst

from accel_lint.facts import FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.facts.datasets import in_memory
from accel_lint.walk import walk

PRELUDE = """
import torch
from torch.utils.data import Subset, TensorDataset
from torchvision import datasets


def synthetic(n):
    x = torch.randn(n, 4)
    return TensorDataset(x, x.sum(1))


def either(n, real):
    if real:
        return datasets.MNIST("data")
    return synthetic(n)


tensors = TensorDataset(torch.randn(8, 4))
rebound = TensorDataset(torch.randn(8, 4))
rebound = datasets.MNIST("data")


def probe(param):
    return param


def identity(param):
    return param
"""


def _verdicts(expressions: list[str]) -> dict[str, bool]:
    source = textwrap.dedent(PRELUDE) + "".join(f"probe({e})\n" for e in expressions)
    module = cst.parse_module(source)
    facts = FileFacts(module)
    walk(module, [FactsCollector(facts), ScopeCloser(facts)])
    facts.finish()
    out: dict[str, bool] = {}
    for site in facts.calls:
        func = site.node.func
        if isinstance(func, cst.Name) and func.value == "probe" and site.function is None:
            arg = site.node.args[0].value
            out[module.code_for_node(arg)] = in_memory(facts, arg, site.scope)
    return out


def test_in_memory_datasets() -> None:
    assert _verdicts(
        [
            "tensors",
            "synthetic(10)",
            "TensorDataset(torch.randn(3, 2))",
            "torch.arange(10)",
            "[1, 2, 3]",
            "((1, 2), (3, 4))",
            "Subset(tensors, range(4))",
        ]
    ) == dict.fromkeys(
        [
            "tensors",
            "synthetic(10)",
            "TensorDataset(torch.randn(3, 2))",
            "torch.arange(10)",
            "[1, 2, 3]",
            "((1, 2), (3, 4))",
            "Subset(tensors, range(4))",
        ],
        True,
    )


def test_not_known_to_be_in_memory() -> None:
    expressions = [
        "rebound",  # bound twice, once to files on disk
        "either(10, True)",  # one return reads files
        'datasets.MNIST("data")',
        "Subset(datasets.MNIST('data'), range(4))",
        "[*tensors]",
        "unknown_name",
        "identity(tensors)",  # returns its parameter
    ]
    assert _verdicts(expressions) == dict.fromkeys(expressions, False)
