"""The walk context the distributed rules (ACL403, ACL404) read, and the reasons
their findings give when they offer no fix."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from accel_lint.facts import CallSite, FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.walk import walk
from tests.support import lint_messages, settings_for


def _sites(source: str) -> dict[str, CallSite]:
    """Call sites of the module by the callee's name (each name called once)."""
    module = cst.parse_module(textwrap.dedent(source))
    facts = FileFacts(module)
    walk(module, [FactsCollector(facts), ScopeCloser(facts)])
    facts.finish()
    sites: dict[str, CallSite] = {}
    for site in facts.calls:
        func = site.node.func
        name = func.value if isinstance(func, cst.Name) else cst.Module([]).code_for_node(func)
        assert name not in sites, f"{name} is called twice"
        sites[name] = site
    return sites


def _tests(site: CallSite) -> list[tuple[str, bool]]:
    return [(cst.Module([]).code_for_node(test), polarity) for test, polarity in site.guards]


CONTEXT = """
    import torch

    for epoch in range(3):
        if rank == 0:
            @decorate(before())
            def save(path=default()):
                inside()
                if path:
                    nested()

            after_def()
        callbacks = [lambda: in_lambda()] if rank == 0 else []
"""


def test_a_def_body_starts_without_the_guards_and_loops_around_it() -> None:
    sites = _sites(CONTEXT)
    assert _tests(sites["inside"]) == []
    assert sites["inside"].loops == ()
    assert _tests(sites["nested"]) == [("path", True)]


def test_decorators_and_defaults_keep_the_context_of_the_def() -> None:
    sites = _sites(CONTEXT)
    for name in ("decorate", "before", "default"):
        assert _tests(sites[name]) == [("rank == 0", True)], name
        assert len(sites[name].loops) == 1, name


def test_the_context_is_restored_after_the_def_and_inside_a_lambda_it_starts_afresh() -> None:
    sites = _sites(CONTEXT)
    assert _tests(sites["after_def"]) == [("rank == 0", True)]
    assert len(sites["after_def"].loops) == 1
    assert sites["in_lambda"].guards == ()
    assert sites["in_lambda"].loops == ()
    assert len(sites["range"].loops) == 1  # the `for` being entered holds its iterable


def _reasons(source: str, code: str) -> list[tuple[int, str]]:
    found = lint_messages(textwrap.dedent(source), settings_for((code,)))
    return [(row, message.partition("(no fix: ")[2].rstrip(")")) for row, _, message in found]


SAMPLERS = """
    import torch
    import torch.distributed as dist
    from engine import evaluate, train_one_epoch
    from torch.utils.data import DataLoader, DistributedSampler, RandomSampler


    def main(args, model, dataset_train, dataset_val):
        dist.init_process_group("gloo")
        sampler_val = DistributedSampler(dataset_val)
        data_loader_val = DataLoader(dataset_val, sampler=sampler_val, num_workers=2)
        if args.distributed:
            sampler_train = DistributedSampler(dataset_train)
        else:
            sampler_train = RandomSampler(dataset_train)
        loader = DataLoader(dataset_train, sampler=sampler_train, num_workers=2)
        for epoch in range(args.epochs):
            train_one_epoch(model, loader)
            evaluate(model, data_loader=data_loader_val)


    def steps(model, optimizer, dataset):
        loader = DataLoader(dataset, sampler=DistributedSampler(dataset), num_workers=2)
        for step in range(1000):
            for x, y in loader:
                torch.nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()
        while True:
            for x, y in loader:
                torch.nn.functional.mse_loss(model(x), y).backward()
"""


def test_acl404_says_why_it_offers_no_fix() -> None:
    assert _reasons(SAMPLERS, "ACL404") == [
        (
            10,
            "it only feeds evaluation, whose result does not depend on the order: pass "
            "`shuffle=False`, or call `set_epoch()` each epoch if a new order is wanted",
        ),
        (
            13,
            "`sampler_train` holds another sampler on some runs; call "
            "`sampler_train.set_epoch(epoch)` where it is distributed",
        ),
        (
            23,
            "`step` may count steps rather than epochs; call `set_epoch()` wherever a new "
            "pass over the loader starts",
        ),
    ]


def test_acl404_has_no_epoch_variable_in_a_while_loop() -> None:
    step_loop = SAMPLERS[SAMPLERS.index("    for step") : SAMPLERS.index("    while True")]
    assert _reasons(SAMPLERS.replace(step_loop, ""), "ACL404")[2] == (
        23,  # the sampler's line, above the loop taken out
        "the loader is read again on each pass of a `while` loop, which has no loop "
        "variable to pass to `set_epoch()`",
    )


@pytest.mark.parametrize(
    "caller",
    [
        "save_on_master(state, f'ckpt-{dist.get_rank()}.pt')",
        "save_on_master(state, f=f'ckpt-{dist.get_rank()}.pt')",
    ],
)
def test_acl403_follows_forwarded_arguments_to_a_per_rank_path(caller: str) -> None:
    source = f"""
        import torch
        import torch.distributed as dist


        def save_on_master(*args, **kwargs):
            torch.save(*args, **kwargs)


        def main(state):
            dist.init_process_group("gloo")
            {caller}
    """
    assert _reasons(source, "ACL403") == []
    shared = source.replace("f'ckpt-{dist.get_rank()}.pt'", "'ckpt.pt'")
    assert [row for row, _ in _reasons(shared, "ACL403")] == [7]
