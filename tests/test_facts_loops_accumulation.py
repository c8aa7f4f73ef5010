"""`Loops.accumulations()` on the shapes real scripts give it: one backward pass per
micro-batch even when an `if args.fp16:` chooses how it runs, early exits at the top of
the loop, and two backward passes that are not accumulation (a GAN's two losses)."""

from __future__ import annotations

import textwrap

import libcst as cst

from accel_lint.facts import FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.facts.loops import Loops, is_optimizer_step
from accel_lint.walk import walk


def _loops(source: str) -> Loops:
    module = cst.parse_module(textwrap.dedent(source))
    facts = FileFacts(module)
    walk(module, [FactsCollector(facts), ScopeCloser(facts)])
    facts.finish()
    return Loops.of(facts)


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def test_a_backward_chosen_by_a_branch_is_one_backward_pass() -> None:
    loops = _loops(
        """
        for step, batch in enumerate(loader):
            loss = model(batch) / args.accum
            if args.fp16:
                with amp.scale_loss(loss, optimizer) as scaled_loss:
                    scaled_loss.backward()
            else:
                loss.backward()
            if (step + 1) % args.accum == 0:
                optimizer.step()
                optimizer.zero_grad()
        """
    )
    (found,) = loops.accumulations()
    assert found.kind == "modulo"
    assert _code(found.every) == "args.accum"
    assert _code(found.backward.node) == "scaled_loss.backward()"
    assert [_code(s.node) for s in loops.backward_sites(found.loop)] == [
        "scaled_loss.backward()",
        "loss.backward()",
    ]


def test_elif_chains_that_cover_every_run_are_one_backward_pass() -> None:
    loops = _loops(
        """
        for i, x in enumerate(loader):
            if mode == "a":
                model(x).sum().backward()
            elif mode == "b":
                (2 * model(x).sum()).backward()
            else:
                (3 * model(x).sum()).backward()
            if (i + 1) % k == 0:
                opt.step()
        """
    )
    assert len(loops.accumulations()) == 1


def test_a_backward_on_some_runs_only_is_not_accumulation() -> None:
    loops = _loops(
        """
        for i, x in enumerate(loader):
            if use_aux:
                model(x).sum().backward()
            if (i + 1) % k == 0:
                opt.step()
        """
    )
    assert loops.accumulations() == []


def test_an_early_exit_at_the_top_of_the_loop_does_not_hide_the_accumulation() -> None:
    loops = _loops(
        """
        for step, batch in enumerate(loader):
            if steps_to_skip > 0:
                steps_to_skip -= 1
                continue
            loss = model(batch)
            loss.backward()
            if (step + 1) % accum == 0:
                optimizer.step()
        """
    )
    (found,) = loops.accumulations()
    assert found.kind == "modulo"


def test_two_backward_passes_per_step_are_not_accumulation() -> None:
    loops = _loops(
        """
        for i, real in enumerate(loader):
            loss_d = discriminator(real).mean()
            loss_d.backward()
            opt_d.step()
            loss_g = -discriminator(generator(z)).mean()
            loss_g.backward()
            if i % n_critic == 0:
                opt_g.step()
        """
    )
    assert loops.accumulations() == []


def test_inner_loop_of_micro_batches_with_branches() -> None:
    loops = _loops(
        """
        for it in range(iters):
            for micro in range(k):
                loss = model(next(batches))
                if scaler is not None:
                    scaler.scale(loss).backward()
                else:
                    loss.backward()
            optimizer.step()
        """
    )
    (found,) = loops.accumulations()
    assert found.kind == "inner-loop"
    assert _code(found.every) == "k"


def test_optimizer_steps_are_not_scheduler_steps() -> None:
    loops = _loops(
        """
        for x in loader:
            model(x).sum().backward()
            optimizer.step()
            lr_scheduler.step()
            scaler.step(optimizer)
        """
    )
    steps = [s for s in loops.facts.calls if is_optimizer_step(s)]
    assert [_code(s.node) for s in steps] == ["optimizer.step()", "scaler.step(optimizer)"]


def test_the_counter_tests_of_the_definition() -> None:
    for test, k in [
        ("(i + 1) % k == 0", "k"),
        ("i % args.k == args.k - 1", "args.k"),
        ("i - last_step >= k", "k"),
        ("k <= i - last_step", "k"),
        ("not (i + 1) % k", "k"),
    ]:
        loops = _loops(
            f"""
            for i, x in enumerate(loader):
                model(x).sum().backward()
                if {test}:
                    opt.step()
            """
        )
        (found,) = loops.accumulations()
        assert (found.kind, _code(found.every)) == ("modulo", k), test
        assert found.test is not None and _code(found.test) == test


def test_a_flag_computed_from_a_counter_test() -> None:
    loops = _loops(
        """
        for i, x in enumerate(loader):
            should_step = (i + 1) % accum == 0 or i == len(loader) - 1
            accumulating = (i + 1) % accum != 0
            model(x).sum().backward()
            if should_step:
                opt.step()
            if not accumulating:
                sched.step()
        """
    )
    (found,) = loops.accumulations()
    assert _code(found.every) == "accum"
    assert found.test is not None and _code(found.test) == "should_step"


def test_a_flag_not_computed_from_a_counter_is_not_a_window() -> None:
    loops = _loops(
        """
        for i, x in enumerate(loader):
            should_step = loss_is_finite(x)
            model(x).sum().backward()
            if should_step:
                opt.step()
        """
    )
    assert loops.accumulations() == []


def test_the_step_in_a_function_the_loop_calls_on_every_iteration() -> None:
    loops = _loops(
        """
        def train_step(i, x):
            opt.zero_grad()
            model(x).sum().backward()
            if (i + 1) % accum == 0:
                opt.step()

        for i, x in enumerate(loader):
            train_step(i, x)
        """
    )
    (found,) = loops.accumulations()
    assert found.via is not None and _code(found.via.node) == "train_step(i, x)"
    assert _code(found.step.node) == "opt.step()"
    assert [_code(s.node) for s in loops.every_iteration(found)] == [
        "train_step(i, x)",
        "opt.zero_grad()",
        "model(x).sum().backward()",
        "model(x).sum()",
        "model(x)",
    ]
    where = loops.step_block(found)
    assert where is not None and _code(where.statement).strip() == "opt.step()"


def test_a_loop_that_also_steps_on_every_iteration_is_not_accumulation() -> None:
    loops = _loops(
        """
        for i, x in enumerate(loader):
            loss = model(x).sum()
            loss.backward()
            opt_d.step()
            if i % n_critic == 0:
                opt_g.step()
        """
    )
    assert loops.accumulations() == []


def test_the_calls_of_every_iteration_leave_the_step_branch_out() -> None:
    loops = _loops(
        """
        for i, x in enumerate(loader):
            opt.zero_grad()
            model(x).sum().backward()
            if (i + 1) % k == 0:
                opt.step()
                log(i)
        """
    )
    (found,) = loops.accumulations()
    assert [_code(s.node) for s in loops.every_iteration(found)] == [
        "opt.zero_grad()",
        "model(x).sum().backward()",
        "model(x).sum()",
        "model(x)",
    ]


def test_a_gan_that_alternates_its_optimizers_is_not_accumulation() -> None:
    loops = _loops(
        """
        for i, (x, z) in enumerate(loader):
            opt_g.zero_grad()
            if i % 2 == 0:
                (-critic(generator(z)).mean()).backward()
                opt_g.step()
            else:
                (critic(generator(z).detach()).mean() - critic(x).mean()).backward()
                opt_c.step()
        """
    )
    assert loops.accumulations() == []
