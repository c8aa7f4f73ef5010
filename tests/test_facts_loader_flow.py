"""LoaderFlow: which DataLoader calls an expression holds, where loaders are read,
and which parts of a loop's target receive batches."""

from __future__ import annotations

import textwrap

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.facts.loader_flow import LoaderFlow
from accel_lint.walk import walk


def _flow(source: str) -> tuple[FileFacts, LoaderFlow]:
    module = cst.parse_module(textwrap.dedent(source))
    facts = FileFacts(module)
    walk(module, [FactsCollector(facts), ScopeCloser(facts)])
    facts.finish()
    return facts, LoaderFlow.of(facts)


def _line(facts: FileFacts, node: cst.CSTNode) -> str:
    return code_for(node).splitlines()[0]


def _reads(source: str) -> list[tuple[str, list[str]]]:
    """Each read (its first line) with the `name = DataLoader(...)` names it reads."""
    facts, flow = _flow(source)
    names = {}
    for site in flow.loaders:
        for binding in site.scope.bindings.values():
            for b in binding:
                if b.value is site.node:
                    names[site.node] = b.name
    return [
        (_line(facts, read.place), sorted(names.get(c, "?") for c in read.loaders.loaders))
        for read in flow.reads()
    ]


HEADER = """
import torch
from torch.utils.data import DataLoader
from engine import train_one_epoch
"""


def test_reads_through_names_wrappers_and_calls() -> None:
    source = (
        HEADER
        + """
def train(loader):
    for i, (x, y) in enumerate(tqdm(loader)):
        pass

def main(ds):
    train_loader = DataLoader(ds, num_workers=2)
    val_loader = DataLoader(ds, num_workers=2)
    for epoch in range(3):
        train(train_loader)
        train_one_epoch(model, val_loader)
    batches = iter(val_loader)
    print(len(train_loader))
"""
    )
    assert _reads(source) == [
        ("for i, (x, y) in enumerate(tqdm(loader)):", ["train_loader"]),
        ("train_one_epoch(model, val_loader)", ["val_loader"]),
        ("iter(val_loader)", ["val_loader"]),
    ]


def test_loaders_from_helpers_dicts_lists_and_self() -> None:
    source = (
        HEADER
        + """
def build(ds):
    return DataLoader(ds, num_workers=2), DataLoader(ds, num_workers=1)

class Trainer:
    def __init__(self, ds):
        self.loader = DataLoader(ds, num_workers=4)

    def fit(self):
        for batch in self.loader:
            pass

def main(ds):
    train_loader, val_loader = build(ds)
    for x in val_loader:
        pass
    loaders = {phase: DataLoader(ds, num_workers=2) for phase in ["train", "val"]}
    for phase in ["train", "val"]:
        for x in loaders[phase]:
            pass
    for loader in (train_loader, val_loader):
        for x in loader:
            pass
"""
    )
    facts, flow = _flow(source)
    reads = {_line(facts, r.place): r.loaders for r in flow.reads()}
    assert set(reads) == {
        "for batch in self.loader:",
        "for x in val_loader:",
        "for x in loaders[phase]:",
        "for x in loader:",
    }
    assert len(reads["for x in val_loader:"].loaders) == 1
    assert len(reads["for x in loader:"].loaders) == 2
    assert all(o.complete for o in reads.values())


def test_unseen_paths_make_the_answer_incomplete() -> None:
    source = (
        HEADER
        + """
def main(ds, accelerator):
    loader = DataLoader(ds)
    loader = accelerator.prepare(loader)
    for x in loader:
        pass

def run(loader):
    for x in loader:
        pass
"""
    )
    facts, flow = _flow(source)
    loop, handed = flow.reads()  # `prepare` is code of another module handed the loader
    assert _line(facts, handed.place) == "accelerator.prepare(loader)"
    assert _line(facts, loop.place) == "for x in loader:"
    assert loop.loaders.loaders and not loop.loaders.complete


def test_a_loader_from_another_library_is_not_ours() -> None:
    source = """
from mylib import DataLoader
loader = DataLoader(ds)
for x in loader:
    pass
"""
    _, flow = _flow(source)
    assert flow.loaders == [] and flow.reads() == []


def test_batch_targets() -> None:
    source = (
        HEADER
        + """
loader = DataLoader(ds)
for i, (x, y) in enumerate(loader):
    pass
for a, b in zip(loader, other):
    pass
pbar = tqdm(loader)
for batch in pbar:
    pass
"""
    )
    facts, flow = _flow(source)
    got = []
    for site in facts.loop_sites.values():
        assert isinstance(site.node, cst.For)
        pairs = flow.batch_targets(site.node, site.scope)
        got.append([(code_for(t), code_for(s)) for t, s in pairs])
    assert got == [
        [("(x, y)", "loader")],
        [("a", "loader"), ("b", "other")],
        [("batch", "loader")],
    ]
