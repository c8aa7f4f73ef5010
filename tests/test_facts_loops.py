"""Unit tests of `facts.loops`: which calls run on every training step (machine tests
ignored on request), and gradient accumulation as ACL310 and ACL409 read it."""

from __future__ import annotations

import textwrap

import libcst as cst

from accel_lint.facts import CallSite, FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.facts.loops import Loops, machine_test
from accel_lint.facts.syntax import last_name
from accel_lint.walk import walk


def _facts(source: str) -> FileFacts:
    module = cst.parse_module(textwrap.dedent(source))
    facts = FileFacts(module)
    walk(module, [FactsCollector(facts), ScopeCloser(facts)])
    facts.finish()
    return facts


def _call(facts: FileFacts, name: str) -> CallSite:
    (site,) = [s for s in facts.calls if last_name(s.node.func) == name]
    return site


TRAIN = """
import torch

def step(model, opt, x):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
    empty_a()

for epoch in range(3):
    for i, x in enumerate(loader):
        step(model, opt, x)
        if torch.cuda.is_available():
            empty_b()
        if device.type == "cuda" and not args.cpu:
            empty_c()
        if i % 100 == 0:
            empty_d()
        if torch.cuda.is_available() and i % 10 == 0:
            empty_e()
    for x in val_loader:
        empty_f()
"""


def test_every_step_follows_calls_and_skips_conditions() -> None:
    facts = _facts(TRAIN)
    loops = Loops.of(facts)
    assert loops.every_step(_call(facts, "empty_a")) is not None  # through step()
    assert loops.every_step(_call(facts, "empty_b")) is None  # a condition by default
    assert loops.every_step(_call(facts, "empty_d")) is None
    assert loops.every_step(_call(facts, "empty_f")) is None  # evaluation: no backward


def test_every_step_ignoring_machine_tests() -> None:
    facts = _facts(TRAIN)
    loops = Loops.of(facts)
    every = {
        name: loops.every_step(_call(facts, name), ignoring=machine_test) is not None
        for name in ("empty_a", "empty_b", "empty_c", "empty_d", "empty_e", "empty_f")
    }
    assert every == {
        "empty_a": True,
        "empty_b": True,  # `if torch.cuda.is_available():`
        "empty_c": True,  # `device.type == "cuda" and not args.cpu`
        "empty_d": False,  # periodic
        "empty_e": False,  # a machine test `and` a periodic one
        "empty_f": False,
    }


def test_every_step_through_a_guarded_callee() -> None:
    facts = _facts(
        """
        def helper():
            if args.cuda:
                empty()

        for x in loader:
            loss(x).backward()
            helper()
        """
    )
    loops = Loops.of(facts)
    assert loops.every_step(_call(facts, "empty")) is None
    assert loops.every_step(_call(facts, "empty"), ignoring=machine_test) is not None


def test_machine_test_shapes() -> None:
    def test_of(source: str) -> bool:
        return machine_test((cst.parse_expression(source), True))

    assert test_of("torch.cuda.is_available()")
    assert test_of("use_cuda")
    assert test_of("args.cuda")
    assert test_of("not torch.cuda.is_available()")
    assert test_of("x.device.type != 'cpu'")
    assert not test_of("step % 10 == 0")
    assert not test_of("loss > 1.0")
    assert not test_of("args.cuda or step == 0")


def test_accumulation_modulo_and_inner_loop() -> None:
    facts = _facts(
        """
        for i, (x, y) in enumerate(loader):
            loss = crit(model(x), y)
            loss.backward()
            if (i + 1) % accum == 0:
                opt.step()
                opt.zero_grad()

        while True:
            for micro in range(k):
                crit(model(x), y).backward()
            opt.step()
        """
    )
    found = Loops.of(facts).accumulations()
    assert [(a.kind, cst.Module([]).code_for_node(a.every)) for a in found] == [
        ("modulo", "accum"),
        ("inner-loop", "k"),
    ]


def test_every_step_not_in_except_blocks() -> None:
    facts = _facts(
        """
        def recover():
            empty_b()

        for x in loader:
            try:
                loss(x).backward()
            except RuntimeError:
                empty_a()
                recover()
            finally:
                empty_c()
        """
    )
    loops = Loops.of(facts)
    assert loops.every_step(_call(facts, "empty_a")) is None
    assert loops.every_step(_call(facts, "empty_b")) is None  # its only caller is in one
    assert loops.every_step(_call(facts, "empty_c")) is not None


def test_epoch_loop_around_a_step_loop_is_not_a_step() -> None:
    facts = _facts(
        """
        import torch

        def train(model, opt, loader):
            for x in loader:
                model(x).sum().backward()
                opt.step()
                empty_a()
            empty_b()

        def main(model, opt, loader):
            for epoch in range(3):
                train(model, opt, loader)
                empty_c()
        """
    )
    loops = Loops.of(facts)
    epoch = next(
        s.node for s in loops.all() if s.function is not None and s.function.name.value == "main"
    )
    assert epoch in loops.training_loops() and not loops.is_step_loop(epoch)
    assert loops.every_step(_call(facts, "empty_a")) is not None
    assert loops.every_step(_call(facts, "empty_b")) is None  # once per epoch
    assert loops.every_step(_call(facts, "empty_c")) is None


def test_a_loop_that_trains_every_kth_iteration() -> None:
    facts = _facts(
        """
        def act(env, policy, opt, steps, k, loader):
            for step in range(steps):
                env.step(policy(step))
                if step % k == 0:
                    policy(step).backward()
                    opt.step()
            for i, x in enumerate(loader):
                if i > 100:
                    break
                policy(x).backward()
                if (i + 1) % k == 0:
                    opt.step()
        """
    )
    loops = Loops.of(facts)
    agent, accumulating = loops.training_loops()  # in the order of the source
    assert not loops.trains_every_iteration(agent)
    assert loops.trains_every_iteration(accumulating)  # an early exit is no modulo test
