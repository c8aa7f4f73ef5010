"""Unit tests of `facts.autograd`: grad mode through contexts, decorators, statements
and call sites; what backward passes backpropagate; code that needs gradients."""

from __future__ import annotations

import textwrap

import libcst as cst

from accel_lint.facts import CallSite, FileFacts
from accel_lint.facts.autograd import Autograd, names_read
from accel_lint.facts.collector import FactsCollector, ScopeCloser
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


GRAD_MODE = """
import torch
from torch import no_grad as ng
from utils import *

def a():
    with torch.no_grad():
        forward_a()
    forward_b()

@torch.inference_mode()
def b():
    forward_c()

@ng()
def c():
    forward_d()

def d():
    torch.set_grad_enabled(False)
    forward_e()

def e(flag):
    with torch.set_grad_enabled(flag):
        forward_f()
    with torch.set_grad_enabled(True):
        forward_g()
    with torch.inference_mode(False):
        forward_h()

def helper():
    forward_i()

def f():
    with torch.no_grad():
        helper()

def helper2():
    forward_j()

def g():
    with torch.no_grad():
        helper2()
    helper2()

@smart_inference_mode()
def h():
    forward_k()
"""


def test_grad_mode_contexts_decorators_and_callers() -> None:
    facts = _facts(GRAD_MODE)
    autograd = Autograd.of(facts)
    off = {
        name: autograd.may_be_off(_call(facts, name))
        for name in [f"forward_{c}" for c in "abcdefghijk"]
    }
    assert off == {
        "forward_a": True,
        "forward_b": False,
        "forward_c": True,  # decorator
        "forward_d": True,  # `from torch import no_grad as ng`
        "forward_e": True,  # a statement switches it off
        "forward_f": True,  # a flag may be False
        "forward_g": False,
        "forward_h": False,  # inference_mode(False) records
        "forward_i": True,  # every call site of helper() is under no_grad
        "forward_j": False,  # one call site is not
        "forward_k": True,  # a wrapper spelled for it
    }


def test_module_level_switch() -> None:
    facts = _facts(
        """
        import torch
        torch.set_grad_enabled(False)
        def f():
            forward()
        """
    )
    assert Autograd.of(facts).may_be_off(_call(facts, "forward"))


def test_local_wrapper_decorator() -> None:
    facts = _facts(
        """
        import torch
        def evaluating(fn):
            def run(*args):
                with torch.no_grad():
                    return fn(*args)
            return run

        @evaluating
        def f():
            forward()
        """
    )
    assert Autograd.of(facts).may_be_off(_call(facts, "forward"))


def test_backpropagated_expressions() -> None:
    facts = _facts(
        """
        from apex import amp
        def train():
            loss.backward()
            scaler.scale(loss2).backward()
            (loss3 / k).backward()
            accelerator.backward(loss4)
            self.manual_backward(loss5)
            torch.autograd.backward(loss6)
            with amp.scale_loss(loss7, opt) as scaled:
                scaled.backward()
        """
    )
    code = cst.Module([]).code_for_node
    exprs = [code(b.expr) for b in Autograd.of(facts).backwards()]
    assert exprs == ["loss", "loss2", "(loss3 / k)", "loss4", "loss5", "loss6", "loss7"]


def test_needs_grad() -> None:
    facts = _facts(
        """
        import torch
        def step():
            loss.backward()
        def calls_step():
            step()
        def grads():
            torch.autograd.grad(y, x)
        def reads():
            print(p.grad)
        def asks():
            x.requires_grad = True
        def freezes():
            x.requires_grad = False
            sched.step()
        def steps():
            optimizer.step()
        def enables():
            with torch.enable_grad():
                pass
        """
    )
    autograd = Autograd.of(facts)
    needs = {f.name.value: autograd.needs_grad(f) for f, _, _ in facts.function_defs}
    assert needs == {
        "step": True,
        "calls_step": True,
        "grads": True,
        "reads": True,
        "asks": True,
        "freezes": False,
        "steps": True,
        "enables": True,
    }


def test_names_read() -> None:
    assert names_read(cst.parse_expression("loss.mean() / args.k")) == {"loss", "args"}
