"""Devices: which device an expression names, followed through the file."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from accel_lint.facts import FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.facts.devices import DeviceKind, Devices
from accel_lint.walk import walk

A, C, U = DeviceKind.ACCELERATOR, DeviceKind.CPU, DeviceKind.UNKNOWN


def _kinds(source: str, *, certain: bool = False) -> list[DeviceKind]:
    """The kind of the device argument of every `.to(...)` call, in source order."""
    module = cst.parse_module(textwrap.dedent(source))
    facts = FileFacts(module)
    walk(module, [FactsCollector(facts), ScopeCloser(facts)])
    facts.finish()
    devices = Devices.of(facts)
    out = []
    for site in facts.method_calls("to"):
        expr = site.node.args[0].value
        out.append(
            devices.certain_kind(expr, site.scope) if certain else devices.kind(expr, site.scope)
        )
    return out


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('x.to("cuda")', [A]),
        ('x.to("cuda:1")', [A]),
        ('x.to(f"cuda:{rank}")', [A]),
        ('x.to("cpu")', [C]),
        ('x.to("meta")', [U]),
        ("x.to(0)", [A]),
        ('import torch\nx.to(torch.device("cuda", 0))', [A]),
        ('import torch\nx.to(torch.device("cpu"))', [C]),
        ("import torch\nx.to(torch.accelerator.current_accelerator())", [A]),
        ("x.to(device)", [U]),  # unbound
        ("x.to(torch.float16)", [U]),
    ],
)
def test_spellings(source: str, expected: list[DeviceKind]) -> None:
    assert _kinds(source) == expected


def test_a_device_chosen_by_a_test_is_an_accelerator() -> None:
    source = """
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        x.to(device)
        other = "cuda" if use_cuda else "cpu"
        x.to(other)
        dev = "cpu"
        if torch.cuda.is_available():
            dev = "cuda"
        x.to(dev)
        chosen = "cuda" if flag else None
        x.to(chosen)
    """
    assert _kinds(source) == [A, A, A, U]


def test_argparse_defaults_and_attribute_assignments() -> None:
    source = """
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--device", default="cuda")
        parser.add_argument("--where", default="cpu")
        parser.add_argument("--free")
        args = parser.parse_args()
        x.to(args.device)
        x.to(args.where)
        x.to(args.free)

        class Trainer:
            def __init__(self, gpu):
                self.device = f"cuda:{gpu}"

            def step(self, x):
                return x.to(self.device)
    """
    assert _kinds(source) == [A, C, U, A]


def test_parameters_follow_the_calls_of_the_file() -> None:
    source = """
        import torch
        def train(x, device):
            return x.to(device)

        def other(x, device):
            return x.to(device)

        train(x, torch.device("cuda"))
        train(x, device="cuda:0")
        other(x, "cpu")
        other(x, pick())
    """
    assert _kinds(source) == [A, U]


def test_the_files_device_stands_in_only_where_nothing_says() -> None:
    source = """
        import torch
        model.cuda()
        def helper(x, device):
            return x.to(device)
        def convert(x, dtype):
            return x.to(dtype)
        y.to(x.device)
    """
    assert _kinds(source) == [A, U, A]
    assert _kinds(source, certain=True) == [U, U, U]
    cpu_only = """
        def helper(x, device):
            return x.to(device)
        y.to(x.device)
    """
    assert _kinds(cpu_only) == [U, U]


def test_local_functions_are_followed_through_their_returns() -> None:
    source = """
        import torch
        def get_device():
            if torch.cuda.is_available():
                return torch.device("cuda")
            return torch.device("cpu")
        x.to(get_device())
    """
    assert _kinds(source) == [A]
