"""`facts.grads.beside_none_branch`: code on one branch of an `if` whose other branch
sets the gradients to None."""

from __future__ import annotations

import textwrap

import libcst as cst

from accel_lint.facts import FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.facts.grads import beside_none_branch
from accel_lint.walk import walk


def _beside(source: str) -> dict[str, bool]:
    """For each `mark(name)` call: is it beside a branch that sets grads to None?"""
    module = cst.parse_module(textwrap.dedent(source))
    facts = FileFacts(module)
    walk(module, [FactsCollector(facts), ScopeCloser(facts)])
    facts.finish()
    out: dict[str, bool] = {}
    for site in facts.calls:
        func = site.node.func
        if isinstance(func, cst.Name) and func.value == "mark":
            arg = site.node.args[0].value
            assert isinstance(arg, cst.Name)
            out[arg.value] = beside_none_branch(facts, site.guards)
    return out


def test_other_branch_sets_grads_to_none() -> None:
    assert _beside(
        """
        def clear(model, opt, free, keep):
            if free:
                for p in model.parameters():
                    p.grad = None
            else:
                mark(else_of_none)
            if keep:
                mark(body_beside_zero_grad)
            elif other:
                opt.zero_grad(set_to_none=True)
            if keep:
                mark(beside_zero_grad_positional)
            else:
                opt.zero_grad(True)
        """
    ) == {
        "else_of_none": True,
        "body_beside_zero_grad": True,
        "beside_zero_grad_positional": True,
    }


def test_no_none_on_the_other_branch() -> None:
    assert _beside(
        """
        def clear(model, opt, flag):
            mark(unguarded)
            if flag:
                mark(no_else)
            if flag:
                mark(else_zeroes_too)
            else:
                opt.zero_grad(set_to_none=False)
            if flag:
                opt.zero_grad()  # the default depends on the torch version
            else:
                mark(beside_plain_zero_grad)
            if flag:
                x.grad = y
            else:
                mark(beside_other_assignment)
        """
    ) == {
        "unguarded": False,
        "no_else": False,
        "else_zeroes_too": False,
        "beside_plain_zero_grad": False,
        "beside_other_assignment": False,
    }
