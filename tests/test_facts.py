"""Unit tests of the ground and base floors: name resolution (`names`), the one walk
(`walk`), and the facts queries rules ask (`facts`: calls resolving to a name, the
call graph, guards, loops, the training-loop analysis)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from accel_lint.edits import code_for
from accel_lint.facts import CallSite, FileFacts
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.facts.loops import Loops
from accel_lint.names import LOCAL, qualified_names, spelling_for
from accel_lint.torch_api import DATALOADER
from accel_lint.walk import walk

LOADER = "torch.utils.data.DataLoader"


def facts_of(source: str) -> FileFacts:
    module = cst.parse_module(textwrap.dedent(source))
    facts = FileFacts(module)
    walk(module, [FactsCollector(facts), ScopeCloser(facts)])
    facts.finish()
    return facts


def call(facts: FileFacts, text: str, index: int = 0) -> CallSite:
    return [s for s in facts.calls if code_for(s.node) == text][index]


# -- names ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import torch\nx = torch.utils.data.DataLoader(d)", {"torch.utils.data.DataLoader"}),
        (
            "from torch.utils.data import DataLoader as DL\nx = DL(d)",
            {"torch.utils.data.DataLoader"},
        ),
        ("import torch.utils.data as tud\nx = tud.DataLoader(d)", {"torch.utils.data.DataLoader"}),
        ("from torch.utils import data\nx = data.DataLoader(d)", {"torch.utils.data.DataLoader"}),
        ("from mylib import DataLoader\nx = DataLoader(d)", {"mylib.DataLoader"}),
        ("class DataLoader: ...\nx = DataLoader(d)", {LOCAL}),
        ("x = DataLoader(d)", set()),  # unbound: not ours to guess
        ("from torch.utils.data import *\nx = DataLoader(d)", {"torch.utils.data.DataLoader"}),
        (
            "import torch\nDL = torch.utils.data.DataLoader\nx = DL(d)",
            {"torch.utils.data.DataLoader"},
        ),
        (
            "try:\n    import torch\nexcept ImportError:\n    torch = None\n"
            "x = torch.utils.data.DataLoader(d)",
            {"torch.utils.data.DataLoader"},
        ),
    ],
)
def test_qualified_names_follow_imports(source: str, expected: set[str]) -> None:
    facts = facts_of(source)
    site = next(s for s in facts.calls if "(d)" in code_for(s.node))
    assert qualified_names(site.node.func, site.scope) == expected


def test_a_parameter_shadows_an_import_inside_its_function() -> None:
    facts = facts_of(
        """
        from torch.utils.data import DataLoader

        def build(DataLoader):
            return DataLoader(d)

        top = DataLoader(d)
        """
    )
    sites = [s for s in facts.calls if code_for(s.node) == "DataLoader(d)"]
    assert [qualified_names(s.node.func, s.scope) for s in sites] == [
        {LOCAL},
        {"torch.utils.data.DataLoader"},
    ]


def test_spelling_for_reuses_the_files_imports() -> None:
    facts = facts_of("import torch.distributed as dist\nfrom os import path\n")
    assert spelling_for("torch.distributed.get_rank", facts.module_scope) == (
        "dist.get_rank",
        None,
    )
    assert spelling_for("os.cpu_count", facts.module_scope) == ("os.cpu_count", "import os")


# -- walk -------------------------------------------------------------------------------


def test_walk_visits_in_source_order_with_field_hooks() -> None:
    seen: list[str] = []

    class Recorder:
        def visit_Call(self, node: cst.Call) -> None:
            seen.append("call " + code_for(node.func))

        def visit_If_body(self, node: cst.If) -> None:
            seen.append("if-body")

        def leave_If_body(self, node: cst.If) -> None:
            seen.append("end-if-body")

        def visit_If_orelse(self, node: cst.If) -> None:
            seen.append("if-orelse")

    module = cst.parse_module("a()\nif b():\n    c()\nelse:\n    d()\ne()\n")
    walk(module, [Recorder()])
    assert seen == [
        "call a",
        "call b",
        "if-body",
        "call c",
        "end-if-body",
        "if-orelse",
        "call d",
        "call e",
    ]


def test_walk_survives_deep_nesting() -> None:
    module = cst.parse_module("x = " + "(" * 400 + "1" + ")" * 400 + "\n")
    count = 0

    class Counter:
        def visit_Integer(self, node: cst.Integer) -> None:
            nonlocal count
            count += 1

    walk(module, [Counter()])  # iterative: no RecursionError
    assert count == 1


# -- facts queries ------------------------------------------------------------------------


def test_calls_resolving_to_and_guards_and_withs() -> None:
    facts = facts_of(
        """
        import torch
        from torch.utils.data import DataLoader

        def main(rank):
            if rank == 0:
                with torch.no_grad():
                    a = DataLoader(x)
            b = DataLoader(y)
        """
    )
    sites = facts.calls_resolving_to(DATALOADER)
    assert [code_for(s.node) for s in sites] == ["DataLoader(x)", "DataLoader(y)"]
    first, second = sites
    assert [code_for(test) for test, _ in first.guards] == ["rank == 0"]
    assert [code_for(w.items[0].item) for w in first.withs] == ["torch.no_grad()"]
    assert second.guards == () and second.withs == ()
    assert facts.calls_resolving_to(DATALOADER) is sites  # asked twice, built once


def test_early_exit_guards_the_rest_of_the_block() -> None:
    facts = facts_of(
        """
        def save(rank):
            if rank != 0:
                return
            write()
        """
    )
    assert [(code_for(t), positive) for t, positive in call(facts, "write()").guards] == [
        ("rank != 0", False)
    ]


def test_call_graph_finds_functions_and_methods_of_the_file() -> None:
    facts = facts_of(
        """
        def helper(x):
            return x

        class Trainer:
            def step(self):
                return helper(1)

            def run(self):
                self.step()

        Trainer().run()
        """
    )
    graph = CallGraph.of(facts)
    assert graph is CallGraph.of(facts)
    defs = {f.name.value: f for f, _, _ in facts.function_defs}
    assert [code_for(s.node) for s in graph.calls_to(defs["helper"])] == ["helper(1)"]
    assert [code_for(s.node) for s in graph.calls_to(defs["step"])] == ["self.step()"]
    site = call(facts, "self.step()")
    assert graph.local_callee(site.node, site.scope) == (defs["step"], 1)


TRAINING = """
import torch

def train_step(model, batch, opt):
    loss = model(batch).sum()
    loss.backward()
    torch.cuda.empty_cache()
    return loss

def evaluate(model, loader):
    for batch in loader:
        model(batch)

def main(model, loader, opt, args):
    for epoch in range(args.epochs):
        for i, batch in enumerate(loader):
            loss = model(batch).sum() / args.accum
            loss.backward()
            if (i + 1) % args.accum == 0:
                opt.step()
                opt.zero_grad()
            if i % 100 == 0:
                print(loss.item())
        evaluate(model, loader)
    for step in range(10):
        for micro in range(4):
            train_step(model, None, opt)
        opt.step()
"""


def test_epoch_and_training_loops() -> None:
    facts = facts_of(TRAINING)
    loops = Loops.of(facts)
    iters = [code_for(loop.iter) for loop in loops.epoch_loops() if isinstance(loop, cst.For)]
    assert "range(args.epochs)" in iters
    assert "loader" not in iters  # evaluation's loop over data is not an epoch loop
    training = [code_for(loop.iter) for loop in loops.training_loops()]  # type: ignore[union-attr]
    assert training == ["enumerate(loader)", "range(4)"]
    assert [f.name.value for f in loops.step_functions()] == ["train_step"]


def test_every_step_excludes_periodic_and_evaluation_calls() -> None:
    facts = facts_of(TRAINING)
    loops = Loops.of(facts)
    assert loops.every_step(call(facts, "loss.backward()", 1)) is not None  # main's
    assert loops.every_step(call(facts, "torch.cuda.empty_cache()")) is not None  # via callee
    assert loops.every_step(call(facts, "loss.item()")) is None  # under `if i % 100 == 0`
    assert loops.every_step(call(facts, "evaluate(model, loader)")) is None  # per epoch


def test_gradient_accumulation_shapes() -> None:
    facts = facts_of(TRAINING)
    found = {(a.kind, code_for(a.every)) for a in Loops.of(facts).accumulations()}
    assert found == {("modulo", "args.accum"), ("inner-loop", "4")}


def test_two_backward_passes_stepping_every_iteration_are_not_accumulation() -> None:
    facts = facts_of(
        """
        for real, fake in loader:
            d_loss(real, fake).backward()
            opt_d.step()
            g_loss(fake).backward()
            opt_g.step()
        """
    )
    assert Loops.of(facts).accumulations() == []
